"""Demo inventory and catalog (the second part of ``manage.py seed_demo``)."""

from __future__ import annotations

from decimal import Decimal
from importlib.util import find_spec

SPECS = [
    # name, cores, GiB, boards, description
    ("cpu-small", 1, 2, 0, "For data preparation and small CPU jobs"),
    ("cpu-large", 2, 4, 0, "Parameter servers and CPU training"),
    ("gpu-half", 1, 4, Decimal("0.5"), "Half a board: notebooks and small experiments"),
    ("gpu-1", 2, 8, 1, "One board"),
    ("gpu-2", 4, 16, 2, "Two boards"),
    ("gpu-4", 8, 32, 4, "A whole demo node"),
]

IMAGES = [
    ("pytorch-2", "console.local/pytorch:2-cpu", ["training", "development"], ["GPU", "CPU"]),
    ("tensorflow-2", "console.local/tensorflow:2", ["training"], ["GPU", "CPU"]),
    ("deepspeed", "console.local/deepspeed:0.15", ["training"], ["GPU"]),
    ("notebook", "console.local/notebook:latest", ["development"], ["GPU", "CPU"]),
]


def seed(log, users: dict, projects: dict, **_seeded) -> dict:
    from resources.backends.local.backend import LocalBackend
    from resources.inventory import runtime_images, runtimes
    from resources.inventory.sync import sync
    from resources.models import AcceleratorModel, Image, Node, NodeSpec, ResourcePool

    report = sync("local", LocalBackend().inventory())
    log(f"Local nodes: {report}")
    pool, _ = ResourcePool.objects.get_or_create(
        name="vision-reserved", defaults={"description": "Reserved for project Vision"}
    )
    pool.projects.add(projects["vision"])
    # Two nodes: a checkpoint-resume job there moves to the other after a fault.
    Node.objects.filter(name__in=["local-c", "local-f"], pool__isnull=True).update(pool=pool)
    model = AcceleratorModel.objects.filter(name="Demo-GPU").first()
    for name, cores, gib, boards, description in SPECS:
        NodeSpec.objects.get_or_create(
            name=name,
            defaults={
                "cpu_millicores": cores * 1000,
                "memory_mib": gib * 1024,
                "boards": boards,
                "accelerator_model": model if boards else None,
                "description": description,
            },
        )
    if model is not None:
        seed_quotas(log, projects, model)
    for name, reference, scopes, kinds in IMAGES:
        Image.objects.get_or_create(
            name=name,
            defaults={"reference": reference, "scopes": scopes, "board_kinds": kinds},
        )
    # The local backend runs each demo image's jobs with the runtime `make_runtime` made
    # (it runs before this seed in `make run`); an admin's own choice is kept.
    for definition in runtimes.RUNTIMES:
        for name in runtime_images.attach(definition):
            log(f"Demo image {name}: local runtime {runtimes.default_folder(definition)}")
    fit_prechecks(log, users.get("admin"))
    if find_spec("resources.catalog.demo"):
        from resources.catalog import demo as catalog_demo

        catalog_demo.seed(log, users, projects)
    return {}


# Department, then its projects: Demo-GPU boards on every node (the demo has 20) guaranteed
# (SPEC G1); the guarantees fit the department's, which fits the cluster. No maximum: the
# demo's own jobs (a 16-board sweep among them) would wait for it, and a newcomer's first
# job with them; an admin sets one on the Quotas page.
QUOTAS = (("research", 16, None), ("vision", 10, None), ("speech", 6, None))


def seed_quotas(log, projects: dict, model) -> None:
    """The demo's department and quotas, made once: an admin's changes are kept."""
    from console.models import Department, Project
    from resources.models import Quota

    research, created = Department.objects.get_or_create(
        slug="research", defaults={"name": "Research", "description": "Vision and Speech"}
    )
    if not created:
        return
    Project.objects.filter(pk__in=[p.pk for p in projects.values()]).update(department=research)
    for slug, guaranteed, maximum in QUOTAS:
        holder = {"department": research} if slug == "research" else {"project": projects[slug]}
        Quota.objects.get_or_create(
            **holder, accelerator_model=model, pool=None,
            defaults={"guaranteed": guaranteed, "maximum": maximum},
        )  # fmt: skip
    log("Demo quotas: department Research (Vision, Speech) on Demo-GPU boards")


def fit_prechecks(log, admin) -> None:
    """The seed's disk thresholds (32 GB free on root and cache, 1 GB of /dev/shm) are meant
    for real nodes; the demo's nodes are this machine, which may have less. Lower the site's
    thresholds to half of what is free here, so the demo's jobs pass their prechecks; an
    admin's own values are kept when they fit."""
    from console import limits
    from resources.inventory import probes

    free = probes.facts_of_this_machine().free_gb or {}
    current = limits.current()
    changes = {}
    for disk in ("root", "shm", "cache"):
        name = f"precheck_{disk}_gb"
        have = free.get(disk)
        if have is not None and getattr(current, name) >= have:
            changes[name] = int(have // 2)
    if changes:
        limits.save(changes, admin)
        log(f"Precheck thresholds lowered to fit this machine: {changes}")
