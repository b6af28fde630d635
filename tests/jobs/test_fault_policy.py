"""The pure rules of fault recovery (SPEC F3, F4, F5; seeds 003, 004), every combination."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from jobs.faults.policy import ISOLATING, Action, Cause, Options, classify, decide

FAULTS = [c for c in Cause if c not in (Cause.CODE, Cause.SCALE_UP, Cause.RECLAIM)]

options = st.builds(
    Options,
    resume=st.booleans(),
    max_resumes=st.integers(0, 5),
    resumes_used=st.integers(0, 6),
    restart=st.booleans(),
    max_restarts=st.integers(0, 5),
    restarts_used=st.integers(0, 6),
)


@given(options, st.sampled_from(list(Cause)))
def test_counts_are_never_exceeded_and_only_grow_by_one(opts, cause):
    decision = decide(opts, cause)
    if decision.action == Action.RESUME:
        assert opts.resume and decision.used == opts.resumes_used + 1 <= opts.max_resumes
    elif decision.action == Action.RESTART:
        assert not opts.resume and opts.restart
        assert decision.used == opts.restarts_used + 1 <= opts.max_restarts
    elif decision.action == Action.SCALE:
        assert cause == Cause.SCALE_UP and decision.used == opts.resumes_used
    elif decision.action == Action.RECLAIM:
        assert cause == Cause.RECLAIM
        assert decision.used == (opts.resumes_used if opts.resume else
                                 opts.restarts_used if opts.restart else 0)  # fmt: skip
    else:
        assert decision.action == Action.ERROR


@given(options)
def test_the_jobs_own_failure_on_healthy_hardware_always_ends_as_error(opts):
    """Seed 004, scenario 4: whatever its options, nothing is isolated and nothing counted."""
    decision = decide(opts, Cause.CODE)
    assert decision.action == Action.ERROR and not decision.isolate and decision.why == "code"


@given(options, st.sampled_from(FAULTS))
def test_a_fault_is_recovered_exactly_while_counts_remain(opts, cause):
    decision = decide(opts, cause)
    if opts.resume:
        recovered = opts.resumes_used < opts.max_resumes
        assert (decision.action == Action.RESUME) == recovered
    elif opts.restart:
        recovered = opts.restarts_used < opts.max_restarts
        assert (decision.action == Action.RESTART) == recovered
    else:
        recovered = False
        assert decision.why == "off"
    if not recovered:
        assert decision.action == Action.ERROR
    assert decision.isolate == (cause in ISOLATING)


def test_which_causes_isolate_the_nodes():
    """The nodes are to blame for a failed precheck, an inspection's finding, a lost node
    and slow hardware; not for an exit code, an injected process fault or a hang."""
    assert {Cause.PRECHECK, Cause.HARDWARE, Cause.NODE_LOST, Cause.PERFORMANCE} == ISOLATING


def test_every_combination_of_classification_inputs():
    codes = {101, 129}
    for code, lost, hardware, process in itertools.product(
        [None, 0, 1, 101, 129, 137], [False, True], [False, True], [False, True]
    ):
        cause = classify(
            exit_code=code, fault_codes=codes, node_lost=lost, hardware=hardware, process=process
        )
        if hardware:
            expected = Cause.HARDWARE
        elif lost:
            expected = Cause.NODE_LOST
        elif process:
            expected = Cause.PROCESS
        elif code in codes:
            expected = Cause.EXIT_CODE
        else:
            expected = Cause.CODE
        assert cause == expected, (code, lost, hardware, process)


def test_a_scale_up_uses_no_count_and_isolates_nothing():
    decision = decide(Options(resume=True, max_resumes=1, resumes_used=1), Cause.SCALE_UP)
    assert decision.action == Action.SCALE and decision.used == 1 and not decision.isolate


@given(options)
def test_a_reclaim_always_requeues_uses_no_count_and_isolates_nothing(opts):
    """SPEC G2: not a fault of the job's. With checkpoint resume it continues from its
    checkpoint, else it starts again, even with no recovery asked or every one used."""
    decision = decide(opts, Cause.RECLAIM)
    assert decision.action == Action.RECLAIM and not decision.isolate
    assert decision.why == ("resume" if opts.resume else "restart")
