"""A load generator for the console as `make run` starts it, shared by `make bench` (the
``load`` benchmark) and the slow tests that hold it under load (tests/smoke).

* :class:`ConsoleUnderTest` starts ``python -m console.supervisor`` on a bare environment in
  a folder of its own and finds the embedded servers' processes;
* :class:`User` is one logged-in browser: a session of a demo account;
* :func:`run_load` runs many of them at once over :data:`MIX` and returns a
  :class:`LoadResult` (latencies, statuses, and the server's gauges over time).

Every request goes to 127.0.0.1, with a timeout; the load is bounded in time and count.
"""

from tests.load.browser import LoadError, Sample, User
from tests.load.run import LoadResult, log_in_all, run_load
from tests.load.server import ConsoleUnderTest

__all__ = [
    "ConsoleUnderTest",
    "LoadError",
    "LoadResult",
    "Sample",
    "User",
    "log_in_all",
    "run_load",
]
