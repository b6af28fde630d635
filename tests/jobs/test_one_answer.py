"""One answer per spec (SPEC J24, J25, Q5): the form's prediction, its availability panel,
/cluster/ and admission agree on whether a spec can start, for random small inventories,
specs, pools and placement choices.

On an empty cluster "can it start now" and "can it ever start" are the same question, so
each example asks all four faces and checks them against each other: the form says
"can never start" exactly when admission leaves the job queued, the panel and /cluster/
say it starts now exactly when admission starts it.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from jobs.admission import prediction
from jobs.admission.db import run_pass
from jobs.models import Job, Phase
from resources.models import (
    AcceleratorModel,
    Allocation,
    DriverVersion,
    Node,
    NodeSpec,
    ResourcePool,
)
from tests.jobs.factories import JobFactory
from tests.resources.factories import (
    AcceleratorModelFactory,
    DriverVersionFactory,
    NodeFactory,
    NodeSpecFactory,
    ResourcePoolFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)

# Pool 0 is open to the project (vision), pool 1 is not.
POOLS = (None, None, 0, 1)

nodes_st = st.lists(
    st.fixed_dictionaries(
        {
            "cpu": st.sampled_from((4000, 8000)),
            "memory": st.sampled_from((8192, 32768)),
            "boards": st.integers(0, 4),
            "slices": st.sampled_from((1, 2)),
            "model": st.integers(0, 1),
            "driver": st.integers(0, 1),
            "pool": st.sampled_from(POOLS),
        }
    ),
    min_size=1,
    max_size=4,
)
spec_st = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from((1000, 4000, 8000)),
        "memory": st.sampled_from((2048, 16384, 32768)),
        "boards": st.sampled_from(("0", "0", "0.5", "1", "2", "4")),
        "model": st.integers(0, 1),
    }
)
choice_st = st.fixed_dictionaries(
    {
        "place": st.sampled_from(("shared", "pool", "names", "driver")),
        "names": st.sets(st.integers(0, 3), min_size=1, max_size=2),
        "driver": st.integers(0, 1),
        "nodes": st.integers(1, 3),
    }
)


def build(nodes, spec, choice, vision):
    models = [AcceleratorModelFactory(name=f"M{i}") for i in range(2)]
    drivers = [DriverVersionFactory(version=f"5{i}0") for i in range(2)]
    pools = [ResourcePoolFactory(name=f"pool-{i}") for i in range(2)]
    pools[0].projects.add(vision)
    made = []
    for i, n in enumerate(nodes):
        boards = n["boards"]
        made.append(
            NodeFactory(
                name=f"n{i}",
                cpu_millicores=n["cpu"],
                memory_mib=n["memory"],
                board_count=boards,
                slices_per_board=n["slices"] if boards else 1,
                accelerator_model=models[n["model"]] if boards else None,
                driver_version=drivers[n["driver"]] if boards else None,
                pool=None if n["pool"] is None else pools[n["pool"]],
            )
        )
    boards = Decimal(spec["boards"])
    wanted = NodeSpecFactory(
        name="the-spec",
        cpu_millicores=spec["cpu"],
        memory_mib=spec["memory"],
        boards=boards,
        accelerator_model=models[spec["model"]] if boards else None,
    )
    # The placement the form lets alice choose (SPEC J10–J12): her project's pool, nodes she
    # may use (names exclude a pool and a driver), a driver for a spec with boards.
    rules = {"pool": None, "node_names": [], "driver": None}
    usable = [node for node in made if node.pool is None or node.pool == pools[0]]
    if choice["place"] == "pool":
        rules["pool"] = pools[0]
    elif choice["place"] == "names" and usable:
        rules["node_names"] = [usable[i % len(usable)] for i in sorted(choice["names"])]
    elif choice["place"] == "driver" and boards:
        rules["driver"] = drivers[choice["driver"]]
    return wanted, rules


def form_data(spec, rules, count):
    data = {
        "name": "probe",
        "mode": "pytorch" if count > 1 else "single",
        "specs": [spec.pk],
        "node_count": str(count),
        "duration_hours": "24",
        "priority": "0",
    }
    if rules["pool"]:
        data["pool"] = rules["pool"].pk
    if rules["node_names"]:
        data["node_names"] = [node.name for node in rules["node_names"]]
    if rules["driver"]:
        data["driver_version"] = rules["driver"].pk
    return data


ANSWER = re.compile(r'data-place="([^"]+)"\s+data-state="(\w+)"\s+data-now="(\d+)"')


def answers(html: str) -> dict[str, tuple[str, int]]:
    """place -> (state, replicas that fit now) of the one spec's answers on a page."""
    return {place: (state, int(now)) for place, state, now in ANSWER.findall(html)}


def clean_up():
    Allocation.objects.all().delete()
    Job.objects.all().delete()
    NodeSpec.objects.all().delete()
    Node.objects.all().delete()
    ResourcePool.objects.all().delete()
    DriverVersion.objects.all().delete()
    AcceleratorModel.objects.all().delete()
    prediction.forget_schedule()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(nodes=nodes_st, spec=spec_st, choice=choice_st)
def test_form_panel_cluster_and_admission_agree(client, alice, vision, nodes, spec, choice):
    client.force_login(alice)
    try:
        wanted, rules = build(nodes, spec, choice, vision)
        count = choice["nodes"]
        data = form_data(wanted, rules, count)

        said = client.post("/jobs/new/predict/", data).content.decode()
        form_never = 'data-state="never"' in said
        form_now = 'data-state="now"' in said
        panel_html = client.post("/jobs/new/availability/", {**data, "availability": "1"})
        panel_html = panel_html.content.decode()
        panel = answers(panel_html)
        submitted = re.findall(r'data-testid="submitted-now"\s+data-state="(\w+)"', panel_html)
        ((panel_state, _),) = panel.values()
        cluster = answers(client.get(f"/cluster/?spec={wanted.pk}").content.decode())

        job = JobFactory(
            owner=alice,
            project=vision,
            specs=[wanted],
            mode=data["mode"],
            nodes_asked=count,
            pool=rules["pool"],
            node_names=[node.name for node in rules["node_names"]],
            driver_version=rules["driver"],
        )
        run_pass()
        admitted = Job.objects.get(pk=job.pk).phase != Phase.QUEUED
        event(f"{choice['place']}: {'admitted' if admitted else 'never'}")

        assert form_never == (not admitted), said
        assert form_now == admitted, said
        assert panel_state == ("now" if admitted else "never"), panel
        # The panel's "submitted now" line is the prediction's, for the spec alone.
        assert submitted == (["now"] if admitted else []), panel_html
        if not rules["node_names"] and not rules["driver"]:
            # /cluster/ answers one node of the spec in each place alice's jobs may run.
            place = rules["pool"].name if rules["pool"] else "shared"
            state, fit = cluster[place]
            assert (state != "never" and fit >= count) == admitted, cluster
            assert "pool-1" not in cluster  # a pool her project may not use
    finally:
        clean_up()
