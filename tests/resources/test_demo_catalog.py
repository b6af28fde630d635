"""The demo catalog: what it holds, its folders, and that seeding twice changes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from console.models import Project
from console.sharing import Access
from console.validation.command import check_command
from resources import samples
from resources.catalog import demo, mounts
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
from tests.resources.factories import ImageFactory

pytestmark = pytest.mark.django_db

MODELS = [
    Algorithm,
    AnnotationSet,
    AnnotationVersion,
    Dataset,
    DatasetVersion,
    ModelVersion,
    TrainedModel,
    Volume,
]


@pytest.fixture
def seeded(settings, tmp_path, admin, lead, alice, bob, charlie, vision, speech):
    settings.STORAGE_ROOT = tmp_path / "storage"
    users = {"admin": admin, "lead": lead, "alice": alice, "bob": bob, "charlie": charlie}
    logged: list[str] = []
    demo.seed(logged.append, users, {"vision": vision, "speech": speech})
    return logged


def test_what_alice_finds(seeded, alice, bob, admin, vision):
    cifar = Dataset.objects.get(owner=alice, name="cifar10")
    assert cifar.project == vision
    assert sorted(cifar.versions.values_list("name", flat=True)) == ["v1", "v2"]
    imagenet = Dataset.objects.get(owner=bob, name="imagenet-mini")
    assert imagenet.others_access == Access.READ_ONLY
    assert list(Dataset.objects.favourites_of(alice)) == [imagenet]
    assert AnnotationSet.objects.get(owner=alice, name="cifar10-labels").versions.count() == 1
    ddp = Algorithm.objects.get(name="ddp-sample")
    assert (ddp.owner, ddp.project, ddp.path) == (admin, None, "algorithms/ddp-sample")
    assert Algorithm.objects.get(name="resnet-train").owner == alice
    resnet50 = TrainedModel.objects.get(name="resnet50")
    assert (resnet50.project, resnet50.kind) == (None, TrainedModel.Kind.PRETRAINED)
    assert list(resnet50.versions.values_list("name", flat=True)) == ["v1"]
    assert TrainedModel.objects.get(name="cifar-resnet").owner == alice
    assert Volume.objects.get(name="scratch").owner == alice
    share = Volume.objects.get(name="team-share")
    assert (share.owner, share.project, share.others_access) == (bob, vision, Access.READ_WRITE)
    assert seeded == ["Demo catalog: 12 items, 13 folders to mount"]


def test_every_mount_has_a_folder_with_a_readme(seeded, alice, settings):
    things = [
        *DatasetVersion.objects.select_related("dataset"),
        *AnnotationVersion.objects.select_related("annotation_set"),
        *ModelVersion.objects.select_related("model"),
        *Algorithm.objects.all(),
        *Volume.objects.all(),
    ]
    assert len(things) == 13
    for thing in things:
        mount = mounts.mount_for(thing, alice)
        readme = settings.STORAGE_ROOT / mount.source / "README.txt"
        assert readme.is_file(), mount
        assert "Demo " in readme.read_text()


def test_alice_mounts_them_where_spec_w_says(seeded, alice):
    def target(version):
        return mounts.mount_for(version, alice).target

    assert target(DatasetVersion.objects.get(dataset__name="cifar10", name="v2")) == (
        "/workspace/dataset/private/cifar10"
    )
    assert target(DatasetVersion.objects.get(dataset__name="imagenet-mini")) == (
        "/workspace/dataset/favorite/imagenet-mini/v1"
    )
    assert target(ModelVersion.objects.get(model__name="resnet50")) == (
        "/workspace/model/pretrained/resnet50"
    )
    assert not mounts.mount_for(Volume.objects.get(name="team-share"), alice).read_only


def test_unwritable_storage_is_logged_not_fatal(
    settings, tmp_path, admin, lead, alice, bob, charlie, vision, speech
):
    settings.STORAGE_ROOT = tmp_path / "file"
    settings.STORAGE_ROOT.write_text("not a folder")
    users = {"admin": admin, "lead": lead, "alice": alice, "bob": bob, "charlie": charlie}
    logged: list[str] = []
    demo.seed(logged.append, users, {"vision": vision, "speech": speech})
    assert "could not prepare" in logged[0]
    assert Dataset.objects.count() == 2


def test_seeding_again_changes_nothing(seeded, settings, admin, lead, alice, bob, charlie):
    readme = settings.STORAGE_ROOT / "users/alice/datasets/cifar10/v1/README.txt"
    readme.write_text("edited by alice")
    before = {model: model.objects.count() for model in MODELS}
    users = {"admin": admin, "lead": lead, "alice": alice, "bob": bob, "charlie": charlie}
    projects = {
        "vision": alice.memberships.get().project,
        "speech": charlie.memberships.get().project,
    }
    demo.seed(lambda line: None, users, projects)
    assert {model: model.objects.count() for model in MODELS} == before
    assert Dataset.objects.get(name="imagenet-mini").favourited_by.count() == 1
    assert readme.read_text() == "edited by alice"


def test_the_ddp_sample_algorithm_holds_the_sample_program(seeded, settings, admin):
    folder = settings.STORAGE_ROOT / Algorithm.objects.get(name="ddp-sample").path
    shipped = samples.TRAIN_SCRIPT.read_text()
    assert (folder / "train.py").read_text() == shipped
    assert not (folder / "__init__.py").exists()
    # Seeding again keeps what the owner changed.
    (folder / "train.py").write_text("# mine\n")
    users = {u.username: u for u in get_user_model().objects.all()}
    demo.seed(lambda line: None, users, {p.slug: p for p in Project.objects.all()})
    assert (folder / "train.py").read_text() == "# mine\n"


LAUNCHES = {
    "resnet-train": ("pytorch-2", "single", 1),
    "ddp-sample": ("pytorch-2", "pytorch", 2),
    "tf-sample": ("tensorflow-2", "tensorflow", 2),
    "deepspeed-sample": ("deepspeed", "deepspeed", 2),
    "mpi-sample": ("pytorch-2", "mpi", 2),
}


@pytest.fixture
def images(db):
    return {name: ImageFactory(name=name) for name in ("pytorch-2", "tensorflow-2", "deepspeed")}


def test_each_demo_algorithm_suggests_its_launch(images, seeded):
    for name, (image, mode, nodes) in LAUNCHES.items():
        algorithm = Algorithm.objects.get(name=name)
        assert (algorithm.suggested_image, algorithm.suggested_mode, algorithm.suggested_nodes) == (
            images[image],
            mode,
            nodes,
        ), name
        assert "/workspace/algorithm/train.py" in algorithm.suggested_command
        algorithm.full_clean()  # what the catalog form would accept
        assert check_command(algorithm.suggested_command) is None, name  # and the job form
        # The structured fields carry the launch; the description only says what it is.
        assert "command" not in algorithm.description
    assert (
        "deepspeed --hostfile" in Algorithm.objects.get(name="deepspeed-sample").suggested_command
    )


def test_seeding_again_fills_missing_suggestions_and_keeps_an_owners(images, seeded):
    # A database seeded before algorithms had suggestions, and an owner's change since.
    Algorithm.objects.filter(name="tf-sample").update(
        suggested_image=None, suggested_mode="", suggested_nodes=None, suggested_command=""
    )
    Algorithm.objects.filter(name="ddp-sample").update(
        suggested_nodes=4, suggested_command="python /workspace/algorithm/train.py --epochs 9"
    )
    users = {u.username: u for u in get_user_model().objects.all()}
    demo.seed(lambda line: None, users, {p.slug: p for p in Project.objects.all()})
    tf = Algorithm.objects.get(name="tf-sample")
    assert (tf.suggested_image, tf.suggested_mode, tf.suggested_nodes) == (
        images["tensorflow-2"],
        "tensorflow",
        2,
    )
    assert tf.suggested_command == "python /workspace/algorithm/train.py --steps 20"
    ddp = Algorithm.objects.get(name="ddp-sample")
    assert (ddp.suggested_nodes, ddp.suggested_command) == (
        4,
        "python /workspace/algorithm/train.py --epochs 9",
    )
