"""Secure by default: production settings refuse to start insecurely and pass `check --deploy`; CSP
without inline script, no-store on signed-in pages, static files without DEBUG, the API docs offline."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from tests.conflicts.console_support import make_user

ROOT = Path(__file__).resolve().parent.parent
# The production variables the README documents (values made up for the test).
PRODUCTION = {
    "DJANGO_SECRET_KEY": "k" * 10 + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
    "DJANGO_ALLOWED_HOSTS": "kb.example.com",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://kb.example.com",
    "DJANGO_HTTPS": "true",
}


def manage(*args, **env_changes):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(env_changes)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_insecure_production_settings_refuse_to_start_naming_the_variable():
    cases = [
        ({**PRODUCTION, "DJANGO_SECRET_KEY": ""}, "DJANGO_SECRET_KEY is not set"),
        ({**PRODUCTION, "DJANGO_SECRET_KEY": "short"}, "DJANGO_SECRET_KEY is too weak"),
        ({**PRODUCTION, "DJANGO_DEBUG": "true"}, "DJANGO_DEBUG=true with public host(s) kb.example.com"),
        ({**PRODUCTION, "DJANGO_ALLOWED_HOSTS": ""}, "DJANGO_ALLOWED_HOSTS is empty"),
    ]
    for env, message in cases:
        result = manage("check", **env)
        assert result.returncode != 0, env
        assert "ImproperlyConfigured" in result.stderr and message in result.stderr, result.stderr[-800:]


def test_check_deploy_is_clean_with_the_documented_production_variables():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_https_switch_sets_secure_cookies_hsts_and_redirect():
    code = ("from django.conf import settings as s; print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
            "s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS > 0)")
    on = manage("shell", "-c", code, **PRODUCTION)
    off = manage("shell", "-c", code, **{**PRODUCTION, "DJANGO_HTTPS": "false"})
    assert on.stdout.split()[-4:] == ["True", "True", "True", "True"], on.stderr[-500:]
    assert off.stdout.split()[-4:] == ["False", "False", "False", "False"], off.stderr[-500:]


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"\son[a-z]+\s*=", re.I)


@pytest.mark.django_db
def test_console_pages_send_csp_and_no_store_and_hold_no_inline_script(kb, other_kb):
    user = make_user("ops-csp", kb, role="ops")
    from articles.models import Membership

    Membership.objects.create(user=user, knowledge_base=other_kb, role="viewer")  # shows the knowledge-base switch
    client = Client()
    client.force_login(user)
    for name in ("home", "conflict_queue", "article_list", "rule_list", "ops_home"):
        response = client.get(reverse(name))
        assert response.status_code == 200, name
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
        assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]
        html = response.content.decode()
        assert not INLINE_SCRIPT.search(html), (name, INLINE_SCRIPT.search(html))
        assert not INLINE_HANDLER.search(html), (name, INLINE_HANDLER.search(html))
    signed_out = Client().get(reverse("login"))
    assert "Content-Security-Policy" in signed_out


@pytest.mark.django_db
def test_static_files_are_served_without_debug(client, settings):
    assert settings.DEBUG is False
    for path in ("/static/vendor/htmx.min.js", "/static/js/console.js", "/static/ninja/swagger-ui-bundle.js"):
        response = client.get(path)
        assert response.status_code == 200, path


@pytest.mark.django_db
def test_api_docs_page_loads_only_local_assets(client):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert not re.search(r"(src|href)=\"https?://", html)
