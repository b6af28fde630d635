"""The database side of scheduling: passes, the lock, allocations, Q6, and the real worker."""

import threading
import time
from datetime import timedelta
from decimal import Decimal

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from jobs.admission.admit import fail_overdue_resubmissions
from jobs.admission.db import LOCK_KEY, run_pass
from jobs.models import Job, JobEvent, Phase, Status
from jobs.tasks import admit
from resources.models import Allocation
from tests.helpers import wait_until
from tests.jobs.factories import JobFactory
from tests.resources.factories import AcceleratorModelFactory, NodeFactory, NodeSpecFactory


@pytest.fixture
def a100(db):
    return AcceleratorModelFactory(name="A100")


@pytest.fixture
def gpu_nodes(a100):
    return [NodeFactory(name=f"g{i}", board_count=8, accelerator_model=a100) for i in range(2)]


def spec(a100, boards):
    return NodeSpecFactory(
        name=f"a100x{boards}-{NodeSpecFactory._meta.model.objects.count()}",
        boards=Decimal(boards),
        accelerator_model=a100,
        cpu_millicores=1000,
        memory_mib=1024,
    )


@pytest.mark.django_db(transaction=True)
def test_a_pass_admits_what_fits_and_explains_what_waits(alice, vision, a100, gpu_nodes):
    small = JobFactory(
        owner=alice,
        project=vision,
        name="small",
        nodes_asked=2,
        mode="pytorch",
        specs=[spec(a100, 4)],
    )
    big = JobFactory(
        owner=alice,
        project=vision,
        name="big",
        nodes_asked=2,
        mode="pytorch",
        specs=[spec(a100, 8)],
    )
    result = run_pass()
    assert result.ran and result.admitted == [small.pk]
    small.refresh_from_db()
    big.refresh_from_db()
    assert (small.phase, small.status) == (Phase.ADMITTED, Status.RUNNING)
    held = Allocation.objects.live().filter(holder_id=small.pk)
    assert held.count() == 2 and all(len(a.slots) == 4 for a in held)
    assert len({a.node_id for a in held}) == 1
    assert "Admitted on" in small.events.last().message
    assert big.phase == Phase.QUEUED and big.queue_position == 1
    assert big.latest_start is not None
    # small was packed on one node, leaving the other whole: big gets one of its two.
    assert big.wait_reason == "needs 2 nodes at once; only 1 can take it now"
    assert big.blockers == [small.pk]
    # A second pass changes nothing: no double allocation.
    assert run_pass().admitted == []
    assert Allocation.objects.live().count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_concurrent_pass_is_a_no_op(alice, vision):
    JobFactory(owner=alice, project=vision)
    settings = connection.settings_dict
    with psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"] or None,
        password=settings["PASSWORD"] or None,
        host=settings["HOST"],
        port=settings["PORT"] or None,
        autocommit=True,
    ) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        assert run_pass().ran is False
        other.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
    assert run_pass().ran is True


@pytest.mark.django_db(transaction=True)
def test_parallel_and_duplicate_passes_never_overbook(alice, vision, a100):
    """4 passes at once plus duplicates over 2,000 gang jobs: no node over its capacity,
    no slot given twice, no partial gang."""
    nodes = [
        NodeFactory(
            name=f"n{i:02d}",
            board_count=8,
            accelerator_model=a100,
            cpu_millicores=64000,
            memory_mib=65536,
        )
        for i in range(40)
    ]
    specs = [spec(a100, boards) for boards in (1, 2, 4, 8)]
    jobs = [
        Job(
            name=f"j{i}",
            owner=alice,
            project=vision,
            image=None,
            command="python t.py",
            output_path="o",
            duration_hours=1 + i % 24,
            nodes_asked=1 + i % 4,
            mode="pytorch",
        )
        for i in range(2000)
    ]
    image = JobFactory(owner=alice, project=vision, name="template").image
    for job in jobs:
        job.image = image
    Job.objects.bulk_create(jobs)
    from jobs.models import JobSpecChoice

    JobSpecChoice.objects.bulk_create(
        JobSpecChoice(job=job, spec=specs[job.pk % 4], order=0) for job in jobs
    )
    errors = []

    def worker():
        from django.db import connection as thread_connection

        try:
            for _ in range(3):
                run_pass()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            thread_connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    live = list(
        Allocation.objects.live().values_list(
            "node_id", "holder_id", "slots", "cpu_millicores", "memory_mib"
        )
    )
    assert live, "something was admitted"
    by_node = {}
    for node_id, _holder, slots, cpu, memory in live:
        used = by_node.setdefault(node_id, {"slots": [], "cpu": 0, "memory": 0})
        used["slots"] += slots
        used["cpu"] += cpu
        used["memory"] += memory
    for node in nodes:
        used = by_node.get(node.pk, {"slots": [], "cpu": 0, "memory": 0})
        assert len(used["slots"]) == len(set(used["slots"])), f"slot given twice on {node}"
        assert all(0 <= slot < 8 for slot in used["slots"])
        assert used["cpu"] <= node.cpu_millicores and used["memory"] <= node.memory_mib
    admitted = Job.objects.filter(phase=Phase.ADMITTED)
    for job in admitted:
        count = sum(1 for _, holder, *rest in live if holder == job.pk)
        assert count == job.nodes_granted, f"partial gang for {job}"
    assert Job.objects.filter(phase=Phase.QUEUED).exclude(standing__position=None).exists()


@pytest.mark.django_db(transaction=True)
def test_overdue_resubmission_ends_as_error(alice, vision):
    old = JobFactory(
        owner=alice,
        project=vision,
        resubmitted=True,
        resubmitted_at=timezone.now() - timedelta(minutes=31),
    )
    # The timeout counts from the resubmission, not from the first submit.
    fresh = JobFactory(
        owner=alice,
        project=vision,
        resubmitted=True,
        submitted_at=timezone.now() - timedelta(days=1),
        resubmitted_at=timezone.now(),
    )
    plain = JobFactory(owner=alice, project=vision, submitted_at=timezone.now() - timedelta(days=1))
    assert fail_overdue_resubmissions() == [old.pk]
    old.refresh_from_db()
    assert old.status == Status.ERROR
    assert (
        "waited more than 30 minutes" in old.events.filter(kind=JobEvent.Kind.ERROR).get().message
    )
    assert Job.objects.get(pk=fresh.pk).status == Status.QUEUED
    assert Job.objects.get(pk=plain.pk).status == Status.QUEUED


@pytest.mark.usefixtures("local_runs")
def test_submitting_through_the_page_runs_the_job_on_the_real_worker(
    celery_worker, client, alice, vision, a100, gpu_nodes
):
    """Submit -> admission pass -> launch -> running -> succeeded, all on the real worker;
    duplicate deliveries of the admission task change nothing."""
    from jobs.tasks import sync_runs
    from resources.catalog.mounts import storage_source
    from tests.resources.catalog_factories import AlgorithmFactory
    from tests.resources.factories import ImageFactory

    algorithm = AlgorithmFactory(owner=alice, project=vision)
    source = storage_source(algorithm.path)
    source.mkdir(parents=True)
    (source / "t.py").write_text("import time\ntime.sleep(3)\nprint('trained')\n")
    image = ImageFactory(board_kinds=["GPU"])
    client.force_login(alice)
    response = client.post(
        "/jobs/new/",
        {
            "name": "via-page",
            "others_access": "none",
            "job_type": "regular",
            "priority": "0",
            "algorithm": algorithm.pk,
            "command": "python3 /workspace/algorithm/t.py",
            "output_path": "",
            "mode": "tensorflow",
            "specs": [spec(a100, 4).pk],
            "node_count": "2",
            "ps_count": "0",
            "image": image.pk,
            "graceful_shutdown_seconds": "30",
            "duration_hours": "24",
            "subtask_count": "0",
            "dataset_count": "0",
        },
    )
    assert response.status_code == 302
    job = Job.objects.get(name="via-page")
    assert job.prediction.starts_now
    wait_until(lambda: Job.objects.get(pk=job.pk).phase == Phase.RUNNING, timeout=30)
    assert Allocation.objects.live().filter(holder_id=job.pk).count() == 2
    # Duplicate deliveries of the task admit nothing twice and launch nothing twice.
    admit.delay()
    admit.delay()
    time.sleep(1)
    assert Allocation.objects.live().filter(holder_id=job.pk).count() == 2
    assert job.attempts.count() == 1

    def finished():
        sync_runs.delay()  # what beat does every few seconds
        return Job.objects.get(pk=job.pk).phase == Phase.SUCCEEDED

    wait_until(finished, timeout=30, interval=0.5)
    assert not Allocation.objects.live().filter(holder_id=job.pk).exists()
