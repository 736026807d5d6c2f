"""Ops (re-sync with progress, index and detection health, API tokens) and the dashboard's conflicts panel."""
import datetime as dt
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from articles.models import IndexSyncJob
from conflicts.models import ApiToken, ConflictActivity, DetectionRun, Turn
from conflicts.services import api_token_authenticate
from tests.conflicts.console_support import make_conflict
from tests.factories import make_article

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def test_ops_resync_runs_and_progress_partial_stops_polling_when_done(client, kb, ops, django_capture_on_commit_callbacks):
    make_article(kb, "faq-a", "Alpha text.", index=False)
    make_article(kb, "faq-b", "Beta text.", index=False)
    client.force_login(ops)
    page = client.get(reverse("ops_home")).content.decode()
    assert "2</strong> articles with stale or missing chunks" in page
    assert "not configured" in page  # no LLM in tests
    with django_capture_on_commit_callbacks(execute=True):
        # In tests the request's transaction commits only when this block ends; the page shows the
        # job queued and polling, as it does while a worker runs it.
        response = client.post(reverse("ops_resync"), {"full": "on"}, **HTMX)
    assert response.status_code == 200 and "<html" not in response.content.decode()
    assert 'hx-trigger="every 1s"' in response.content.decode()
    job = IndexSyncJob.objects.get(knowledge_base=kb)
    assert job.full and job.status == "done" and job.done == job.total == 2 and job.requested_by == ops
    html = client.get(reverse("ops_sync_job", args=[job.pk]), **HTMX).content.decode()
    assert 'hx-trigger="every 1s"' not in html and "Done" in html
    assert "Every active article is indexed" in client.get(reverse("ops_home")).content.decode()


def test_ops_progress_partial_polls_while_the_job_runs(client, kb, ops):
    job = IndexSyncJob.objects.create(knowledge_base=kb, status="running", total=10, done=4)
    client.force_login(ops)
    html = client.get(reverse("ops_sync_job", args=[job.pk]), **HTMX).content.decode()
    assert 'hx-trigger="every 1s"' in html and 'value="40"' in html and "<html" not in html
    IndexSyncJob.objects.filter(pk=job.pk).update(status="done", done=10)
    html = client.get(reverse("ops_sync_job", args=[job.pk]), **HTMX).content.decode()
    assert 'hx-trigger="every 1s"' not in html and 'value="100"' in html


def test_ops_detection_health_outcomes_and_latency_percentiles(client, kb, other_kb, ops):
    for i, (outcome, latency) in enumerate([("ok", 10), ("ok", 20), ("ok", 30), ("timeout", 2000), ("error", 40)]):
        turn = Turn.objects.create(knowledge_base=kb, external_id=f"t{i}", question="q")
        DetectionRun.objects.create(turn=turn, outcome=outcome, latency_ms=latency)
    old = Turn.objects.create(knowledge_base=kb, external_id="old", question="q")
    run = DetectionRun.objects.create(turn=old, outcome="ok", latency_ms=99999)
    DetectionRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - dt.timedelta(hours=30))
    foreign = Turn.objects.create(knowledge_base=other_kb, external_id="f", question="q")
    DetectionRun.objects.create(turn=foreign, outcome="error", latency_ms=5)
    client.force_login(ops)
    health = client.get(reverse("ops_home")).context["health"]
    assert health.total == 5
    assert dict((value, n) for value, _, n in health.outcomes)["ok"] == 3
    assert dict((value, n) for value, _, n in health.outcomes)["error"] == 1
    assert health.latency_p50_ms == 30
    assert 1000 < health.latency_p95_ms < 2000
    assert health.llm_configured is False


def test_ops_detection_health_shows_what_the_llm_was_spared(client, kb, other_kb, ops):
    for i, (batch, unrelated, confirmed, rejected) in enumerate([(3, 2, 1, 0), (3, 0, 0, 1), (1, 5, 0, 0), (0, 1, 0, 0)]):
        turn = Turn.objects.create(knowledge_base=kb, external_id=f"t{i}", question="q")
        DetectionRun.objects.create(turn=turn, outcome="ok", batch_turns=batch, unrelated_pairs=unrelated,
                                    known_claim_pairs=unrelated + 1, llm_confirmed=confirmed, llm_rejected=rejected)
    foreign = Turn.objects.create(knowledge_base=other_kb, external_id="f", question="q")
    DetectionRun.objects.create(turn=foreign, outcome="ok", batch_turns=5, unrelated_pairs=50, known_claim_pairs=50)
    client.force_login(ops)
    response = client.get(reverse("ops_home"))
    health = response.context["health"]
    assert (health.batched_turns, health.unrelated_pairs, health.known_claim_pairs, health.llm_confirmed,
            health.llm_rejected) == (2, 8, 12, 1, 1)
    html = response.content.decode()
    assert '<strong class="batched-turns">2</strong>' in html and '<strong class="unrelated-pairs">8</strong>' in html
    assert '<strong class="known-claim-pairs">12</strong>' in html


def test_ops_api_token_create_shows_it_once_and_revoke(client, kb, ops):
    client.force_login(ops)
    response = client.post(reverse("ops_token_create"), {"name": "website bot", "scopes": ["turns:write", "answer", "conflicts:read"]}, **HTMX)
    assert response.status_code == 201
    secret = re.search(r'<code class="token-secret">([^<]+)</code>', response.content.decode()).group(1)
    assert secret.startswith("kbr_") and secret in response.content.decode()
    token = ApiToken.objects.get(knowledge_base=kb, name="website bot")
    assert token.token_hash != secret and api_token_authenticate(secret=secret) == token
    assert secret not in client.get(reverse("ops_home")).content.decode()  # never shown again
    assert client.post(reverse("ops_token_create"), {"name": " "}, **HTMX).status_code == 400
    response = client.post(reverse("ops_token_revoke", args=[token.pk]), **HTMX)
    assert response.status_code == 200 and "revoked" in response.content.decode()
    assert api_token_authenticate(secret=secret) is None


def test_dashboard_figures_chart_and_top_articles(client, kb, other_kb, reviewer):
    hub = make_article(kb, "hub", "Hub text.", title="Hub article", index=False)
    spokes = [make_article(kb, f"s-{i}", f"Spoke {i}.", title=f"Spoke {i}", index=False) for i in range(3)]
    conflicts = [make_conflict(kb, hub, spoke) for spoke in spokes]
    make_conflict(kb, spokes[0], spokes[1], status="processed")
    ConflictActivity.objects.create(conflict=conflicts[2], kind="resolved", from_status="open", to_status="processed")
    old = ConflictActivity.objects.create(conflict=conflicts[1], kind="resolved", from_status="open", to_status="processed")
    ConflictActivity.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=9))
    foreign = [make_article(other_kb, f"f-{i}", "x", index=False) for i in range(2)]
    make_conflict(other_kb, foreign[0], foreign[1])
    client.force_login(reviewer)
    response = client.get(reverse("home"))
    figures = response.context["figures"]
    assert figures.open_count == 3
    assert figures.resolved_last_7_days == 1
    assert len(figures.days) == 14 and figures.days[-1].opened == 4 and figures.days[-1].resolved == 1
    assert figures.days[-10].resolved == 1
    assert figures.top_articles[0][0] == hub and figures.top_articles[0][1] == 3
    html = response.content.decode()
    assert "<svg" in html and html.count('class="bar opened"') == 14 and "Hub article" in html
