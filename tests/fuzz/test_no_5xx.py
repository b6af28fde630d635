"""No 5xx anywhere, on any input: every address of the site, every parameter its view reads,
hostile and plausible values, as each of the named actors, over real HTTP to the live server.

Three passes: a deep sweep sends each address, as the actor who gets furthest into its view,
every parameter spoilt with each of the values that break most (one parameter at a time over
valid ones; all at once for forms); an access sweep sends each address, as every actor, with
valid parameters; then hypothesis explores. The number of requests and the 5xx seen are
written to test-artifacts/fuzz.json.

More examples, or other ones: ``FUZZ_EXAMPLES=5000 FUZZ_SEED=7 pytest tests/fuzz``; every 5xx
listed rather than the first: ``FUZZ_KEEP_GOING=1``. Nothing is left out: over-long
usernames at login and an empty ``_to_field`` in Django's admin are sent too.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from console.models import Department, Membership, PlatformSetting, Project, SettingChange
from console.sharing import Access
from jobs import operations
from jobs.models import JobType, Mode, Phase, Priority, Status
from resources.catalog.kinds import KINDS as CATALOG_KINDS
from resources.models import Quota
from resources.views.inventory import KINDS as INVENTORY_KINDS
from tests.fuzz import surface
from tests.helpers import settings_form_data
from tests.jobs.execution_helpers import admit_and_launch, make_job, program, wait_for_phase
from tests.jobs.factories import JobFactory
from tests.resources.catalog_factories import (
    AlgorithmFactory,
    AnnotationSetFactory,
    AnnotationVersionFactory,
    DatasetFactory,
    DatasetVersionFactory,
    ModelVersionFactory,
    TrainedModelFactory,
    VolumeFactory,
)
from tests.resources.factories import AcceleratorModelFactory, ImageFactory, ResourcePoolFactory

pytestmark = pytest.mark.usefixtures("local_runs")

ROLES = ("anonymous", "alice", "bob", "lead", "charlie", "admin")
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "3000"))
SEED = os.environ.get("FUZZ_SEED")
KEEP_GOING = bool(os.environ.get("FUZZ_KEEP_GOING"))
ARTIFACT = Path(__file__).resolve().parents[2] / "test-artifacts" / "fuzz.json"
JOB_FORMS = ("job_new", "job_form_refresh", "job_form_predict", "job_clone", "job_from_devenv")
LOGS = ("job_detail", "job_logs", "job_logs_more", "job_log_download", "job_usage")


@pytest.fixture
def world(alice, bob, lead, charlie, admin, vision, speech, run_cluster) -> surface.World:
    spec = run_cluster["cpu"]
    image = ImageFactory(name="pytorch")
    ResourcePoolFactory(name="vision-pool").projects.add(vision)
    algorithm = AlgorithmFactory(name="resnet", owner=alice, project=vision, favourited_by=[alice])
    dataset = DatasetFactory(owner=bob, project=vision, others_access=Access.READ_ONLY)
    version = DatasetVersionFactory(dataset=dataset, name="v1")
    AnnotationVersionFactory(annotation_set=AnnotationSetFactory(owner=alice, project=vision))
    ModelVersionFactory(model=TrainedModelFactory(owner=alice, project=vision))
    VolumeFactory(owner=charlie, project=speech, others_access=Access.NONE)
    for make in (AlgorithmFactory, DatasetFactory, AnnotationSetFactory, TrainedModelFactory,
                 VolumeFactory):  # fmt: skip
        make(owner=alice, project=vision)  # the last of each kind: the one the sweep deletes

    finished = make_job(alice, vision, spec, command="python3 /workspace/algorithm/say.py")
    program(finished, "say.py", "print('hello from the fuzz')\n")
    admit_and_launch()
    wait_for_phase(finished, Phase.SUCCEEDED)
    jobs = [
        finished,
        JobFactory(owner=alice, project=vision, specs=[spec], algorithm=algorithm),
        JobFactory(owner=bob, project=vision, specs=[spec], others_access=Access.READ_WRITE),
        JobFactory(owner=alice, project=vision, specs=[spec], job_type=JobType.BATCH),
        JobFactory(owner=charlie, project=speech, specs=[spec]),
        JobFactory(owner=alice, project=vision, specs=[spec], priority=Priority.URGENT),
        JobFactory(owner=alice, project=vision, specs=[spec]),  # the one the sweep ends
    ]
    devenv = operations.devenv_from_job(jobs[1], alice, "explore")
    doomed = operations.devenv_from_job(jobs[1], alice, "explore-3")  # the one the sweep deletes

    def pks(model) -> list[int]:
        return list(model.objects.order_by("pk").values_list("pk", flat=True))

    ids = {"job": [job.pk for job in jobs], "devenv": [devenv.pk, doomed.pk]}
    # A department over vision and speech, with quotas for it and both (the last of each:
    # the one the sweep deletes).
    gpu = AcceleratorModelFactory(name="fuzz-gpu")
    research = Department.objects.create(name="Research", slug="research")
    Project.objects.filter(pk__in=[vision.pk, speech.pk]).update(department=research)
    quotas = [
        Quota.objects.create(department=research, accelerator_model=gpu, guaranteed=4),
        Quota.objects.create(project=vision, accelerator_model=gpu, guaranteed=2, maximum=6),
        Quota.objects.create(project=speech, accelerator_model=gpu, guaranteed=1),
    ]
    spare = Department.objects.create(name="Spare", slug="spare")
    ids |= {"quota": [q.pk for q in quotas], "department": [research.pk, spare.pk]}
    ids |= {f"catalog:{slug}": pks(kind.model) for slug, kind in CATALOG_KINDS.items()}
    ids |= {f"inventory:{slug}": pks(kind.model) for slug, kind in INVENTORY_KINDS.items()}
    for model in (User, Group, Project, Membership, PlatformSetting, SettingChange):
        ids[f"admin:{model._meta.app_label}_{model._meta.model_name}"] = pks(model)
    every_id = {str(pk) for pool in ids.values() for pk in pool}
    words = [
        "yes", "on", "1", "0", "2", "true", "en", "zh-hans", "project", "batch", "/jobs/",
        "add_subtask", "add_dataset", "remove_dataset:0", "remove_subtask:1", "resnet",
        "python3 train.py", "outputs/alice", "alice", "bob", "vision", "speech", "-name",
        "created_at", "mine", "favourites", "all", "explore-2",
    ]  # fmt: skip
    choices = [*Status.values, *Phase.values, *Mode.values, *Access.values, *JobType.values]
    job_form = {
        "name": "fuzz-job", "others_access": "none", "job_type": "regular", "priority": "0",
        "algorithm": algorithm.pk, "algorithm_read_only": "on", "mode": "single",
        "command": "python /workspace/algorithm/train.py", "output_path": "outputs/fuzz",
        "specs": [spec.pk], "node_count": "1", "ps_count": "0", "image": image.pk,
        "graceful_shutdown_seconds": "30", "duration_hours": "24", "subtask_count": "0",
        "dataset_count": "1", "dataset_0_version": version.pk, "dataset_0_read_only": "on",
    }  # fmt: skip
    log = {"attempt": "1", "replica": finished.attempts.get().replicas[0]["name"]}
    bases = dict.fromkeys(JOB_FORMS, job_form) | dict.fromkeys(LOGS, log)
    bases |= {
        "settings": settings_form_data(),
        "job_logs_more": {**log, "offset": "0"},
        "job_live": {"phase": Phase.SUCCEEDED},
        "job_duration": {"hours": "24"},
        "job_priority": {"priority": "1"},
        "queue_priority": {"priority": "1"},
        "job_devenv": {"name": "explore-2"},
        "job_bulk_delete": {"ids": ids["job"][:3], "confirm": "no"},
        "switch_project": {"project": vision.pk, "next": "/jobs/"},
        "catalog:favourite": {"favourite": "1", "next": "/catalog/"},
        "set_language": {"language": "en", "next": "/"},
        "quota_new": {"holder": f"p{vision.pk}", "accelerator_model": gpu.pk, "guaranteed": "1"},
        "quota_edit": {"holder": f"p{vision.pk}", "accelerator_model": gpu.pk, "guaranteed": "1"},
        "department_new": {"name": "Ops", "slug": "ops", "projects": [speech.pk]},
        "department_edit": {"name": "Research", "slug": "research", "projects": [vision.pk]},
        "job_list": {"before": "end", "per_page": "10", "sort": "-name"},
    }
    return surface.World(
        ids=ids,
        slugs=["vision", "speech"],
        plausible=sorted(every_id | {*words, *map(str, choices)}),
        bases=bases,
    )


class Fuzzer:
    """Sends requests as the actors, counts them, and keeps every 5xx."""

    def __init__(self, http, actors: dict):
        self.http, self.actors = http, actors
        self.sessions = {role: http(actors.get(role)) for role in ROLES}
        self.requests = 0
        self.allowed: set[tuple[str, str]] = set()  # (route name, method) not answered 405
        self.statuses: Counter = Counter()
        self.passes: dict[str, dict] = {}
        self.by_route: dict[str, Counter] = {}
        self.route_seconds: Counter = Counter()  # where the fuzzer's time goes, by route
        self.failures: list[str] = []
        # GETs already sent, as sent: hypothesis draws the same small request many times
        # over (no parameters, the first route, the first actor), and a GET that changed
        # nothing the first time finds nothing new the second.
        self.sent: set[tuple] = set()
        self.repeats = 0

    def send(self, role: str, route: surface.Route, method: str, path: str, pairs, htmx=False):
        if method == "GET":
            key = (role, path, tuple(map(tuple, pairs)), htmx)
            if key in self.sent:
                self.repeats += 1
                return None
            self.sent.add(key)
        session = self.sessions[role]
        given = {"params": pairs} if method == "GET" else {"data": pairs}
        headers = {"HX-Request": "true"} if htmx else {}
        started = time.monotonic()
        response = session.request(
            method, path, headers=headers, allow_redirects=False, timeout=120, **given
        )
        self.route_seconds[route.name] += time.monotonic() - started
        self.requests += 1
        self.by_route.setdefault(route.name, Counter())[response.status_code] += 1
        self.statuses[response.status_code] += 1
        if response.status_code >= 500:
            shown = [(k, v if len(v) < 80 else v[:40] + f"…({len(v)})") for k, v in pairs]
            self.failures.append(f"{response.status_code} {role} {method} {path} {shown}")
        if method == "POST" and route.name.endswith("logout") and role != "anonymous":
            session.close()
            self.sessions[role] = self.http(self.actors[role])  # logged in again
        return response

    @contextlib.contextmanager
    def timed(self, name: str):
        """A pass's requests and seconds, for the artifact."""
        requests, started = self.requests, time.monotonic()
        try:
            yield
        finally:
            seconds = round(time.monotonic() - started, 1)
            self.passes[name] = {"requests": self.requests - requests, "seconds": seconds}

    def record(self, seconds: float, examples: int) -> None:
        routes = self.by_route.items()
        ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
        ARTIFACT.write_text(
            json.dumps(
                {
                    "requests": self.requests,
                    "repeated_gets_not_sent": self.repeats,
                    "5xx": sum(n for status, n in self.statuses.items() if status >= 500),
                    "statuses": dict(sorted(self.statuses.items())),
                    "hypothesis_examples": examples,
                    "seconds": round(seconds, 1),
                    "passes": self.passes,
                    "failures": self.failures[:200],
                    "by_route": {name: dict(sorted(n.items())) for name, n in routes},
                    "seconds_by_route": {
                        name: round(seconds, 1)
                        for name, seconds in self.route_seconds.most_common()
                    },
                },
                indent=2,
            )
        )
        print(
            f"\nfuzz: {self.requests} requests in {seconds:.0f} s ({self.repeats} repeated GETs "
            f"not sent again): {dict(self.statuses)}"
        )


def deep_sweep(fuzzer: Fuzzer, world: surface.World, routes: list[surface.Route]) -> None:
    """Each address as the actor who gets furthest, each parameter with each KEY value."""
    for route in sorted(routes, key=surface.ending):  # what ends things last
        role = surface.deep_role(route)
        keys = surface.KEY[:3] if route.admin else surface.KEY
        for path in surface.real_paths(route, world, last=surface.ending(route)):
            for method in ("GET", "POST"):
                base = world.base(route)
                first = fuzzer.send(role, route, method, path, base)
                if first is not None and first.status_code == 405:
                    continue
                fuzzer.allowed.add((route.name, method))
                names = sorted(route.parameters)
                groups = [names] if route.form else [[name] for name in names]
                for key in keys:
                    for group in groups:
                        pairs = surface.spoilt(base, route, group, key)
                        fuzzer.send(role, route, method, path, pairs, htmx=method == "GET")


def access_sweep(fuzzer: Fuzzer, world: surface.World, routes: list[surface.Route]) -> None:
    """Each address as every actor, with valid parameters: who may, and who may not."""
    for route in sorted(routes, key=surface.ending):
        roles = ("anonymous", "alice") if route.admin else ROLES
        for path in surface.real_paths(route, world, last=surface.ending(route)):
            for method in ("GET", "POST"):
                if (route.name, method) in fuzzer.allowed:
                    for role in roles:
                        fuzzer.send(role, route, method, path, world.base(route))


@pytest.fixture
def unlimited(settings):
    """Rate limits off: a 429 would stop most writes before their view reads anything (the
    limits have tests of their own, in tests/console/test_ratelimit.py)."""
    settings.RATE_LIMITS = dict.fromkeys(settings.RATE_LIMITS, (10**9, 60))


@pytest.mark.usefixtures("unlimited")
def test_no_address_answers_5xx(http, world, alice, bob, lead, charlie, admin):
    actors = {"alice": alice, "bob": bob, "lead": lead, "charlie": charlie, "admin": admin}
    fuzzer = Fuzzer(http, actors)
    routes = surface.routes()
    site = [route for route in routes if not route.admin]
    admin_site = [route for route in routes if route.admin]
    started = time.monotonic()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=SEED is None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def explore(data):
        routes = admin_site if data.draw(st.integers(0, 3), label="admin?") == 0 else site
        route = data.draw(st.sampled_from(routes), label="route")
        deep = data.draw(st.booleans(), label="deep?")
        role = surface.deep_role(route) if deep else data.draw(st.sampled_from(ROLES), label="role")
        # The sweeps sent each method once already: a method the address answers 405 to is
        # not sent again (it would only be 405 again, a request that finds nothing).
        allowed = [m for m in ("GET", "POST") if (route.name, m) in fuzzer.allowed]
        method = data.draw(st.sampled_from(allowed or ["GET", "POST"]), label="method")
        path = surface.fill(route, world, data.draw)
        pairs = surface.parameters(route, world, data.draw)
        htmx = data.draw(st.booleans(), label="htmx")
        response = fuzzer.send(role, route, method, path, pairs, htmx)
        assert KEEP_GOING or response is None or response.status_code < 500, fuzzer.failures[-1]

    if SEED is not None:
        explore = seed(int(SEED))(explore)
    try:
        with fuzzer.timed("deep sweep"):
            deep_sweep(fuzzer, world, routes)
        with fuzzer.timed("access sweep"):
            access_sweep(fuzzer, world, routes)
        assert KEEP_GOING or fuzzer.failures == [], "\n".join(fuzzer.failures)
        with fuzzer.timed("hypothesis"):
            explore()
    finally:
        fuzzer.record(time.monotonic() - started, EXAMPLES)
    assert fuzzer.failures == [], "\n".join(fuzzer.failures)
