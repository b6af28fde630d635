"""Demo catalog: a few datasets, annotations, algorithms, models and volumes (idempotent).

Called by ``resources.demo.seed``. Every folder a job would mount is created under the storage
root with a README, so that a demo job can mount it straight away.
"""

from __future__ import annotations

from collections.abc import Callable

README = (
    "Demo {kind} “{label}” of the training console.\n"
    "Its owner and the people it is shared with mount this folder in their jobs.\n"
)

# The demo algorithms, one per distributed mode: each runs in seconds on CPU, resumes from
# its checkpoints in /workspace/outputs and writes TensorBoard scalars there
# (resources/samples). Their launch is the algorithm's suggestion, which the job form offers.
RESNET = "A tiny ResNet on made-up CIFAR-shaped images (PyTorch)."
DDP = "PyTorch DistributedDataParallel on CPU, for every user."
TENSORFLOW = (
    "TensorFlow multi-worker training from TF_CONFIG: AllReduce without parameter servers, "
    "asynchronous parameter-server training with them."
)
DEEPSPEED = "DeepSpeed on CPU, started by the deepspeed launcher with the job's hostfile."
MPI = (
    "Gradients averaged with MPI Allreduce (mpi4py), as Horovod does; Horovod itself is not "
    "installed. The console adds mpirun."
)
TRAIN = "python /workspace/algorithm/train.py"
# algorithm -> image, mode, node count, command
LAUNCHES = {
    "resnet-train": ("pytorch-2", "single", 1, f"{TRAIN} --epochs 2"),
    "ddp-sample": ("pytorch-2", "pytorch", 2, f"{TRAIN} --epochs 3"),
    "tf-sample": ("tensorflow-2", "tensorflow", 2, f"{TRAIN} --steps 20"),
    "deepspeed-sample": (
        "deepspeed", "deepspeed", 2,
        'bash -c \'deepspeed --hostfile "$MLP_MPI_HOSTFILE" --master_addr "$MLP_WORKER_0_HOST" '
        "--no_ssh_check /workspace/algorithm/train.py --steps 20'",
    ),
    "mpi-sample": ("pytorch-2", "mpi", 2, f"{TRAIN} --steps 20"),
}  # fmt: skip

# kind, owner, name, project, storage path, others' access, versions, other fields
ITEMS = [
    ("dataset", "alice", "cifar10", "vision", "users/alice/datasets/cifar10", "read_only",
     ["v1", "v2"], {"description": "60,000 32x32 colour images in 10 classes."}),
    ("dataset", "bob", "imagenet-mini", "vision", "users/bob/datasets/imagenet-mini", "read_only",
     ["v1"], {"description": "A 100-class sample of ImageNet."}),
    ("annotation dataset", "alice", "cifar10-labels", "vision",
     "users/alice/annotations/cifar10-labels", "read_only", ["v1"],
     {"description": "Class labels of cifar10."}),
    ("algorithm", "alice", "resnet-train", "vision", "users/alice/algorithms/resnet-train",
     "read_only", [], {"description": RESNET}),
    ("algorithm", "admin", "ddp-sample", None, "algorithms/ddp-sample", "read_only", [],
     {"description": DDP}),
    ("algorithm", "admin", "tf-sample", None, "algorithms/tf-sample", "read_only", [],
     {"description": TENSORFLOW}),
    ("algorithm", "admin", "deepspeed-sample", None, "algorithms/deepspeed-sample", "read_only",
     [], {"description": DEEPSPEED}),
    ("algorithm", "admin", "mpi-sample", None, "algorithms/mpi-sample", "read_only", [],
     {"description": MPI}),
    ("model", "admin", "resnet50", None, "models/pretrained/resnet50", "read_only", ["v1"],
     {"kind": "pretrained", "description": "ResNet-50 pretrained on ImageNet."}),
    ("model", "alice", "cifar-resnet", "vision", "users/alice/models/cifar-resnet", "read_only",
     ["v1"], {"kind": "private", "description": "ResNet-18 trained on cifar10 v2."}),
    ("volume", "alice", "scratch", "vision", "users/alice/volumes/scratch", "none", [],
     {"size_gib": 20, "description": "alice's scratch space: caches and checkpoints."}),
    ("volume", "bob", "team-share", "vision", "users/bob/volumes/team-share", "read_write", [],
     {"size_gib": 100, "description": "Shared by the Vision team: everyone may write here."}),
]  # fmt: skip
FAVOURITES = [("alice", "dataset", "imagenet-mini", "bob")]  # who, kind, name, owner
# Algorithms whose folder gets a program shipped in resources/samples/ (the demo jobs run it).
PROGRAMS = [
    (("algorithm", "alice", "resnet-train"), "RESNET_TRAIN"),
    (("algorithm", "admin", "ddp-sample"), "DDP_SAMPLE"),
    (("algorithm", "admin", "tf-sample"), "TF_SAMPLE"),
    (("algorithm", "admin", "deepspeed-sample"), "DEEPSPEED_SAMPLE"),
    (("algorithm", "admin", "mpi-sample"), "MPI_SAMPLE"),
]


def _models() -> dict:
    from resources.models import (
        Algorithm,
        AnnotationSet,
        AnnotationVersion,
        Dataset,
        DatasetVersion,
        ModelVersion,
        TrainedModel,
        Volume,
    )

    # kind: (item model, version model, the version's key to its item)
    return {
        "dataset": (Dataset, DatasetVersion, "dataset"),
        "annotation dataset": (AnnotationSet, AnnotationVersion, "annotation_set"),
        "algorithm": (Algorithm, None, ""),
        "model": (TrainedModel, ModelVersion, "model"),
        "volume": (Volume, None, ""),
    }


def _write_folders(folders: list[tuple[str, str]], log: Callable[[str], object]) -> None:
    from resources.catalog.mounts import storage_source

    for path, text in folders:
        try:
            folder = storage_source(path)
            folder.mkdir(parents=True, exist_ok=True)
            readme = folder / "README.txt"
            if not readme.exists():  # someone may have edited it since: leave it
                readme.write_text(text, encoding="utf-8")
        except OSError as error:
            # The rows are what matters; a read-only storage root must not stop the seed.
            log(f"Demo catalog: could not prepare {path} under the storage root ({error})")
            return


def _suggest_launch(algorithm) -> None:
    """The demo algorithm's launch, unless it suggests something already: an owner's
    change stays, and a database seeded before suggestions existed gets them."""
    from resources.models import Image

    if algorithm.has_suggestion:
        return
    image, mode, nodes, command = LAUNCHES[algorithm.name]
    algorithm.suggested_image = Image.objects.filter(name=image).first()
    algorithm.suggested_mode, algorithm.suggested_nodes = mode, nodes
    algorithm.suggested_command = command
    algorithm.save(update_fields=list(algorithm.SUGGESTION_FIELDS))


def _copy_programs(items: dict, log: Callable[[str], object]) -> None:
    from resources import samples
    from resources.catalog.mounts import storage_source

    for key, program in PROGRAMS:
        path = items[key].path
        try:
            samples.copy_program(getattr(samples, program), storage_source(path))
        except OSError as error:
            log(f"Demo catalog: could not copy the sample program into {path} ({error})")


def seed(log: Callable[[str], object], users: dict, projects: dict) -> None:
    models = _models()
    items = {}
    folders: list[tuple[str, str]] = []
    for kind, owner, name, project, path, access, versions, fields in ITEMS:
        model, version_model, parent = models[kind]
        item, _created = model.objects.get_or_create(
            owner=users[owner],
            name=name,
            defaults={
                "project": projects[project] if project else None,
                "path": path,
                "others_access": access,
                **fields,
            },
        )
        items[kind, owner, name] = item
        if kind == "algorithm" and name in LAUNCHES:
            _suggest_launch(item)
        if version_model is None:
            folders.append((item.path, README.format(kind=kind, label=name)))
        for version_name in versions:
            version, _created = version_model.objects.get_or_create(
                **{parent: item}, name=version_name, defaults={"path": f"{path}/{version_name}"}
            )
            label = f"{name} {version_name}"
            folders.append((version.path, README.format(kind=kind, label=label)))
    for who, kind, name, owner in FAVOURITES:
        items[kind, owner, name].favourited_by.add(users[who])
    _write_folders(folders, log)
    _copy_programs(items, log)
    log(f"Demo catalog: {len(ITEMS)} items, {len(folders)} folders to mount")
