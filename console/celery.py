"""The Celery application: the worker and beat processes of the console."""

import logging
import os

from celery import Celery, Task
from celery.signals import after_setup_logger, beat_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

log = logging.getLogger(__name__)

# An outage's retries back off up to this many seconds apart, this many times (about ten
# minutes in all): a stop or a clean-up asked for during an outage still happens after it.
RETRY_MAX_SECONDS = 30
RETRY_TIMES = 25


class ConsoleTask(Task):
    """Every task of the console: one that meets a database or broker that cannot answer
    (console/busy.py) is not a failure with a trace. A task beat sends every few seconds
    leaves it to the next send; any other task tries again, backing off, until it is
    done."""

    def __call__(self, *args, **kwargs):
        try:
            return super().__call__(*args, **kwargs)
        except Exception as error:
            from console import busy

            if self.request.called_directly or self.request.is_eager:
                raise
            if not busy.unavailable(error):
                raise
            if self._periodic():
                log.warning("%s skipped, the next run tries again: %s", self.name, error)
                return None
            countdown = min(RETRY_MAX_SECONDS, 2 ** (self.request.retries or 0))
            raise self.retry(exc=error, countdown=countdown, max_retries=RETRY_TIMES) from None

    def _periodic(self) -> bool:
        schedule = self.app.conf.beat_schedule or {}
        return any(entry.get("task") == self.name for entry in schedule.values())


app = Celery("console", task_cls=ConsoleTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def send(task, *args, countdown: float | None = None) -> bool:
    """Queue ``task`` (a task, or its name: code below the worker's entry points names the
    task rather than importing it) with ``args``; False when the broker cannot take it just
    now.

    Whatever asks through here has its work written in the database first, and a beat
    pass (admission, sync) finds it again: a request must not fail after its change was
    saved (a user retrying would do it twice) because the broker is away for a moment."""
    from celery import current_app

    from console import busy

    if isinstance(task, str):
        if task not in current_app.tasks:
            # A web process has not imported the apps' task modules: their autodiscovery
            # runs on this signal (a worker's start sends it).
            current_app.loader.import_default_modules()
        task = current_app.tasks[task]
    try:
        task.apply_async(args, countdown=countdown)
    except Exception as error:
        if not busy.unavailable(error):
            raise
        log.warning("could not queue %s, a later pass does its work: %s", task.name, error)
        return False
    return True


@after_setup_logger.connect
def _quiet_routine_tasks(**_kwargs) -> None:
    """Beat sends a task every two seconds: "received", "succeeded" and "sending due task"
    lines for each would bury what matters in `make run`'s output (--loglevel DEBUG shows
    them)."""
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        for name in ("celery.app.trace", "celery.worker.strategy", "celery.beat"):
            logging.getLogger(name).setLevel(logging.WARNING)


@beat_init.connect
def _heartbeat_at_start(**_kwargs) -> None:
    """Beat's first heartbeat is due a whole period after it starts: until then the dashboard
    of a console just started said the scheduler was not running. One sent at once, through
    the broker and the worker as every later one, says so as soon as the worker has run it."""
    send("console.tasks.heartbeat")
