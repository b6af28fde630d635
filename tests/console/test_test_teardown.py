"""The suite's own teardown: a session a test's thread left open never keeps the test
database from being dropped (``end_other_sessions`` in tests/helpers.py)."""

from __future__ import annotations

import threading
import time

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections

from tests.helpers import end_other_sessions


@pytest.mark.django_db(transaction=True)
def test_a_session_left_open_by_a_thread_is_ended_and_named():
    ran, release, pids = threading.Event(), threading.Event(), []

    def work():  # a thread that keeps its connection open, as a server's may
        User.objects.count()
        pids.append(connection.connection.info.backend_pid)
        ran.set()
        release.wait(30)
        connections.close_all()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    assert ran.wait(30)
    alive = "SELECT count(*) FROM pg_stat_activity WHERE pid = %s"
    with connection.cursor() as cursor:
        cursor.execute(alive, pids)
        assert cursor.fetchone()[0] == 1
    # Only that session: the rest of this test process's (its servers') stay connected.
    with pytest.warns(UserWarning, match='a session left open .*FROM "auth_user"'):
        end_other_sessions(connection, only=pids)
    for _ in range(100):  # a terminated backend leaves the view once it has exited
        with connection.cursor() as cursor:  # this one reconnects
            cursor.execute(alive, pids)
            if cursor.fetchone()[0] == 0:
                break
        time.sleep(0.05)
    else:
        pytest.fail(f"session {pids[0]} is still there")
    release.set()
    thread.join(30)
