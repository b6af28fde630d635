"""/jobs/ with 100,000 jobs across 1,000 users, and the job form with 1,000 catalog items."""

from __future__ import annotations

import random
from datetime import timedelta

from tests.bench.harness import bench_database, p50_p95, timings

USERS = 1000
PROJECTS = 50
JOBS = 100_000
CATALOG = 1000


def populate_jobs() -> None:
    from django.contrib.auth.models import Permission, User
    from django.utils import timezone

    from console.models import Membership, Project
    from jobs.models import Job, JobGroupObjectPermission, JobSpecChoice
    from resources.models import Algorithm, Image, NodeSpec

    rng = random.Random(11)
    projects = [Project.objects.create(name=f"P{i}", slug=f"p{i}") for i in range(PROJECTS)]
    users = User.objects.bulk_create(User(username=f"user{i:04d}") for i in range(USERS))
    Membership.objects.bulk_create(
        Membership(user=user, project=projects[i % PROJECTS]) for i, user in enumerate(users)
    )
    through = User.groups.through
    through.objects.bulk_create(
        through(user_id=user.pk, group_id=projects[i % PROJECTS].group_id)
        for i, user in enumerate(users)
    )
    image = Image.objects.create(
        name="img", reference="r/img:1", scopes=["training"], board_kinds=["CPU"]
    )
    specs = NodeSpec.objects.bulk_create(
        NodeSpec(name=f"s{i}", cpu_millicores=1000, memory_mib=1024) for i in range(20)
    )
    algorithm = Algorithm.objects.create(name="a", owner=users[0], project=projects[0], path="a")
    now = timezone.now()
    statuses = ["queued", "running", "succeeded", "error", "stopped", "expired"]
    jobs = []
    for i in range(JOBS):
        owner_index = rng.randrange(USERS)
        status = rng.choice(statuses)
        jobs.append(
            Job(
                name=f"job-{i}",
                owner=users[owner_index],
                project=projects[owner_index % PROJECTS],
                others_access=rng.choice(["none", "read_only", "read_write"]),
                image=image,
                algorithm=algorithm,
                command="python t.py",
                output_path=f"out/{i}",
                duration_hours=24,
                status=status,
                phase=status,
                created_at=now - timedelta(minutes=i),
            )
        )
    Job.objects.bulk_create(jobs, batch_size=5000)
    JobSpecChoice.objects.bulk_create(
        (JobSpecChoice(job=job, spec=specs[job.pk % 20], order=0) for job in jobs),
        batch_size=10000,
    )
    view = Permission.objects.get(codename="view_job")
    change = Permission.objects.get(codename="change_job")
    perms = []
    for job in jobs:
        group_id = job.project.group_id
        if job.others_access != "none":
            perms.append(
                JobGroupObjectPermission(group_id=group_id, permission=view, content_object=job)
            )
        if job.others_access == "read_write":
            perms.append(
                JobGroupObjectPermission(group_id=group_id, permission=change, content_object=job)
            )
    JobGroupObjectPermission.objects.bulk_create(perms, batch_size=10000)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def populate_catalog(user, project) -> None:
    from resources.models import Algorithm, Dataset, DatasetVersion, ModelVersion, TrainedModel

    algorithms = Algorithm.objects.bulk_create(
        Algorithm(name=f"alg-{i}", owner=user, project=project, path=f"a/{i}")
        for i in range(CATALOG)
    )
    datasets = Dataset.objects.bulk_create(
        Dataset(name=f"data-{i}", owner=user, project=project, path=f"d/{i}")
        for i in range(CATALOG)
    )
    DatasetVersion.objects.bulk_create(
        DatasetVersion(dataset=d, name="v1", path=f"d/{d.pk}/v1") for d in datasets
    )
    models = TrainedModel.objects.bulk_create(
        TrainedModel(name=f"m-{i}", owner=user, project=project, path=f"m/{i}")
        for i in range(CATALOG)
    )
    ModelVersion.objects.bulk_create(ModelVersion(model=m, name="v1", path="m") for m in models)
    del algorithms


def job_list():
    with bench_database():
        from django.contrib.auth.models import User
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        from jobs.models import Job

        populate_jobs()
        owner = User.objects.get(username="user0007")
        member = User.objects.get(username="user0057")  # same project (57 % 50 == 7)
        results = []
        for label, user in [("owner", owner), ("read-only member", member)]:
            client = Client()
            client.force_login(user)
            visible = Job.objects.visible_to(user).count()
            for title, url in [("", "/jobs/"), (", searching a name", "/jobs/?name=job-12")]:
                samples = timings(lambda url=url, client=client: client.get(url), runs=30)
                with CaptureQueriesContext(connection) as queries:
                    client.get(url)
                results.append(
                    (
                        f"/jobs/{title} for an {label} ({visible} visible of {JOBS})",
                        f"{p50_p95(samples)}, {len(queries)} queries",
                    )
                )
        populate_catalog(owner, owner.memberships.get().project)
        client = Client()
        client.force_login(owner)
        samples = timings(lambda: client.get("/jobs/new/"), runs=30)
        results.append(
            (f"/jobs/new/ with {CATALOG} algorithms, dataset versions and models", p50_p95(samples))
        )
        return results
