"""``manage.py schedule_once [--dry-run]``: one admission pass now, as the worker's admission
task runs it, and in plain words what it admitted and how many jobs stay queued.

The pass only decides: the jobs it admits are started by the worker (its sync launches an
admitted job that nothing launched within seconds), so this command never runs a job's
processes as whoever typed it. ``--dry-run`` asks the same planner on the queue as it is and
writes nothing (no admission, no queue timeout, no reasons stored).
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Iterator

from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.utils import translation

from console.busy import unavailable
from jobs.admission.admit import admission_pass
from jobs.admission.state import load
from jobs.faults.reclaim import reclaim
from jobs.models import Job
from jobs.scheduling import passes
from resources.models import Allocation, NodeSpec


def _many(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@contextlib.contextmanager
def _pool_quiet() -> Iterator[None]:
    """The connection pool's own warnings off while the command runs: each failed attempt
    would print a paragraph before the command's one line says the same."""
    logger = logging.getLogger("psycopg.pool")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class Command(BaseCommand):
    help = (
        "Run one admission pass now (what the worker does every few seconds) and say what it "
        "admitted and how many jobs stay queued. --dry-run: what it would admit, nothing written."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run", action="store_true", help="plan the pass without writing anything"
        )

    def handle(self, *args, **options):
        # The shell speaks English, whatever the site's default language.
        with translation.override("en"), _pool_quiet():
            try:
                lines = self._dry_run() if options["dry_run"] else self._run()
            except Exception as error:
                if not unavailable(error):
                    raise
                # The pool goes too, before its warnings are let through again: its own
                # thread would go on trying to connect, and say so on the way out.
                if getattr(connection, "pool", None) is not None:
                    connection.close_pool()
                # One line, not a trace: the operator's next step is the server, not the code.
                first = (str(error).strip().splitlines() or [type(error).__name__])[0]
                raise CommandError(
                    f"The database does not answer ({first}): no admission pass ran to its end."
                ) from error
        for line in lines:
            self.stdout.write(line)

    def _run(self) -> list[str]:
        result = admission_pass()
        if result.ran and not result.quiet:
            reclaim()  # as the worker's pass does (SPEC G2)
        if not result.ran:
            return ["Another admission pass is running just now: this one did nothing."]
        held = Counter(
            Allocation.objects.live()
            .filter(holder_kind=Allocation.Holder.JOB, holder_id__in=result.admitted)
            .values_list("holder_id", flat=True)
        )
        jobs = Job.objects.filter(pk__in=result.admitted).values_list("pk", "name", "spec__name")
        rows = {pk: (name, spec, held[pk]) for pk, name, spec in jobs}
        admitted = [(pk, *rows[pk]) for pk in result.admitted if pk in rows]
        return _said(admitted, result.queued, dry_run=False)

    def _dry_run(self) -> list[str]:
        state = load()
        plan = state.plan(passes.schedule)
        specs = dict(NodeSpec.objects.values_list("pk", "name"))
        admitted = [
            (a.job_id, state.names[a.job_id], specs.get(a.spec_id, a.spec_id), len(a.placements))
            for a in plan.admissions
        ]
        return _said(admitted, len(state.queue) - len(admitted), dry_run=True)


def _said(admitted: list[tuple], queued: int, *, dry_run: bool) -> list[str]:
    """The pass in plain words: each admitted job (id, name, spec, nodes), then the rest."""
    verb = "Would admit" if dry_run else "Admitted"
    if not admitted:
        lines = [f"{verb} no job."]
    else:
        lines = [f"{verb} {_many(len(admitted), 'job')}:"]
        lines += [
            f"  {name} (#{pk}) on {spec}, {_many(nodes, 'node')}"
            for pk, name, spec, nodes in admitted
        ]
    stay = "would stay" if dry_run else ("stays" if queued == 1 else "stay")
    lines.append(f"{_many(queued, 'job')} {stay} queued.")
    if dry_run:
        lines.append("Dry run: nothing was written.")
    elif admitted:
        lines.append("The worker starts them at its next sync, about ten seconds from now.")
    return lines
