"""/cluster/ with 1,000 nodes, 20 specs and 5,000 running replicas."""

from __future__ import annotations

import random
from decimal import Decimal

from tests.bench.harness import bench_database, p50_p95, timings

NODES = 1000
SPECS = 20
REPLICAS = 5000


def populate() -> None:
    from django.contrib.auth.models import User

    from console.models import Membership, Project
    from resources.models import AcceleratorModel, Allocation, Node, NodeSpec, ResourcePool

    rng = random.Random(7)
    user = User.objects.create_user("alice", password="x")
    project = Project.objects.create(name="Vision", slug="vision")
    Membership.objects.create(project=project, user=user)
    models = [
        AcceleratorModel.objects.create(name=name, kind=kind, memory_gib=80)
        for name, kind in [("A100", "GPU"), ("H100", "GPU"), ("MLU370", "MLU")]
    ]
    pools = [ResourcePool.objects.create(name=f"pool-{i}") for i in range(5)]
    pools[0].projects.add(project)
    nodes = Node.objects.bulk_create(
        Node(
            name=f"node-{i:04d}",
            cpu_millicores=128000,
            memory_mib=1024 * 1024,
            accelerator_model=models[i % 3],
            board_count=8,
            slices_per_board=2 if i % 10 == 0 else 1,
            os_image="Ubuntu 22.04",
            kernel="5.15.0",
            pool=pools[i % 5] if i % 4 == 0 else None,
        )
        for i in range(NODES)
    )
    specs = []
    for i in range(SPECS):
        boards = [Decimal("0.5"), 1, 2, 4, 8][i % 5]
        specs.append(
            NodeSpec(
                name=f"spec-{i:02d}",
                cpu_millicores=4000 * (i % 4 + 1),
                memory_mib=32768 * (i % 3 + 1),
                boards=boards,
                accelerator_model=models[i % 3],
            )
        )
    NodeSpec.objects.bulk_create(specs)
    allocations = []
    free = {node.pk: list(range(node.board_count * node.slices_per_board)) for node in nodes}
    while len(allocations) < REPLICAS:
        node = rng.choice(nodes)
        slots = free[node.pk]
        if not slots:
            continue
        taken = [slots.pop(0)]
        allocations.append(
            Allocation(
                node=node, holder_id=len(allocations) // 4, label=f"job-{len(allocations) // 4}",
                cpu_millicores=8000, memory_mib=65536, slots=taken,
            )
        )  # fmt: skip
    Allocation.objects.bulk_create(allocations)


def cluster_page():
    with bench_database():
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        populate()
        from django.contrib.auth.models import User

        client = Client()
        client.force_login(User.objects.get(username="alice"))
        spec_ids = "&".join(f"spec={i}" for i in range(1, 4))
        results = []
        for label, url in [
            ("/cluster/ (all specs)", "/cluster/"),
            ("/cluster/ (3 chosen specs)", f"/cluster/?{spec_ids}"),
        ]:
            samples = timings(lambda url=url: client.get(url), runs=30)
            with CaptureQueriesContext(connection) as queries:
                client.get(url)
            results.append(
                (f"{label}, {NODES} nodes × {SPECS} specs, {REPLICAS} replicas",
                 f"{p50_p95(samples)}, {len(queries)} queries")
            )  # fmt: skip
        return results
