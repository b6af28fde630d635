import io

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command

from console.models import Membership, Project, Role

pytestmark = pytest.mark.django_db


def counts():
    return (
        get_user_model().objects.count(),
        Project.objects.count(),
        Membership.objects.count(),
    )


def test_seed_is_idempotent_and_matches_the_story(settings, rf):
    settings.DEMO_MODE = True
    call_command("seed_demo", stdout=io.StringIO())
    first = counts()
    call_command("seed_demo", stdout=io.StringIO())
    assert counts() == first
    User = get_user_model()
    assert User.objects.get(username="admin").is_staff
    roles = {(m.user.username, m.project.slug): m.role for m in Membership.objects.all()}
    assert roles == {
        ("lead", "vision"): Role.LEAD,
        ("alice", "vision"): Role.MEMBER,
        ("bob", "vision"): Role.MEMBER,
        ("charlie", "speech"): Role.MEMBER,
    }
    assert authenticate(rf.post("/login/"), username="alice", password="demo")


def test_without_demo_mode_nobody_gets_the_demo_password(settings, rf):
    settings.DEMO_MODE = False
    call_command("seed_demo", stdout=io.StringIO())
    assert not authenticate(rf.post("/login/"), username="alice", password="demo")


def test_seed_keeps_a_changed_password(settings, rf):
    settings.DEMO_MODE = True
    call_command("seed_demo", stdout=io.StringIO())
    alice = get_user_model().objects.get(username="alice")
    alice.set_password("my own secret")
    alice.save()
    call_command("seed_demo", stdout=io.StringIO())
    assert authenticate(rf.post("/login/"), username="alice", password="my own secret")


def test_the_demo_jobs_run_the_sample_program(settings):
    from jobs.models import Job
    from resources import samples
    from resources.inventory import runtimes
    from resources.models import Image

    call_command("seed_demo", stdout=io.StringIO())
    jobs = Job.objects.select_related("algorithm", "image")
    assert {job.algorithm.name for job in jobs} == {"ddp-sample"}
    assert all(job.command.startswith("python /workspace/algorithm/train.py") for job in jobs)
    folder = settings.STORAGE_ROOT / jobs.first().algorithm.path
    assert (folder / "train.py").read_text() == samples.TRAIN_SCRIPT.read_text()
    # The demo's PyTorch image gets the runtime when this machine has one.
    image = Image.objects.get(name=runtimes.DEMO_IMAGE)
    made = runtimes.is_ready(runtimes.default_folder())
    assert image.local_runtime == (str(runtimes.default_folder()) if made else "")


def test_turning_demo_mode_off_disables_the_demo_password(settings, rf):
    settings.DEMO_MODE = True
    call_command("seed_demo", stdout=io.StringIO())
    User = get_user_model()
    alice = User.objects.get(username="alice")
    alice.set_password("my own secret")
    alice.save()
    settings.DEMO_MODE = False
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert "disabled the demo password of admin, lead, bob, charlie" in out.getvalue()
    for name in ("admin", "lead", "bob", "charlie"):
        assert not User.objects.get(username=name).has_usable_password()
        assert not authenticate(rf.post("/login/"), username=name, password="demo")
    # A password the user chose is theirs: left alone.
    assert authenticate(rf.post("/login/"), username="alice", password="my own secret")
    # Demo mode on again: the disabled accounts get the demo password back.
    settings.DEMO_MODE = True
    call_command("seed_demo", stdout=io.StringIO())
    assert authenticate(rf.post("/login/"), username="bob", password="demo")
