"""/jobs/ with 100,000 and 1,000,000 jobs across 1,000 users, and the job form with 1,000
catalog items: ``make bench BENCH_ARGS=jobs``."""

from __future__ import annotations

from tests.bench.harness import bench_database, p50_p95, timings

USERS = 1000
PROJECTS = 50
JOBS = 100_000
SIZES = (100_000, 1_000_000)
STATUSES = "ARRAY['queued', 'running', 'succeeded', 'error', 'stopped', 'expired']"
CATALOG = 1000


def populate_jobs(count: int = JOBS) -> None:
    """``count`` jobs across USERS users in PROJECTS projects, their specs and their shares
    (a grant to the project's group per shared job, as console.sharing gives), written by
    the database itself: a million jobs through the ORM would take most of an hour."""
    from django.contrib.auth.models import Permission, User
    from django.db import connection

    from console.models import Membership, Project
    from jobs.models import Job
    from resources.models import Algorithm, Image, NodeSpec

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
    # Ids in a row: user i is users[0].pk + i, project i projects[0].pk + i.
    assert users[-1].pk - users[0].pk == USERS - 1
    assert projects[-1].pk - projects[0].pk == PROJECTS - 1
    # One job made by the ORM (every column's default), copied by the database ``count`` times
    # with what varies: owner and project (a user's jobs in the user's project), sharing,
    # status, creation time (a minute apart), name and output path.
    template = Job.objects.create(
        name="template", owner=users[0], project=projects[0], image=image,
        algorithm=algorithm, command="python t.py", output_path="out", duration_hours=24,
    )  # fmt: skip
    varied = {
        "name": "'job-' || g",
        "owner_id": f"{users[0].pk} + mod(g * 7919, {USERS})",
        "project_id": f"{projects[0].pk} + mod(mod(g * 7919, {USERS}), {PROJECTS})",
        "others_access": "(ARRAY['none', 'read_only', 'read_write'])[1 + mod(g * 31, 3)]",
        "status": f"({STATUSES})[1 + mod(g * 17, 6)]",
        "phase": f"({STATUSES})[1 + mod(g * 17, 6)]",
        "created_at": "now() - g * interval '1 minute'",
        "output_path": "'out/' || g",
    }  # fmt: skip
    columns = [f.column for f in Job._meta.concrete_fields if not f.primary_key]
    values = [varied.get(column, f't."{column}"') for column in columns]
    view = Permission.objects.get(codename="view_job").pk
    change = Permission.objects.get(codename="change_job").pk
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO jobs_job ({', '.join(map(repr_column, columns))}) "
            f"SELECT {', '.join(values)} FROM jobs_job t, generate_series(1, %s::bigint) g "
            "WHERE t.id = %s",
            [count, template.pk],
        )
        # A queued job has a standing row (migration jobs/0022), the template's too.
        cursor.execute("DELETE FROM jobs_standing WHERE job_id = %s", [template.pk])
        cursor.execute("DELETE FROM jobs_job WHERE id = %s", [template.pk])
        cursor.execute(
            'INSERT INTO jobs_jobspecchoice (job_id, spec_id, "order") '
            f"SELECT id, {specs[0].pk} + mod(id, 20), 0 FROM jobs_job"
        )
        for permission, levels in [
            (view, "('read_only', 'read_write')"),
            (change, "('read_write')"),
        ]:
            cursor.execute(
                "INSERT INTO jobs_jobgroupobjectpermission"
                " (content_object_id, group_id, permission_id) "
                f"SELECT j.id, p.group_id, {permission} FROM jobs_job j "
                f"JOIN console_project p ON p.id = j.project_id WHERE j.others_access IN {levels}"
            )  # fmt: skip
        # What autovacuum does soon after such a load on a live server: statistics for the
        # planner, and the visibility map that lets it read the ids from indexes alone.
        cursor.execute("VACUUM ANALYZE")


def repr_column(column: str) -> str:
    return f'"{column}"'


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
    results = []
    for count in SIZES:
        results += _job_list(count)
    results += _job_form()
    return results


def _job_list(count: int) -> list[tuple[str, str]]:
    """The first page, the last page and a name search, for a job's owner, a member of its
    project it is shared with, and an admin (who sees every job)."""
    with bench_database():
        from django.contrib.auth.models import User
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        from jobs.models import Job

        populate_jobs(count)
        admin = User.objects.create(username="admin", is_staff=True, is_superuser=True)
        owner = User.objects.get(username="user0007")
        member = User.objects.get(username="user0057")  # same project (57 % 50 == 7)
        results = []
        for label, user in [("an owner", owner), ("a member", member), ("an admin", admin)]:
            client = Client()
            client.force_login(user)
            visible = Job.objects.visible_to(user).count()
            for title, url in [
                ("first page", "/jobs/"),
                ("last page", "/jobs/?before=end"),
                ("name search", "/jobs/?name=job-4242"),
            ]:
                samples = timings(lambda url=url, client=client: client.get(url), runs=20)
                with CaptureQueriesContext(connection) as queries:
                    client.get(url)
                results.append(
                    (
                        f"/jobs/ {title}, {label} ({visible:,} visible of {count:,})",
                        f"{p50_p95(samples)}, {len(queries)} queries (p95 ≤ 150 ms)",
                    )
                )
        return results


def _job_form() -> list[tuple[str, str]]:
    with bench_database():
        from django.contrib.auth.models import User
        from django.test import Client

        populate_jobs(1000)
        owner = User.objects.get(username="user0007")
        populate_catalog(owner, owner.memberships.get().project)
        client = Client()
        client.force_login(owner)
        samples = timings(lambda: client.get("/jobs/new/"), runs=30)
        return [
            (f"/jobs/new/ with {CATALOG} algorithms, dataset versions and models", p50_p95(samples))
        ]
