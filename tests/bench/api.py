"""The JSON API with 100,000 jobs across 1,000 users, and the notifications' scan of job
events: ``make bench BENCH_ARGS=api``."""

from __future__ import annotations

import sys
import time

from tests.bench.harness import bench_database, p50_p95, timings
from tests.bench.jobs import populate_jobs

JOBS = 100_000
EVENTS = 10_000


def api() -> list[tuple[str, str]]:
    return _reads() + _create() + _scan()


def _token_client(user):
    from django.test import Client

    from console import tokens

    _row, text = tokens.issue(user, "bench", "write")
    return Client(HTTP_AUTHORIZATION=f"Bearer {text}")


def _reads() -> list[tuple[str, str]]:
    """The list's first and last pages and a search, and one job, for an owner and an admin,
    with a token (as a script calls them)."""
    with bench_database():
        from django.contrib.auth.models import User
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from jobs.models import Job

        populate_jobs(JOBS)
        admin = User.objects.create(username="admin", is_staff=True, is_superuser=True)
        owner = User.objects.get(username="user0007")
        job = Job.objects.filter(owner=owner).first()
        results = []
        for label, user in [("an owner", owner), ("an admin", admin)]:
            client = _token_client(user)
            for title, url in [
                ("first page", "/api/v1/jobs"),
                ("last page", "/api/v1/jobs?before=end"),
                ("name search", "/api/v1/jobs?name=job-4242"),
                ("one job", f"/api/v1/jobs/{job.pk}"),
            ]:
                samples = timings(lambda url=url, client=client: client.get(url), runs=20)
                with CaptureQueriesContext(connection) as queries:
                    assert client.get(url).status_code == 200
                results.append((f"API {title}, {label} ({JOBS:,} jobs)",
                                f"{p50_p95(samples)}, {len(queries)} queries"))  # fmt: skip
        return results


def _create() -> list[tuple[str, str]]:
    """POST /api/v1/jobs: a job made through the form's path, 1,000 jobs in the table."""
    with bench_database():
        from django.conf import settings
        from django.contrib.auth.models import User

        from resources.models import Algorithm, Image, Node, NodeSpec

        populate_jobs(1000)
        owner = User.objects.get(username="user0000")  # the algorithm's owner
        Node.objects.create(name="n1", cpu_millicores=64_000, memory_mib=262_144)
        Image.objects.update(local_runtime=sys.prefix)  # this interpreter's own environment
        client = _token_client(owner)
        settings.RATE_LIMITS = {**settings.RATE_LIMITS, "submit": (100_000, 60)}
        body = {
            "algorithm": Algorithm.objects.get().name, "image": Image.objects.get().name,
            "specs": [NodeSpec.objects.order_by("pk").first().name],
            "command": "python t.py", "project": owner.memberships.get().project.slug,
        }  # fmt: skip
        made = iter(range(1_000_000))

        def create():
            answer = client.post("/api/v1/jobs", {**body, "name": f"api-{next(made)}"},
                                 content_type="application/json")  # fmt: skip
            assert answer.status_code == 201, answer.content[:300]

        samples = timings(create, runs=30)
        return [("API create a job (the form's checks and prediction)", p50_p95(samples))]


def _scan() -> list[tuple[str, str]]:
    """The notifications' scan of EVENTS tagged events (a webhook and an email each)."""
    with bench_database():
        from django.contrib.auth.models import User

        from jobs.models import Delivery, Job, JobEvent, Notice, Webhook
        from jobs.notify import scan

        populate_jobs(1000)
        for user in User.objects.all()[:1000]:
            user.email = f"{user.username}@example.com"
            user.save(update_fields=["email"])
            Webhook.objects.create(user=user, url=f"https://hooks.example/{user.pk}")
        jobs = list(Job.objects.values_list("pk", flat=True))
        JobEvent.objects.bulk_create(
            JobEvent(job_id=jobs[i % len(jobs)], message="m", notice=Notice.FAILED)
            for i in range(EVENTS)
        )
        sent = []
        scan._send_all = sent.extend  # measured without a broker: the handing over is Celery's
        began = time.perf_counter()
        while scan.scan():
            pass
        took = time.perf_counter() - began
        made = Delivery.objects.count()
        return [(f"notices: {EVENTS:,} events scanned into {made:,} deliveries",
                 f"{took:.2f} s, {made / took:,.0f} deliveries/s")]  # fmt: skip
