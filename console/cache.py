"""The cache in the broker's Redis, tolerant of that Redis being away.

Everything the console caches is also in the database (settings) or may be lost (the fault
watch's notes, the rate limits' counts, which fail open): while Redis restarts, a read finds
nothing and a write is dropped, so pages go on working instead of failing with it.
"""

from __future__ import annotations

import logging
import time

from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeout

log = logging.getLogger(__name__)

AWAY = (RedisConnectionError, RedisTimeout, OSError)
# One warning in this many seconds, not one per request.
WARN_EVERY_SECONDS = 30.0


def _tolerant(name: str, default):
    """RedisCache's method ``name``, answering ``default`` while Redis is away."""

    def method(self, *args, **kwargs):
        try:
            return getattr(RedisCache, name)(self, *args, **kwargs)
        except AWAY as error:
            return self._away(name, error, default)

    method.__name__ = name
    return method


class TolerantRedisCache(RedisCache):
    _warned_at = 0.0

    def _away(self, operation: str, error: Exception, default):
        now = time.monotonic()
        if now - TolerantRedisCache._warned_at > WARN_EVERY_SECONDS:
            TolerantRedisCache._warned_at = now
            log.warning(
                "The cache is not answering (%s: %s): going on without it", operation, error
            )
        return default

    def get(self, key, default=None, version=None):
        try:
            return super().get(key, default, version)
        except AWAY as error:
            return self._away("get", error, default)

    get_many = _tolerant("get_many", {})
    has_key = _tolerant("has_key", False)
    add = _tolerant("add", False)
    set = _tolerant("set", None)
    touch = _tolerant("touch", False)
    delete = _tolerant("delete", False)
