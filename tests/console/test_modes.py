"""The one list of modes and their rules (console.modes) and what is derived from it."""

from console.modes import MODES, RULES, Mode, modes_needing_mpi, only_node_count, rules_of
from jobs.launch import MODES as LAUNCH_MODES
from jobs.launch import LaunchRequest
from resources.inventory.runtimes import MPI


def test_every_mode_has_its_rules_and_the_launch_knows_every_mode():
    assert MODES == tuple(Mode.values) == tuple(RULES)
    assert LAUNCH_MODES == MODES


def test_the_single_node_rule_is_the_same_for_the_form_and_the_launch():
    for mode in MODES:
        only = only_node_count(mode)
        for nodes in (1, 2):
            allowed = only in (None, nodes)
            try:
                LaunchRequest(job_name="j", mode=mode, command="x", cpu_millicores=1,
                              memory_mib=1, port=5000, node_count=nodes)  # fmt: skip
            except ValueError:
                assert not allowed, (mode, nodes)
            else:
                assert allowed, (mode, nodes)


def test_an_unknown_mode_has_no_special_rule_and_mpi_is_what_needs_mpi():
    assert rules_of("") == rules_of("nonsense")
    assert not rules_of("").single_node and not rules_of("").parameter_servers
    assert modes_needing_mpi() == ("mpi",) == MPI.modes
