"""API tokens: the secret is shown once; only its SHA-256 is stored. Creating and revoking a token, and
every use of a revoked or expired one, are audited."""
from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import threading
import time
from collections import OrderedDict

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from articles.audit import audit_event_record
from articles.models import AuditAction, KnowledgeBase
from conflicts.models import ApiToken, TokenScope

TOKEN_PREFIX = "kbr_"
# A refused token hammering the API writes one audit row per this many seconds, not one per request.
REFUSED_USE_AUDIT_EVERY_S = 60
# "Last used" is stamped at most once a minute (the ops page shows it to the minute): a chatbot posting
# many turns a second must not queue every request behind a write to the same token row.
LAST_USED_EVERY = dt.timedelta(seconds=60)


TOKEN_CACHE_ENTRIES = 1024


class TokenRows:
    """Live token rows this process looked up, by hashed secret, for API_TOKEN_CACHE_S seconds: a chatbot
    posting many turns a second with one token would otherwise read the same row on every request.

    What a cached row can miss is bounded by that TTL: a revocation made in this process (api_token_revoke)
    takes effect at once, one made by another process (another web worker, a management command, SQL) within
    API_TOKEN_CACHE_S seconds, as does any other change to the row. Expiry is checked on every use. Only live
    tokens are kept: unknown, revoked and expired ones go to the database (and the audit) every time."""

    def __init__(self, *, max_entries: int = TOKEN_CACHE_ENTRIES, clock=time.monotonic) -> None:
        self.max_entries, self.clock = max_entries, clock
        self._rows: OrderedDict[str, tuple[float, ApiToken]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, token_hash: str) -> ApiToken | None:
        ttl = settings.API_TOKEN_CACHE_S
        with self._lock:
            entry = self._rows.get(token_hash)
            if entry is None or ttl <= 0 or self.clock() - entry[0] >= ttl:
                return None
            return entry[1]

    def keep(self, token_hash: str, token: ApiToken) -> None:
        if settings.API_TOKEN_CACHE_S <= 0:
            return
        with self._lock:
            self._rows[token_hash] = (self.clock(), token)
            self._rows.move_to_end(token_hash)
            while len(self._rows) > self.max_entries:
                self._rows.popitem(last=False)

    def forget(self, *, token_id: int) -> None:
        with self._lock:
            for token_hash in [h for h, (_, row) in self._rows.items() if row.pk == token_id]:
                del self._rows[token_hash]

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()


token_rows = TokenRows()


class TokenInputError(ValueError):
    """Scopes or expiry a token cannot have; nothing was written."""


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def api_token_create(
    *,
    knowledge_base: KnowledgeBase,
    name: str,
    actor=None,
    scopes: list[str] | None = None,
    expires_at: dt.datetime | None = None,
) -> tuple[ApiToken, str]:
    """Returns the token row and the secret, which is never stored and cannot be shown again.
    `scopes` defaults to all of them; `expires_at` None means until revoked."""
    scopes = list(TokenScope.values) if scopes is None else sorted(set(scopes))
    unknown = sorted(set(scopes) - set(TokenScope.values))
    if unknown or not scopes:
        problem = f"unknown scope(s) {', '.join(unknown)}" if unknown else "a token needs at least one scope"
        raise TokenInputError(f"{problem} (choose from {', '.join(TokenScope.values)})")
    if expires_at is not None and expires_at <= timezone.now():
        raise TokenInputError("the expiry must be in the future")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(
            knowledge_base=knowledge_base,
            name=name,
            prefix=secret[:12],
            token_hash=_hash(secret),
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
            scopes=scopes,
            expires_at=expires_at,
        )
        audit_event_record(
            action=AuditAction.TOKEN_CREATED, target=token, knowledge_base=knowledge_base, actor=actor,
            scopes=scopes, expires_at=expires_at.isoformat() if expires_at else None,
        )
    return token, secret


def api_token_authenticate(*, secret: str) -> ApiToken | None:
    """The live token for `secret`, its last use stamped; None for unknown, revoked or expired ones
    (the latter two audited). The row may come from this process's TokenRows (see there what it can miss)."""
    token_hash = _hash(secret)
    now = timezone.now()
    token = token_rows.get(token_hash)
    if token is not None and not (token.expires_at and token.expires_at <= now):
        _stamp_last_use(token, now)
        return token
    token = ApiToken.objects.select_related("knowledge_base").filter(token_hash=token_hash).first()
    if token is None:
        return None
    refused = "revoked" if token.revoked_at is not None else "expired" if token.expires_at and token.expires_at <= now else ""
    if refused:
        if cache.add(f"api-token-refused-audit:{token.pk}", 1, timeout=REFUSED_USE_AUDIT_EVERY_S):
            audit_event_record(
                action=AuditAction.TOKEN_REVOKED_USE, target=token, knowledge_base=token.knowledge_base, reason=refused
            )
        return None
    _stamp_last_use(token, now)
    token_rows.keep(token_hash, token)
    return token


def _stamp_last_use(token: ApiToken, now: dt.datetime) -> None:
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


def api_token_revoke(*, token: ApiToken, actor=None) -> ApiToken:
    with transaction.atomic():
        locked = ApiToken.objects.select_for_update().get(pk=token.pk)
        if locked.revoked_at is None:
            locked.revoked_at = timezone.now()
            locked.save(update_fields=["revoked_at"])
            audit_event_record(action=AuditAction.TOKEN_REVOKED, target=locked, knowledge_base=locked.knowledge_base, actor=actor)
    token_rows.forget(token_id=token.pk)  # at once in this process; other processes within API_TOKEN_CACHE_S
    token.revoked_at = locked.revoked_at
    return token
