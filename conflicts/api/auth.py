"""Who may call the API and how often: a bearer token of one knowledge base holding the operation's scope,
and a per-token rate limit."""
from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.core.cache import cache
from ninja.errors import AuthorizationError
from ninja.security import HttpBearer
from ninja.throttling import BaseThrottle

from conflicts import services

logger = logging.getLogger(__name__)


class TokenAuth(HttpBearer):
    """A live token of this knowledge base holding `scope` (else 403 naming it)."""

    def __init__(self, scope: str):
        self.scope = str(scope.value if hasattr(scope, "value") else scope)
        super().__init__()

    def authenticate(self, request, token):
        api_token = services.api_token_authenticate(secret=token)
        if api_token is None:
            return None
        if self.scope not in api_token.scopes:
            raise AuthorizationError(message=f"this token lacks the scope {self.scope!r}")
        request.knowledge_base = api_token.knowledge_base
        return api_token


class _ProcessWindowCounter:
    """Fixed-window counts held in this process: the limiter's fallback while the shared cache is down,
    so an outage of Redis neither refuses every request nor lifts the limit."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._window = -1

    def incr(self, key: str, window_index: int) -> int:
        with self._lock:
            if window_index != self._window:  # a new window: earlier counts are over
                self._counts.clear()
                self._window = window_index
            self._counts[key] = self._counts.get(key, 0) + 1
            return self._counts[key]


class TokenRateLimit(BaseThrottle):
    """At most API_RATE_LIMIT requests per API_RATE_WINDOW_S seconds per token (fixed windows, counted in
    Django's cache: Redis when REDIS_URL is set, so every web process shares the count). Over it: 429
    with Retry-After, the seconds until the window ends. While the cache cannot be reached the count
    is kept per process (logged once per outage), so turns are still accepted."""

    _fallback = _ProcessWindowCounter()
    _cache_down = False

    def allow_request(self, request) -> bool:
        limit, window = settings.API_RATE_LIMIT, settings.API_RATE_WINDOW_S
        if not limit or getattr(request, "auth", None) is None:
            return True
        window_index = int(time.time() // window)
        key = f"api-rate:{request.auth.pk}:{window_index}"
        try:
            count = self._shared_count(key, window)
        except Exception as exc:  # any cache backend error: Redis refused, timed out, or lost mid-call
            if not TokenRateLimit._cache_down:
                TokenRateLimit._cache_down = True
                logger.warning("rate limit: the shared cache is unavailable (%s); counting per process", exc)
            count = self._fallback.incr(key, window_index)
        else:
            if TokenRateLimit._cache_down:
                TokenRateLimit._cache_down = False
                logger.warning("rate limit: the shared cache is back; counting in it again")
        return count <= limit

    @staticmethod
    def _shared_count(key: str, window: int) -> int:
        cache.add(key, 0, timeout=window + 1)
        try:
            return cache.incr(key)
        except ValueError:  # expired between add and incr: a new window
            cache.add(key, 1, timeout=window + 1)
            return 1

    def wait(self) -> float:
        window = settings.API_RATE_WINDOW_S
        return window - (time.time() % window)
