import time

from celery.signals import beat_init

from console.models import Heartbeat
from console.tasks import heartbeat
from tests.helpers import wait_until


def scheduler_rows():
    return Heartbeat.objects.filter(name=Heartbeat.SCHEDULER)


def test_heartbeat_runs_on_the_real_worker(celery_worker):
    assert not scheduler_rows().exists()
    heartbeat.delay()
    # The task writes the scheduler's row, then the worker's: wait for both.
    wait_until(lambda: Heartbeat.objects.count() == 2)
    assert scheduler_rows().get().alive
    assert Heartbeat.objects.get(name=Heartbeat.WORKER).alive


def test_beat_starting_sends_a_heartbeat_at_once(celery_worker):
    """The first scheduled one is due a whole period after beat starts: a console just
    started would say for that long that its scheduler is not running."""
    assert not scheduler_rows().exists()
    beat_init.send(sender=None)
    assert wait_until(lambda: scheduler_rows().first()).alive


def test_duplicate_delivery_is_harmless(celery_worker):
    heartbeat.delay()
    heartbeat.delay()
    first = wait_until(lambda: scheduler_rows().first())
    time.sleep(0.5)
    assert scheduler_rows().count() == 1
    assert scheduler_rows().get().seen_at >= first.seen_at
