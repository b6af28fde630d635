"""/queue/ at 1,000, 10,000 and 30,000 queued jobs: the first, a middle and the last page,
for an admin (the cluster) and the member who owns them (their project: the permission
filter), with the queries and the size of each page."""

from __future__ import annotations

import random

from tests.bench.harness import bench_database, p50_p95, timings

SIZES = (1000, 10000, 30000)
TARGET = "target p95 ≤ 150 ms, ≤ 200 KB"


def _place_everyone() -> None:
    """Positions 1..n in queue order, as an admission pass leaves them."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE jobs_standing SET position = ranked.n FROM (
                SELECT id, row_number() OVER (ORDER BY priority DESC, submitted_at, id) AS n
                FROM jobs_job WHERE status = 'queued'
            ) AS ranked WHERE jobs_standing.job_id = ranked.id
            """
        )


def queue_pages():
    results = []
    for size in SIZES:
        with bench_database():
            from django.contrib.auth.models import User
            from django.db import connection
            from django.test import Client
            from django.test.utils import CaptureQueriesContext

            from jobs.models import Job
            from tests.bench.scheduler import _inventory, _queue

            user, project, specs, image = _inventory()
            _queue(user, project, specs, image, size, random.Random(11))
            _place_everyone()
            with connection.cursor() as cursor:  # the statistics autovacuum would keep
                cursor.execute("ANALYZE")
            admin = User.objects.create_superuser("admin", password="x")
            middle = Job.objects.get(standing__position=size // 2)
            for who, account in (("admin", admin), ("owner", user)):
                client = Client()
                client.force_login(account)
                for where, url in (
                    ("first page", "/queue/"),
                    ("a middle page", f"/queue/?at={middle.pk}"),
                    ("last page", "/queue/?before=2147483648-0"),
                ):
                    samples = timings(lambda url=url, client=client: client.get(url), runs=20)
                    with CaptureQueriesContext(connection) as queries:
                        body = client.get(url).content
                    results.append(
                        (
                            f"/queue/, {size:,} queued, {who}, {where}",
                            f"{p50_p95(samples)}, {len(queries)} queries, "
                            f"{len(body) / 1024:.0f} KB ({TARGET})",
                        )
                    )
    return results
