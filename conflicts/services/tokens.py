"""API tokens: the secret is shown once; only its SHA-256 is stored."""
from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from articles.models import KnowledgeBase
from conflicts.models import ApiToken

TOKEN_PREFIX = "kbr_"


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def api_token_create(*, knowledge_base: KnowledgeBase, name: str, actor=None) -> tuple[ApiToken, str]:
    """Returns the token row and the secret, which is never stored and cannot be shown again."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        knowledge_base=knowledge_base, name=name, prefix=secret[:12], token_hash=_hash(secret), created_by=actor
    )
    return token, secret


def api_token_authenticate(*, secret: str) -> ApiToken | None:
    token = (
        ApiToken.objects.select_related("knowledge_base")
        .filter(token_hash=_hash(secret), revoked_at__isnull=True)
        .first()
    )
    if token is not None:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token


def api_token_revoke(*, token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token
