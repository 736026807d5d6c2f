"""Console and admin pages never fail on stored data: the worst values the database can hold (longest
texts, largest integers, earliest and latest times, markup, bidi and zero-width characters) are written
straight to the rows, then every console page and every admin list and change page is rendered."""
import datetime as dt

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from articles.models import Article, ArticleVersion, AuditEvent, IndexSyncJob
from articles.services import article_edit
from conflicts.models import (
    ArticleUsage,
    ConflictActivity,
    ConflictOccurrence,
    DetectionRun,
    NotificationDelivery,
    ResolutionRule,
    ResolutionSuggestion,
    Turn,
    Webhook,
)
from conflicts.services import api_token_create
from tests.conflicts.console_support import PASSWORD, make_conflict, make_user
from tests.factories import make_article
from tests.support.console_urls import console_kwargs, console_patterns, notification_objects, source_objects

pytestmark = pytest.mark.django_db

INT_MAX = 2**31 - 1
EARLIEST = dt.datetime(1, 1, 2, tzinfo=dt.timezone.utc)
LATEST = dt.datetime(9999, 12, 30, tzinfo=dt.timezone.utc)
SCRIPT = "<script>alert('stored')</script>"
HOSTILE_LINE = f"{SCRIPT}\u202eevil\u202c zero\u200bwidth \"quotes\" 'single' &amp; <b>bold</b> {{{{ tpl }}}} "


def _long(text: str, length: int) -> str:
    return (text * (length // len(text) + 1))[:length]


@pytest.fixture
def worst(kb):
    a = make_article(kb, "worst-a", "Tickets cost €10.", index=False)
    b = make_article(kb, "worst-b", "Tickets cost €12.", index=False)
    article_edit(article=a, expected_version_id=a.current_version_id, body=_long(HOSTILE_LINE, 5_000) + "x" * 100_000)
    a.refresh_from_db()
    Article.objects.filter(pk=a.pk).update(title=_long(HOSTILE_LINE, 500), source_uri=_long("javascript:alert(1)//", 1000))
    Article.objects.filter(pk=b.pk).update(external_ref=_long("ref/with?odd#chars%20" + HOSTILE_LINE, 200))
    ArticleVersion.objects.filter(article=a).update(title=_long(HOSTILE_LINE, 500), updated_at=dt.date(1, 1, 1))
    ArticleVersion.objects.filter(article=b).update(updated_at=dt.date(9999, 12, 31))
    conflict = make_conflict(
        kb, a, b, explanation=_long(HOSTILE_LINE, 20_000), snippets=(SCRIPT, "not in the body \u202e"),
        first_seen=EARLIEST, last_seen=LATEST, times_seen=INT_MAX, times_cited=INT_MAX, impact=1e308,
        reviewed_at=LATEST, review_note=HOSTILE_LINE,
    )
    turn = Turn.objects.create(
        knowledge_base=kb, external_id=_long("t" + HOSTILE_LINE, 200), question=_long(HOSTILE_LINE, 10_000),
        reply=_long(HOSTILE_LINE + "[[worst-a]] ", 100_000), reply_sent_at=EARLIEST,
    )
    Turn.objects.filter(pk=turn.pk).update(created_at=LATEST)
    ArticleUsage.objects.create(turn=turn, article=a, version=a.current_version, rank=INT_MAX, cited=True)
    DetectionRun.objects.create(
        turn=turn, outcome="error", reason=HOSTILE_LINE, latency_ms=INT_MAX, llm_calls=INT_MAX, tokens=INT_MAX,
        conflicts_found=INT_MAX, finished_at=LATEST,
    )
    ConflictOccurrence.objects.create(
        conflict=conflict, turn=turn, version_low_id=conflict.article_low.current_version_id,
        version_high_id=conflict.article_high.current_version_id, detector=HOSTILE_LINE[:20], citation="both",
    )
    ConflictActivity.objects.create(conflict=conflict, kind="dismissed", note=HOSTILE_LINE, detail={"x": SCRIPT})
    ResolutionSuggestion.objects.create(
        conflict=conflict, status="suggested", winner=a, explanation=HOSTILE_LINE, confidence=1e308,
        rules=[{"id": SCRIPT, "coverage": 1e308, "support": -1e308}], proposed_edit=_long(HOSTILE_LINE, 50_000),
        edit_article=a, llm_calls=INT_MAX, rule_base_version=INT_MAX, feedback={"note": SCRIPT},
    )
    ResolutionRule.objects.create(
        knowledge_base=kb, rule_id=_long(SCRIPT, 100), condition=_long(HOSTILE_LINE, 5_000), resolution=HOSTILE_LINE,
        origin="manual", kind="textual", status="active", priority=INT_MAX, coverage=1e308, support=1e308,
        times_applied=INT_MAX, rule_base_version=INT_MAX,
    )
    IndexSyncJob.objects.create(knowledge_base=kb, total=INT_MAX, done=INT_MAX, error=HOSTILE_LINE, finished_at=LATEST)
    token, _ = api_token_create(knowledge_base=kb, name=_long(SCRIPT, 100))
    AuditEvent.objects.create(knowledge_base=kb, action="token.created", target_type="x", target_id="1", target_repr=SCRIPT)
    notification = notification_objects(kb, conflict, "worst")
    NotificationDelivery.objects.filter(pk=notification["delivery"].pk).update(
        target=_long("https://x.example/" + HOSTILE_LINE, 1000), last_error=_long(HOSTILE_LINE, 2000),
        attempts=32767, response_status=32767, created_at=LATEST, next_attempt_at=EARLIEST)
    Webhook.objects.filter(pk=notification["webhook"].pk).update(url=_long("https://x.example/" + HOSTILE_LINE, 1000))
    return {"article": a, "other": b, "conflict": conflict, "turn": turn, "token": token,
            "version": a.versions.order_by("number").first(), **notification}


def _console_paths(objects) -> list[str]:
    objects = {**objects, "sync_job": IndexSyncJob.objects.get(), "rule": ResolutionRule.objects.filter(priority=INT_MAX).get(),
               **source_objects(objects["article"].knowledge_base, objects["article"], "worst")}
    return [reverse(name, kwargs=console_kwargs(name, converters, objects)) for name, converters in console_patterns()]


def test_every_console_page_renders_the_worst_stored_values(worst, kb):
    user = make_user("ops-worst", kb, role="ops")
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    pages = 0
    for path in _console_paths(worst):
        queries = ["", "?status=dismissed&q=%3Cscript%3E&page=99999999999999999999",
                   f"?from={worst['version'].pk}&to={worst['article'].current_version_id}&mode=retrieval&q=tickets"]
        for query in queries:
            for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
                response = client.get(path + query, **headers)
                assert response.status_code < 500, (path + query, response.status_code)
                assert SCRIPT.encode() not in response.content, path + query
                pages += 1
    assert pages > 50


def test_every_admin_page_renders_the_worst_stored_values(worst, kb):
    superuser = make_user("root-worst", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(superuser)
    rendered = 0
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        for query in ("", "?q=%3Cscript%3E"):
            response = client.get(changelist + query)
            assert response.status_code == 200, changelist
            assert SCRIPT.encode() not in response.content, changelist
        for obj in model.objects.all()[:5]:
            change = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
            response = client.get(change)
            assert response.status_code == 200, change
            assert SCRIPT.encode() not in response.content, change
            rendered += 1
    assert rendered >= 10


def test_console_query_strings_the_database_cannot_hold_are_400(kb):
    user = make_user("viewer-nul", kb, role="viewer")
    client = Client()
    client.force_login(user)
    for query in ("?q=%00", "?q=a%00b&mode=retrieval", "?page=%00", "?q=%1B", "?%00=1"):
        response = client.get(reverse("article_list") + query)
        assert response.status_code == 400, query
        assert b"Query parameter" in response.content
    assert client.get(reverse("article_list") + "?q=tabs%09ok").status_code == 200


def test_audited_models_cannot_be_changed_in_the_admin(admin_client):
    """Everything but the knowledge base itself, memberships and users changes through the services (which
    write the audit row); the admin may show it, never save or add it."""
    from django.contrib.auth import get_user_model

    from articles.models import KnowledgeBase, Membership

    editable = {KnowledgeBase, Membership, get_user_model()}
    for model, model_admin in admin.site._registry.items():
        if model in editable or model._meta.app_label not in ("articles", "conflicts"):
            continue
        request = admin_client.get("/").wsgi_request
        assert not model_admin.has_add_permission(request), model.__name__
        assert set(model_admin.get_readonly_fields(request)) >= {f.name for f in model._meta.fields} - {
            "token_hash", "secret_encrypted"}, model.__name__
