"""Busy is not broken: a page that cannot get a database connection answers 503 with
"try again" (English and Chinese) and ``Retry-After``, never a 500 with a trace; tasks and
queued work ride out a server that does not answer.

The outages here are real: every connection of the real pool lent out, a broker address
where nothing listens, a database port where nothing listens.
"""

from __future__ import annotations

import logging
import threading
import time

import psycopg
import pytest
from celery import Celery
from celery.signals import task_retry, task_success
from django.db import OperationalError, connection

from console import busy, dbpool
from console.celery import ConsoleTask, app, send

NOBODY = "postgresql://postgres@127.0.0.1:1/none"


def real_outage() -> psycopg.OperationalError:
    """What psycopg raises for a server that does not answer."""
    try:
        psycopg.connect(NOBODY, connect_timeout=2)
    except psycopg.OperationalError as error:
        return error
    raise AssertionError("something answered on port 1")


# Seconds a request waits for a connection of the small pool: long while the test sets
# up (a connection made on a machine busy with the other test process once took more than
# a second, and the fixture failed before the test began), one once every connection is
# lent out, so that the busy page comes at once.
PATIENT, BUSY_WAIT = 30.0, 1.0


@pytest.fixture
def small_pool(transactional_db):
    """The real pool, two connections; ``hold()`` lends them all, and a request then waits a
    second for one."""
    options = connection.settings_dict["OPTIONS"]["pool"]
    saved = dict(options)
    options.update(max_size=2, timeout=PATIENT)
    connection.close()
    connection.close_pool()
    held = []

    class Pool:
        def hold(self):
            connection.close()  # this thread's own goes back first
            pool = connection.pool
            pool.open()
            held.extend(pool.getconn() for _ in range(options["max_size"]))
            pool.timeout = BUSY_WAIT  # the pool every thread's requests use

        def release(self):
            if held:  # hold() shortened the wait
                connection.pool.timeout = PATIENT
            while held:
                connection.pool.putconn(held.pop())

    yield Pool()
    Pool().release()
    options.clear()
    options.update(saved)
    connection.close()
    connection.close_pool()


def test_a_full_pool_answers_503_and_the_page_comes_back(small_pool, http, alice):
    session = http(alice)
    assert session.get("/jobs/").status_code == 200
    small_pool.hold()
    busy_page = session.get("/jobs/")
    assert busy_page.status_code == 503
    assert busy_page.headers["Retry-After"] == str(busy.RETRY_AFTER_SECONDS)
    assert "The console is busy" in busy_page.text
    assert "Traceback" not in busy_page.text
    # A page met with GET tries again by itself.
    assert f'http-equiv="refresh" content="{busy.RETRY_AFTER_SECONDS}"' in busy_page.text
    small_pool.release()
    assert session.get("/jobs/").status_code == 200


def test_the_busy_page_speaks_chinese(small_pool, http, alice):
    session = http(alice)
    small_pool.hold()
    page = session.get("/queue/", headers={"Accept-Language": "zh-hans"})
    assert page.status_code == 503
    assert "控制台繁忙" in page.text and 'lang="zh-hans"' in page.text


def test_a_form_sent_while_busy_is_told_it_may_not_be_saved(small_pool, http, alice):
    session = http(alice)
    small_pool.hold()
    sent = session.post("/jobs/new/", data={"name": "kept-by-the-browser"})
    assert sent.status_code == 503
    assert "may not have been saved" in sent.text
    # No refresh: it would send the browser away from the form it can go back to.
    assert "http-equiv" not in sent.text


def test_an_htmx_poll_that_meets_a_busy_server_leaves_the_page_as_it_was(small_pool, http, alice):
    session = http(alice)
    small_pool.hold()
    poll = session.get("/jobs/", headers={"HX-Request": "true"})
    assert poll.status_code == 503
    assert poll.headers["HX-Reswap"] == "none"


def test_unavailable_tells_an_outage_from_a_bug():
    outage = real_outage()
    assert busy.unavailable(outage)
    try:
        try:
            raise OperationalError(str(outage)) from outage
        except OperationalError:
            # What fails next while handling it (a session saved on the way out) is the
            # same outage.
            raise AttributeError("'SessionStore' object has no attribute '_session_cache'")  # noqa: B904
    except AttributeError as chained:
        assert busy.unavailable(chained)
    assert not busy.unavailable(ValueError("a bug"))
    assert not busy.unavailable(None)


def test_an_outage_is_logged_in_one_line_without_a_trace():
    try:
        raise real_outage()
    except psycopg.OperationalError:
        import sys

        record = logging.LogRecord(
            "django.request", logging.ERROR, __file__, 1, "Service Unavailable: %s", ("/jobs/",),
            sys.exc_info(),
        )  # fmt: skip
    assert busy.OutageLogFilter().filter(record)
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert record.getMessage().startswith("Service Unavailable: /jobs/ (server unavailable:")
    bug = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "x", (), None)
    try:
        raise ValueError("a bug")
    except ValueError:
        import sys

        bug.exc_info = sys.exc_info()
    busy.OutageLogFilter().filter(bug)
    assert bug.levelno == logging.ERROR and bug.exc_info is not None


def test_work_queued_while_the_broker_is_away_is_left_to_the_next_pass(monkeypatch):
    # Celery reads the broker from this variable before any app's own setting.
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    # Not the current app: the tests after this one in the process queue on the real one.
    away = Celery(
        "away", broker="redis://127.0.0.1:1/0", task_cls=ConsoleTask, set_as_current=False
    )
    away.conf.broker_connection_timeout = 1

    @away.task(name="tests.away")
    def nothing():
        return None

    started = time.monotonic()
    assert send(nothing) is False
    assert time.monotonic() - started < 15


@app.task(name="tests.console.meets_an_outage")
def meets_an_outage(marker: str) -> str:
    raise OperationalError(str(real_outage())) from real_outage()


def _signalled(signal, sender_name: str, count: int = 1, seconds: float = 20):
    seen = []
    done = threading.Event()

    def receiver(sender=None, **kwargs):
        name = getattr(sender, "name", None) or getattr(kwargs.get("request"), "task", None)
        if name == sender_name:
            seen.append(kwargs)
            if len(seen) >= count:
                done.set()

    signal.connect(receiver, weak=False)
    return seen, done, lambda: signal.disconnect(receiver)


def test_a_periodic_task_that_meets_an_outage_is_skipped_not_failed(celery_worker, settings):
    app.conf.beat_schedule = {**app.conf.beat_schedule, "probe": {"task": meets_an_outage.name}}
    seen, done, stop = _signalled(task_success, meets_an_outage.name)
    try:
        meets_an_outage.delay("periodic")
        assert done.wait(20), "the task neither succeeded nor was skipped"
        assert seen[0]["result"] is None
    finally:
        stop()
        app.conf.beat_schedule.pop("probe", None)


def test_any_other_task_that_meets_an_outage_tries_again(celery_worker):
    _seen, done, stop = _signalled(task_retry, meets_an_outage.name, count=2)
    try:
        meets_an_outage.delay("once")
        assert done.wait(20), "the task was not retried"
    finally:
        stop()


class TestLayout:
    def test_the_layout_fits_the_default_server(self):
        layout = dbpool.Layout(web_workers=2, web_pool=10, worker_concurrency=2)
        assert layout.needed() == 2 * 10 + 2 + dbpool.FIXED
        assert layout.problem(100) is None

    def test_a_layout_too_large_for_the_server_says_what_to_change(self):
        layout = dbpool.Layout(web_workers=8, web_pool=20, worker_concurrency=4)
        problem = layout.problem(100)
        assert "167 database connections" in problem and "97" in problem
        assert "DB_POOL_SIZE" in problem and "max_connections" in problem

    def test_the_pool_is_bounded_and_gives_up_on_a_dead_server_quickly(self, monkeypatch):
        monkeypatch.setenv("DB_POOL_SIZE", "7")
        monkeypatch.setenv("DB_POOL_TIMEOUT", "3")
        options = dbpool.pool_options()
        assert options["max_size"] == 7 and options["timeout"] == 3.0
        assert options["reconnect_timeout"] <= options["timeout"]
