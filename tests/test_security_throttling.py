"""Throttling: failed sign-ins lock a user name and address out (django-axes); API requests are limited
per token with 429 and Retry-After. Both limits come from settings."""
import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from conflicts.services import api_token_create
from tests.conflicts.console_support import PASSWORD, make_user

pytestmark = pytest.mark.django_db


def sign_in(client, username, password):
    return client.post(reverse("login"), {"username": username, "password": password})


def test_wrong_passwords_lock_out_even_the_right_one(kb, settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    make_user("victim", kb)
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert sign_in(client, "victim", "wrong-password").status_code == 200  # the form again, with its error
    assert sign_in(client, "victim", "wrong-password").status_code == 429  # the last allowed failure locks
    locked = sign_in(client, "victim", PASSWORD)
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session
    # another address is not locked out by this one's failures
    other = Client(REMOTE_ADDR="10.0.0.9")
    assert sign_in(other, "victim", PASSWORD).status_code == 302


def test_a_success_before_the_limit_resets_the_count(kb, settings):
    make_user("forgetful", kb)
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in(client, "forgetful", "wrong-password")
    assert sign_in(client, "forgetful", PASSWORD).status_code == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in(client, "forgetful", "wrong-password")
    assert sign_in(client, "forgetful", PASSWORD).status_code == 302


def test_api_requests_over_the_limit_get_429_with_retry_after(kb, settings):
    cache.clear()
    settings.API_RATE_LIMIT, settings.API_RATE_WINDOW_S = 3, 3600
    secret = api_token_create(knowledge_base=kb, name="bot")[1]
    other = api_token_create(knowledge_base=kb, name="other bot")[1]
    client = Client()
    statuses = [client.get("/api/v1/conflicts", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = client.get("/api/v1/conflicts", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert limited.status_code == 429 and 0 < int(limited["Retry-After"]) <= 3600
    assert "rate limit" in limited.json()["detail"]
    # the limit is per token
    assert client.get("/api/v1/conflicts", HTTP_AUTHORIZATION=f"Bearer {other}").status_code == 200
    settings.API_RATE_LIMIT = 0  # 0 switches the limit off
    assert client.get("/api/v1/conflicts", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 200


def test_redis_down_turns_are_still_accepted_and_the_limit_still_holds(kb, client, settings, tmp_path, caplog):
    """The rate limit counts in Redis (the shared cache). A Redis of the test's own is stopped mid-way:
    every turn is still accepted (no 500), the limit is then counted per process and still answers 429
    past it, and the switch is logged once."""
    from tests.support import processes

    redis = processes.RedisServer(processes.free_port(), tmp_path)
    redis.start()
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis.url,
                                   "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}}
    settings.API_RATE_LIMIT, settings.API_RATE_WINDOW_S = 12, 3600
    settings.DETECTION_DISPATCH = "off"
    _, secret = api_token_create(knowledge_base=kb, name="outage")

    def post(i: int):
        return client.post("/api/v1/turns", {"external_id": f"r-{i}", "question": "Open on Sunday?", "retrieved": []},
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")

    try:
        assert [post(i).status_code for i in range(4)] == [202] * 4
        redis.stop()
        caplog.clear()
        during = [post(i) for i in range(4, 20)]
    finally:
        redis.stop()
    statuses = [response.status_code for response in during]
    print(f"\nredis outage figures: turns sent {len(statuses)}, accepted {statuses.count(202)}, "
          f"429 {statuses.count(429)}, 5xx {sum(1 for s in statuses if s >= 500)}")
    assert 500 not in statuses
    assert statuses[:12] == [202] * 12  # the process's own count starts afresh: 12 more
    assert set(statuses[12:]) == {429} and during[-1].headers["Retry-After"]
    warnings = [r for r in caplog.records if "shared cache is unavailable" in r.getMessage()]
    assert len(warnings) == 1
