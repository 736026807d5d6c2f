"""API tokens: scopes, expiry, last use; creating, revoking and using a revoked token are audited."""
import datetime as dt

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from articles.models import AuditAction, AuditEvent
from conflicts.models import ApiToken
from conflicts.services import api_token_create, api_token_revoke
from conflicts.services.tokens import TokenInputError, api_token_authenticate, token_rows

pytestmark = pytest.mark.django_db


def get(secret, path="/api/v1/conflicts"):
    return Client().get(path, HTTP_AUTHORIZATION=f"Bearer {secret}")


def test_scopes_limit_what_a_token_may_do(kb, fare_articles):
    token, secret = api_token_create(knowledge_base=kb, name="reader", scopes=["conflicts:read"])
    assert get(secret).status_code == 200
    refused = Client().post("/api/v1/turns", data={"external_id": "a", "question": "q", "retrieved": []},
                            content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert refused.status_code == 403 and "turns:write" in refused.json()["detail"]
    assert get(secret, "/api/v1/turns/a").status_code == 403
    with pytest.raises(TokenInputError, match="unknown scope"):
        api_token_create(knowledge_base=kb, name="bad", scopes=["admin"])
    with pytest.raises(TokenInputError, match="at least one scope"):
        api_token_create(knowledge_base=kb, name="none", scopes=[])


def test_expired_token_is_refused_and_last_use_is_stamped(kb, settings):
    settings.API_TOKEN_CACHE_S = 0  # the row is read on every request (the cache is tested below)
    token, secret = api_token_create(knowledge_base=kb, name="short-lived",
                                     expires_at=timezone.now() + dt.timedelta(hours=1))
    assert get(secret).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert get(secret).status_code == 401
    with pytest.raises(TokenInputError, match="future"):
        api_token_create(knowledge_base=kb, name="past", expires_at=timezone.now() - dt.timedelta(days=1))


def test_last_use_is_stamped_once_a_minute_not_on_every_request(kb, django_assert_num_queries, settings):
    settings.API_TOKEN_CACHE_S = 0
    token, secret = api_token_create(knowledge_base=kb, name="busy-bot")
    with django_assert_num_queries(2):  # the lookup and the first stamp
        assert api_token_authenticate(secret=secret).pk == token.pk
    with django_assert_num_queries(1):  # a second later: the lookup only
        assert api_token_authenticate(secret=secret).pk == token.pk
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now() - dt.timedelta(seconds=61))
    with django_assert_num_queries(2):
        api_token_authenticate(secret=secret)
    token.refresh_from_db()
    assert timezone.now() - token.last_used_at < dt.timedelta(seconds=5)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch, settings):
    settings.API_TOKEN_CACHE_S = 5
    fake = Clock()
    monkeypatch.setattr(token_rows, "clock", fake)
    return fake


def test_a_token_used_again_within_the_cache_ttl_is_not_read_again(kb, clock, django_assert_num_queries):
    token, secret = api_token_create(knowledge_base=kb, name="busy-bot")
    with django_assert_num_queries(2):  # the lookup and the first stamp
        assert api_token_authenticate(secret=secret).pk == token.pk
    clock.now += 4.9
    with django_assert_num_queries(0):
        assert api_token_authenticate(secret=secret).pk == token.pk
    clock.now += 0.2
    with django_assert_num_queries(1):  # the TTL is over: read again (stamped less than a minute ago)
        assert api_token_authenticate(secret=secret).pk == token.pk


def test_a_cached_token_is_still_stamped_once_a_minute(kb, clock, monkeypatch):
    token, secret = api_token_create(knowledge_base=kb, name="busy-bot")
    api_token_authenticate(secret=secret)
    later = timezone.now() + dt.timedelta(seconds=61)
    monkeypatch.setattr("conflicts.services.tokens.timezone.now", lambda: later)
    assert api_token_authenticate(secret=secret).pk == token.pk  # from the cache
    token.refresh_from_db()
    assert token.last_used_at == later


def test_revoking_a_cached_token_takes_effect_at_once_in_this_process(kb, clock):
    token, secret = api_token_create(knowledge_base=kb, name="bot")
    assert get(secret).status_code == 200
    api_token_revoke(token=token)
    assert get(secret).status_code == 401
    assert AuditEvent.objects.filter(action=AuditAction.TOKEN_REVOKED_USE, target_id=str(token.pk)).exists()


def test_a_revocation_made_by_another_process_takes_effect_within_the_cache_ttl(kb, clock):
    token, secret = api_token_create(knowledge_base=kb, name="bot")
    assert get(secret).status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())  # as another process would
    clock.now += 4.9
    assert get(secret).status_code == 200  # the cached row, for at most API_TOKEN_CACHE_S
    clock.now += 0.2
    assert get(secret).status_code == 401


def test_a_cached_token_is_refused_once_it_expires(kb, clock, monkeypatch):
    token, secret = api_token_create(knowledge_base=kb, name="short-lived",
                                     expires_at=timezone.now() + dt.timedelta(minutes=1))
    assert api_token_authenticate(secret=secret).pk == token.pk
    later = timezone.now() + dt.timedelta(minutes=2)
    monkeypatch.setattr("conflicts.services.tokens.timezone.now", lambda: later)
    assert api_token_authenticate(secret=secret) is None  # within the TTL, yet expired


def test_create_revoke_and_revoked_use_are_audited(kb):
    cache.clear()
    token, secret = api_token_create(knowledge_base=kb, name="bot")
    api_token_revoke(token=token)
    api_token_revoke(token=token)  # revoking twice changes nothing and audits once
    for _ in range(3):
        assert get(secret).status_code == 401
    actions = list(AuditEvent.objects.order_by("id").values_list("action", "target_id"))
    assert actions == [(AuditAction.TOKEN_CREATED, str(token.pk)), (AuditAction.TOKEN_REVOKED, str(token.pk)),
                       (AuditAction.TOKEN_REVOKED_USE, str(token.pk))]  # one row per minute, not per request


def test_create_api_token_command_takes_scopes_and_expiry(kb, capsys):
    call_command("create_api_token", "bot", "--kb", kb.slug, "--scope", "answer", "--expires-days", "30")
    token = ApiToken.objects.get()
    assert token.scopes == ["answer"] and token.expires_at > timezone.now() + dt.timedelta(days=29)
    assert capsys.readouterr().out.strip().startswith("kbr_")
    with pytest.raises(CommandError):
        call_command("create_api_token", "bot", "--kb", kb.slug, "--expires-days", "0")
