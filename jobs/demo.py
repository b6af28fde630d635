"""Demo jobs (the last part of ``manage.py seed_demo``): a few of alice's, in several states."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

# The jobs run the demo algorithm "ddp-sample": resources/samples/ddp_sample/train.py, copied
# into its folder by the demo catalog. --sleep makes a step last long enough to watch.
TRAIN = "python /workspace/algorithm/train.py"
ALGORITHM = "ddp-sample"

DEMO_JOBS = [
    # name, status/phase, spec, mode, nodes, command, hours ago
    ("resnet-baseline", "succeeded", "gpu-1", "single", 1, f"{TRAIN} --epochs 3 --sleep 0.5", 30),
    ("resnet-ddp", "running", "gpu-2", "pytorch", 2, f"{TRAIN} --epochs 100 --sleep 0.5", 0),
    ("bad-lr", "error", "gpu-1", "single", 1, f"{TRAIN} --lr 10 --sleep 0.5", 20),
    # The seed's own example size (4 nodes x 4 boards): it waits for resnet-ddp's boards.
    ("sweep-large", "queued", "gpu-4", "pytorch", 4, f"{TRAIN} --epochs 3 --sleep 0.5", 1),
]  # fmt: skip


def seed(log, users: dict, projects: dict, **_seeded) -> dict:
    from jobs import permissions
    from jobs.admission.db import ledger
    from jobs.lifecycle import record
    from jobs.models import Job, JobSpecChoice
    from resources.catalog.storage import personal_folder
    from resources.models import Algorithm, Allocation, Image, Node, NodeSpec

    alice, vision = users["alice"], projects["vision"]
    image = Image.objects.get(name="pytorch-2")
    algorithm = Algorithm.objects.filter(name=ALGORITHM).first()
    now = timezone.now()
    for name, status, spec_name, mode, nodes, command, hours_ago in DEMO_JOBS:
        if Job.objects.filter(owner=alice, name=name).exists():
            continue
        spec = NodeSpec.objects.get(name=spec_name)
        created = now - timedelta(hours=hours_ago)
        # The "running" one is really run: it is seeded as admitted on its nodes, and the
        # worker launches it (jobs.execution) as it would any admitted job.
        phase = "admitted" if status == "running" else status
        ended = status in {"succeeded", "error"}
        job = Job.objects.create(
            name=name, owner=alice, project=vision, others_access="read_only", mode=mode,
            nodes_asked=nodes, nodes_granted=None if status == "queued" else nodes,
            image=image, algorithm=algorithm, command=command,
            output_path=f"{personal_folder(alice)}/outputs/{name}", duration_hours=24,
            status=status, phase=phase,
            created_at=created, submitted_at=created,
            admitted_at=None if status == "queued" else created + timedelta(minutes=ended * 2),
            spec=spec if status != "queued" else None,
            started_at=created + timedelta(minutes=2) if ended else None,
            finished_at=created + timedelta(hours=1) if ended else None,
            reason="exit code 1 on worker 0" if status == "error" else "",
        )  # fmt: skip
        JobSpecChoice.objects.create(job=job, spec=spec, order=0)
        if status == "running":
            # It holds two boards on each of two nodes, so bigger jobs have to wait for it.
            for replica, name_of_node in enumerate(["local-a", "local-b"][:nodes]):
                node = Node.objects.get(name=name_of_node)
                Allocation.objects.create(
                    node=node,
                    holder_id=job.pk,
                    label=name,
                    replica=f"worker-{replica}",
                    cpu_millicores=spec.cpu_millicores,
                    memory_mib=spec.memory_mib,
                    slots=[0, 1],
                    **ledger((alice.pk, vision.pk), node.pool_id, node.slices_per_board, [0, 1]),
                )
        permissions.grant(job)
        record(job, "Demo job.")
    log(f"Demo jobs: {', '.join(name for name, *_ in DEMO_JOBS)}")
    return {}
