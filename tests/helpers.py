"""Small helpers for tests that wait on real processes."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], object], timeout: float = 20, interval: float = 0.1):
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout}s: {condition}")
        time.sleep(interval)


def settings_form_data(**overrides) -> dict:
    """A whole POST of the /settings/ form: every limit at its default, plus overrides."""
    from console import limits

    data: dict = {}
    for limit in limits.LIMITS:
        value = overrides.get(limit.name, limit.default)
        if limit.kind == "bool":
            if value:
                data[limit.name] = "on"
        elif limit.kind == "int_list" and not isinstance(value, str):
            data[limit.name] = ", ".join(map(str, value))
        else:
            data[limit.name] = value
    return data
