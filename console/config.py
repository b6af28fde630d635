"""Reading settings from the environment.

Every value the console takes from the environment goes through one of these readers, so a
bad value stops start-up with one line that names the variable instead of a traceback deep
inside Django or Celery.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit


class ConfigError(Exception):
    """A variable of the environment has a value the console cannot use."""

    def __init__(self, variable: str, problem: str):
        self.variable = variable
        self.problem = problem
        super().__init__(f"{variable}: {problem}")


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(name, f"expected true or false, got {raw!r}")


def env_int(name: str, default: int, *, low: int | None = None, high: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(name, f"expected a whole number, got {raw!r}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(name, f"expected a number from {low} to {high}, got {value}")
    return value


def env_choice(name: str, default: str, choices: list[str]) -> str:
    value = env_str(name, default)
    if value not in choices:
        raise ConfigError(name, f"expected one of {', '.join(choices)}, got {value!r}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


HEADER_NAME = re.compile(r"[A-Za-z0-9]+(-[A-Za-z0-9]+)*")


def env_header(name: str, default: str = "") -> str | None:
    """An HTTP header named in the environment, as Django's ``request.META`` key
    (``X-Forwarded-For`` -> ``HTTP_X_FORWARDED_FOR``); None when unset or "off"."""
    raw = env_str(name, default)
    if raw.lower() in {"", "off", "none"}:
        return None
    if not HEADER_NAME.fullmatch(raw):
        raise ConfigError(name, f"expected a header name such as X-Forwarded-For, got {raw!r}")
    return "HTTP_" + raw.upper().replace("-", "_")


def env_origins(name: str) -> list[str]:
    """Origins such as ``https://console.example.com`` (Django refuses them without a scheme)."""
    origins = env_list(name, [])
    for origin in origins:
        if not origin.startswith(("http://", "https://")) or origin.count("/") != 2:
            raise ConfigError(
                name, f"expected origins such as https://console.example.com, got {origin!r}"
            )
    return origins


def env_site_url(name: str) -> str:
    """Where users reach the console, e.g. ``https://console.example.com`` (links in emails);
    empty when unset (the links are then paths only)."""
    url = env_str(name).rstrip("/")
    if url and (not url.startswith(("http://", "https://")) or url.count("/") != 2):
        raise ConfigError(
            name, f"expected an address such as https://console.example.com, got {url!r}"
        )
    return url


def env_rate(name: str, default: tuple[int, int]) -> tuple[int, int]:
    """A rate limit written ``COUNT/SECONDS``, e.g. ``30/60``: at most 30 in each minute."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    match = re.fullmatch(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*", raw)
    if match is None:
        raise ConfigError(name, f"expected COUNT/SECONDS such as 30/60, got {raw!r}")
    count, seconds = int(match[1]), int(match[2])
    if count < 1 or seconds < 1:
        raise ConfigError(name, f"expected a count and seconds of at least 1, got {raw!r}")
    return count, seconds


def check_secret_key(name: str, key: str) -> str:
    """Django's own rule for a key fit for production: long and not repetitive."""
    if len(key) < 50 or len(set(key)) < 5 or key.startswith("django-insecure-"):
        raise ConfigError(
            name, "too weak for production: use at least 50 random characters "
            "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))')"
        )  # fmt: skip
    return key


@dataclass(frozen=True)
class DatabaseURL:
    name: str
    user: str
    password: str
    host: str
    port: str

    def django(self, pool: dict | None = None) -> dict:
        """Django's DATABASES entry; with ``pool`` (console/dbpool.py), connections come
        from a bounded pool and none outlives its request or task."""
        entry = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": self.name,
            "USER": self.user,
            "PASSWORD": self.password,
            "HOST": self.host,
            "PORT": self.port,
            "CONN_MAX_AGE": 0 if pool else 60,
            # With a pool, a lent connection is checked first, so one the server dropped
            # (a restart) is replaced rather than failing the request.
            "CONN_HEALTH_CHECKS": True,
            # Every choice list of a form reads its rows with QuerySet.iterator(), which on
            # PostgreSQL declares a server-side cursor, fetches and closes it: three round
            # trips instead of one, a dozen times on the job form. Nothing here reads more
            # rows than it can hold, so plain client-side reads are kept throughout.
            "DISABLE_SERVER_SIDE_CURSORS": True,
        }
        if pool:
            entry["OPTIONS"] = {"pool": pool}
        return entry


def parse_database_url(variable: str, url: str) -> DatabaseURL:
    """Parse ``postgres://user:pass@host:port/db`` (host may also be ``?host=/socket/dir``)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ConfigError(variable, f"not a valid URL ({exc})") from None
    if parts.scheme not in {"postgres", "postgresql"}:
        raise ConfigError(
            variable, f"expected a postgres:// URL, got scheme {parts.scheme or 'none'!r}"
        )
    query = parse_qs(parts.query)
    host = unquote(parts.hostname or "") or query.get("host", [""])[0]
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ConfigError(variable, "the URL names no database (postgres://host/DATABASE)")
    if not host:
        raise ConfigError(variable, "the URL names no host (postgres://HOST/database)")
    return DatabaseURL(
        name=name,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        host=host,
        port=str(port or ""),
    )


def check_broker_url(variable: str, url: str) -> str:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise ConfigError(variable, f"not a valid URL ({exc})") from None
    if parts.scheme not in {"redis", "rediss", "redis+socket", "amqp", "pyamqp"}:
        raise ConfigError(
            variable,
            f"expected a redis://, redis+socket:// or amqp:// URL, got {parts.scheme or 'none'!r}",
        )
    if parts.scheme == "redis+socket" and not parts.path:
        raise ConfigError(variable, "a redis+socket:// URL needs the socket's path")
    if parts.scheme != "redis+socket" and not parts.hostname:
        raise ConfigError(variable, "the URL names no host")
    return url
