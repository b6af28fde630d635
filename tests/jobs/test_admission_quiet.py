"""A pass that would change nothing is skipped (jobs.admission.db.Quiet), and the admissions
of a pass are written together (lifecycle.move_all): what each may and may not skip."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import lifecycle
from jobs.admission import db
from jobs.admission.db import run_pass
from jobs.models import Job, JobEvent, Phase
from resources.models import Allocation
from tests.jobs.factories import JobFactory
from tests.resources.factories import AcceleratorModelFactory, NodeFactory, NodeSpecFactory


@pytest.fixture
def specs(db):
    a100 = AcceleratorModelFactory(name="A100")
    for i in range(2):
        NodeFactory(name=f"g{i}", board_count=8, accelerator_model=a100)
    return {
        boards: NodeSpecFactory(name=f"a100x{boards}", boards=Decimal(boards),
                                accelerator_model=a100, cpu_millicores=1000, memory_mib=1024)
        for boards in (4, 8)
    }  # fmt: skip


@pytest.fixture(autouse=True)
def _no_quiet_from_another_test():
    db._quiet = db._previous = db._profile = None
    yield
    db._quiet = db._previous = db._profile = None


def queries_of_a_pass(**kwargs) -> tuple[db.PassResult, int]:
    with CaptureQueriesContext(connection) as seen:
        result = run_pass(**kwargs)
    return result, len(seen)


def settled():
    """Passes until one changes nothing (at most three); the queries the last one made."""
    for _ in range(3):
        result, queries = queries_of_a_pass()
        if not result.admitted and db._quiet is not None:
            return queries
    raise AssertionError("the passes never settled")


@pytest.mark.django_db(transaction=True)
def test_a_pass_after_one_that_changed_nothing_is_skipped_until_something_changes(
    alice, vision, specs
):
    small = JobFactory(owner=alice, project=vision, name="small", nodes_asked=2,
                       mode="pytorch", specs=[specs[4]])  # fmt: skip
    big = JobFactory(owner=alice, project=vision, name="big", nodes_asked=2,
                     mode="pytorch", specs=[specs[8]])  # fmt: skip
    full = settled()
    small.refresh_from_db()
    assert small.phase == Phase.ADMITTED
    big.refresh_from_db()
    standing = (big.queue_position, big.latest_start, big.wait_reason, big.blockers)

    # Nothing changed: the pass asks the change log once and plans nothing.
    result, skipped = queries_of_a_pass()
    assert result.ran and result.admitted == [] and result.queued == 1
    assert skipped <= 4 < full
    big.refresh_from_db()
    assert (big.queue_position, big.latest_start, big.wait_reason, big.blockers) == standing

    # A submission is a change: the next pass plans it, and admits it beside small.
    late = JobFactory(owner=alice, project=vision, name="late", nodes_asked=1,
                      mode="pytorch", specs=[specs[4]], duration_hours=1)  # fmt: skip
    result, queries = queries_of_a_pass()
    assert result.admitted == [late.pk] and queries > 4
    assert Allocation.objects.live().filter(holder_id=late.pk).count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_worker_keeps_its_last_pass_so_a_submission_searches_only_the_newcomer(
    alice, vision, specs, monkeypatch, searches
):
    """The pass after a submission is given the last pass's digest: the jobs already
    waiting, whose room nothing gave back, are not searched again (scheduling.settled)."""
    waiting = [JobFactory(owner=alice, project=vision, name=f"w{i}", nodes_asked=2,
                          mode="pytorch", specs=[specs[8]]) for i in range(4)]  # fmt: skip
    settled()
    searches.clear()  # counted from here
    late = JobFactory(owner=alice, project=vision, name="late", nodes_asked=2,
                      mode="pytorch", specs=[specs[8]])  # fmt: skip
    result = run_pass()
    assert result.ran and result.admitted == []
    assert searches == [late.pk]
    late.refresh_from_db()
    assert late.queue_position == 4  # behind w1-w3 (w0 was admitted)
    # A worker that starts afresh has no digest: it searches every waiting job again.
    monkeypatch.setattr(db, "_previous", None)
    searches.clear()
    JobFactory(owner=alice, project=vision, name="later", nodes_asked=1, mode="pytorch",
               specs=[specs[8]])  # fmt: skip
    run_pass()
    assert len(searches) == len(waiting) + 1


@pytest.mark.django_db(transaction=True)
def test_the_plan_falling_due_ends_the_skip(alice, vision, specs):
    """A reservation's start, or a running job's end, changes the plan with no change in
    the database: the first pass at or after it is a full one."""
    first = JobFactory(owner=alice, project=vision, name="first", nodes_asked=2,
                       mode="pytorch", specs=[specs[8]], duration_hours=1)  # fmt: skip
    second = JobFactory(owner=alice, project=vision, name="second", nodes_asked=2,
                        mode="pytorch", specs=[specs[8]])  # fmt: skip
    settled()
    quiet = db._quiet
    second.refresh_from_db()
    assert second.phase == Phase.QUEUED
    assert quiet.seen.due == second.latest_start.timestamp()  # first's end: second's start
    before = timezone.now() + timedelta(minutes=30)
    assert queries_of_a_pass(now=before)[1] <= 4
    # At its end first is overdue (it is still running): planned to leave a minute later,
    # and second's standing moves with it.
    result, queries = queries_of_a_pass(now=second.latest_start + timedelta(seconds=1))
    assert queries > 4 and result.admitted == []
    second.refresh_from_db()
    assert second.latest_start > timezone.now() + timedelta(minutes=59)
    first.refresh_from_db()
    assert first.phase == Phase.ADMITTED


@pytest.mark.django_db(transaction=True)
def test_a_change_committed_while_the_pass_planned_is_not_missed(alice, vision, specs):
    """The skip is decided from the snapshot the pass read, not from when it finished: a
    job submitted between the pass's read and its end is planned by the next pass."""
    queued = []

    def submit_during_the_pass(original=db.passes.schedule):
        def schedule(*args, **kwargs):
            queued.append(JobFactory(owner=alice, project=vision, name="meanwhile",
                                     nodes_asked=1, mode="pytorch", specs=[specs[4]]))  # fmt: skip
            return original(*args, **kwargs)

        return schedule

    settled()  # nothing queued: the pass is quiet
    db.passes.schedule, original = submit_during_the_pass(), db.passes.schedule
    try:
        db._quiet = None
        result = run_pass()  # plans the empty queue, read before the submission
    finally:
        db.passes.schedule = original
    assert result.admitted == [] and db._quiet is not None
    assert run_pass().admitted == [queued[0].pk]


@pytest.mark.django_db(transaction=True)
def test_moving_many_leaves_alone_a_job_someone_else_moved_first(alice, vision, specs):
    jobs = [JobFactory(owner=alice, project=vision, name=f"j{i}", specs=[specs[4]])
            for i in range(3)]  # fmt: skip
    assert lifecycle.move(Job.objects.get(pk=jobs[1].pk), Phase.STOPPED, "Stopped.")
    fields = {"nodes_granted": 1, "borrowing": False, "claiming_since": None}
    moved = lifecycle.move_all(
        [(job, f"Admitted {job.name}.", dict(fields, spec_id=specs[4].pk)) for job in jobs],
        Phase.ADMITTED,
    )
    assert [job.pk for job in moved] == [jobs[0].pk, jobs[2].pk]
    phases = dict(Job.objects.values_list("pk", "phase"))
    assert [phases[job.pk] for job in jobs] == [Phase.ADMITTED, Phase.STOPPED, Phase.ADMITTED]
    assert moved[0].phase == Phase.ADMITTED and moved[0].nodes_granted == 1
    events = JobEvent.objects.filter(phase=Phase.ADMITTED).values_list("job_id", "message")
    assert sorted(events) == [(jobs[0].pk, "Admitted j0."), (jobs[2].pk, "Admitted j2.")]
    with pytest.raises(lifecycle.IllegalTransition):
        lifecycle.move_all([(moved[0], "again", {})], Phase.ADMITTED)


@pytest.mark.django_db(transaction=True)
def test_standings_that_moved_reorder_the_queue_but_search_nothing_again(
    alice, charlie, vision, speech, specs, searches
):
    """Fair-share standings (SPEC G3) move while a team's jobs run: they reorder the queue,
    but a kept reservation's search reads only the room and the job's own specs, so no
    pass searches them again, and the queue falls quiet once the new order is written."""
    JobFactory(owner=alice, project=vision, name="runs", nodes_asked=2, mode="pytorch",
               specs=[specs[8]], duration_hours=24)  # fmt: skip
    waiting = {}
    for name, owner, project in (("v1", alice, vision), ("s1", charlie, speech),
                                 ("v2", alice, vision), ("s2", charlie, speech)):  # fmt: skip
        waiting[name] = JobFactory(owner=owner, project=project, name=name, nodes_asked=2,
                                   mode="pytorch", specs=[specs[8]], duration_hours=24)  # fmt: skip
    start = timezone.now()
    run_pass(now=start)
    promised = {name: Job.objects.get(pk=job.pk).latest_start for name, job in waiting.items()}
    assert all(promised.values())

    def in_order() -> list[str]:
        return list(Job.objects.filter(phase=Phase.QUEUED).order_by("standing__position")
                    .values_list("name", flat=True))  # fmt: skip

    assert in_order() == ["v1", "s1", "v2", "s2"]
    # Two hours of vision's job on all 16 boards: speech, below its share, comes first.
    searches.clear()
    db._quiet = None
    result = run_pass(now=start + timedelta(hours=2))
    assert result.ran and not result.quiet and result.admitted == []
    assert in_order() == ["s1", "s2", "v1", "v2"]
    assert searches == []
    # Every promise kept, whatever the order (SPEC G3: the bound stays a guarantee).
    assert {name: Job.objects.get(pk=job.pk).latest_start for name, job in waiting.items()} == (
        promised
    )
    # It wrote the new order; the next pass changes nothing, and the one after is skipped.
    run_pass(now=start + timedelta(hours=2, seconds=5))
    assert searches == [] and db._quiet is not None
    assert run_pass(now=start + timedelta(hours=2, seconds=10)).quiet


@pytest.mark.django_db(transaction=True)
def test_a_pass_sends_only_the_standings_that_changed(alice, vision, specs):
    """The standing of every waiting job is compared with what the state read: a submission
    at the end of the queue sends the newcomer's alone, a pass that changes nothing none."""
    for i in range(4):
        JobFactory(owner=alice, project=vision, name=f"w{i}", nodes_asked=2, mode="pytorch",
                   specs=[specs[8]])  # fmt: skip
    sent: list[list[int]] = []

    def spy(execute, sql, params, many, context):
        if sql.lstrip().startswith("WITH changed AS"):
            sent.append(list(params[0]))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        run_pass()
        first = Job.objects.filter(phase=Phase.QUEUED).order_by("standing__position")
        assert len(sent) == 1 and sorted(sent[0]) == sorted(first.values_list("pk", flat=True))
        db._quiet = None
        run_pass()  # nothing changed: nothing sent, and the pass is the quiet one
        assert len(sent) == 1 and db._quiet is not None
        late = JobFactory(owner=alice, project=vision, name="late", nodes_asked=2,
                          mode="pytorch", specs=[specs[8]])  # fmt: skip
        run_pass()
        assert sent[1:] == [[late.pk]]
    late.refresh_from_db()
    assert late.queue_position == 4 and late.latest_start is not None and late.wait_reason
    # What is stored reads back as what the pass compares it with: nothing sent next time.
    db._quiet = None
    with connection.execute_wrapper(spy):
        run_pass()
    assert len(sent) == 2


@pytest.mark.django_db(transaction=True)
def test_a_pass_starts_from_the_profile_the_last_one_left(alice, vision, specs, monkeypatch):
    from jobs.scheduling import rebook

    installs, kept = [], []
    install = rebook.install

    def recorded(profile, holding, held, in_place=frozenset()):
        kept.append(set(in_place))
        installs.append((profile, install(profile, holding, held, in_place)))
        return installs[-1][1]

    monkeypatch.setattr(rebook, "install", recorded)
    first = JobFactory(owner=alice, project=vision, name="first", nodes_asked=2,
                       mode="pytorch", specs=[specs[8]])  # fmt: skip
    waiting = JobFactory(owner=alice, project=vision, name="waiting", nodes_asked=2,
                         mode="pytorch", specs=[specs[8]])  # fmt: skip
    assert run_pass().admitted == [first.pk]
    left = db._profile
    assert left is not None and installs == []  # the process's first pass: made afresh
    # A job more comes: the next pass starts from that profile, and plans as a fresh one.
    JobFactory(owner=alice, project=vision, name="later", nodes_asked=1, mode="pytorch",
               specs=[specs[4]])  # fmt: skip
    assert run_pass().admitted == []
    assert installs == [(left, True)] and db._profile is left
    # The waiting job's reservation, read back from its row, is the one the profile holds:
    # left there as it is, not booked again.
    assert kept == [{waiting.pk}]
    planned = dict(
        Job.objects.filter(phase=Phase.QUEUED).values_list("pk", "standing__latest_start")
    )
    db._profile = db._quiet = None  # planned afresh, in full
    run_pass()
    assert dict(
        Job.objects.filter(phase=Phase.QUEUED).values_list("pk", "standing__latest_start")
    ) == (planned)
    assert waiting.pk in planned


@pytest.mark.django_db(transaction=True)
def test_a_pass_that_fails_leaves_no_profile_behind(alice, vision, specs, monkeypatch):
    JobFactory(owner=alice, project=vision, name="first", nodes_asked=2, mode="pytorch",
               specs=[specs[8]])  # fmt: skip
    run_pass()
    assert db._profile is not None

    def fail(*args, **kwargs):
        raise RuntimeError("the pass broke")

    monkeypatch.setattr(db, "record", fail)
    with pytest.raises(RuntimeError):
        run_pass()
    assert db._profile is None  # changed by the failed pass: the next one books afresh
