"""Database calls from the ASGI code outside Django's views (the tools' proxy, the debug
terminal's socket).

Django gives a view's connection back to the pool when its request ends. Code outside a
request runs its database calls in one thread shared by every such call of the process
(asgiref's thread-sensitive executor), whose connection nothing would give back: it would
hold a place in the pool for good, and after a database restart stay broken for good.
``run_sync`` gives it back after each call.
"""

from __future__ import annotations

import functools

from asgiref.sync import sync_to_async
from django.db import close_old_connections


def _closing(function):
    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        finally:
            close_old_connections()

    return call


async def run_sync(function, *args, **kwargs):
    """``function(*args, **kwargs)`` in Django's thread for database calls, its connection
    given back to the pool afterwards."""
    return await sync_to_async(_closing(function))(*args, **kwargs)


def release_pool() -> None:
    """Give this thread's connection back and close the process's pool: for a process that
    forks after using the database (the Celery worker's own process, whose children would
    inherit the pool's open connections and threads)."""
    import threading

    from django.db import connection

    if threading.current_thread() is not threading.main_thread():
        return  # a worker run in a thread (the tests') shares the pool with the others
    connection.close()
    connection.close_pool()
