"""Shared job fixtures: a small inventory and catalog around the named actors."""

from decimal import Decimal

import pytest

from console.sharing import Access
from jobs.scheduling import core
from resources.models import Image
from tests.resources.catalog_factories import (
    AlgorithmFactory,
    DatasetFactory,
    DatasetVersionFactory,
)
from tests.resources.factories import (
    AcceleratorModelFactory,
    DriverVersionFactory,
    ImageFactory,
    NodeFactory,
    NodeSpecFactory,
    ResourcePoolFactory,
)


@pytest.fixture
def inventory(db, vision):
    a100 = AcceleratorModelFactory(name="A100")
    pool = ResourcePoolFactory(name="vision-pool")
    pool.projects.add(vision)
    driver = DriverVersionFactory(kind="GPU", version="535")
    # Somewhere for the form's jobs to run, so none is refused as never fitting.
    NodeFactory(name="cpu-node")
    NodeFactory(name="gpu-node", board_count=8, accelerator_model=a100, driver_version=driver)
    NodeFactory(name="pool-node", board_count=8, accelerator_model=a100, pool=pool)
    return {
        "cpu": NodeSpecFactory(name="cpu-4", cpu_millicores=4000, memory_mib=8192),
        "gpu": NodeSpecFactory(name="a100x1", boards=Decimal(1), accelerator_model=a100),
        "image": ImageFactory(name="pytorch", board_kinds=["GPU", "CPU"]),
        "gpu_image": ImageFactory(name="cuda-only", board_kinds=["GPU"]),
        "dev_image": ImageFactory(name="notebook", scopes=[Image.Scope.DEVELOPMENT]),
        "driver": driver,
        "pool": pool,
        "a100": a100,
    }


@pytest.fixture
def catalog(alice, bob, vision):
    mine = AlgorithmFactory(name="resnet", owner=alice, project=vision)
    shared_ro = DatasetFactory(
        name="imagenet",
        owner=bob,
        project=vision,
        others_access=Access.READ_ONLY,
        favourited_by=[alice],
    )
    own_data = DatasetFactory(name="cifar", owner=alice, project=vision)
    return {
        "algorithm": mine,
        "bob_dataset": DatasetVersionFactory(dataset=shared_ro, name="v1"),
        "my_dataset": DatasetVersionFactory(dataset=own_data, name="v1"),
    }


@pytest.fixture
def job_post(inventory, catalog):
    """A valid POST of the job form; tests override what they break."""

    def build(**overrides):
        data = {
            "name": "train-1",
            "others_access": "none",
            "job_type": "regular",
            "priority": "0",
            "algorithm": catalog["algorithm"].pk,
            "algorithm_read_only": "on",
            "command": "python /workspace/algorithm/train.py",
            "output_path": "",
            "mode": "single",
            "specs": [inventory["cpu"].pk],
            "node_count": "1",
            "ps_count": "0",
            "image": inventory["image"].pk,
            "graceful_shutdown_seconds": "30",
            "duration_hours": "24",
            "subtask_count": "0",
            "dataset_count": "0",
        }
        for key, value in overrides.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        return data

    return build


@pytest.fixture
def searches(monkeypatch):
    """The jobs each pass searched for, in order."""
    seen: list[int] = []
    best = core.Schedule._best

    def counted(self, job, profile, horizon):
        seen.append(job.id)
        return best(self, job, profile, horizon)

    monkeypatch.setattr(core.Schedule, "_best", counted)
    return seen
