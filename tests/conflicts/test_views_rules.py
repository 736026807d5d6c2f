"""The Rules page and the suggestion on the conflict page."""
import datetime as dt
import re

import pytest
from django.urls import reverse

from conflicts.models import ResolutionRule
from conflicts.services.suggestions import rule_base_ensure, suggestion_compute
from tests.conflicts.console_support import PASSWORD, make_conflict, make_user
from tests.factories import make_article

pytestmark = pytest.mark.django_db


def login(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def suggested(kb):
    pdf = make_article(kb, "pdf-fares", "Fares Policy\n\nEffective 1 March 2026. A single adult ticket costs €22.",
                       title="Fares Policy 2026", source="pdf", updated_at=dt.date(2026, 2, 20), index=False)
    web = make_article(kb, "web-fares", "A single adult ticket costs €18. <script>alert(1)</script>", title="Fares",
                       source="web", updated_at=dt.date(2026, 4, 12), index=False)
    conflict = make_conflict(kb, pdf, web, snippets=("A single adult ticket costs €22.", "A single adult ticket costs €18."))
    kb.suggestion_min_confidence = 0.0  # this knowledge base shows every rule's side (the default would not)
    kb.save(update_fields=["suggestion_min_confidence"])
    suggestion_compute(conflict_id=conflict.pk)
    return conflict, pdf, web


def test_rules_page_lists_rules_with_figures_for_every_member(client, kb):
    login(client, make_user("vic", kb, "viewer"))
    response = client.get(reverse("rule_list"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "newer-content-date-wins" in body and "official-effective-beats-newer-page" in body
    assert "rule_induction_start" not in body and "/rules/induce/" not in body  # the button is for ops only


def test_only_ops_toggle_rules_and_start_induction(client, kb, other_kb):
    login(client, make_user("rita", kb, "reviewer"))
    client.get(reverse("rule_list"))
    rule = ResolutionRule.objects.filter(knowledge_base=kb).first()
    assert client.post(reverse("rule_toggle", args=[rule.pk]), {"enabled": "0"}).status_code == 403
    assert client.post(reverse("rule_induction_start")).status_code == 403
    client.logout()
    login(client, make_user("otto", kb, "ops"))
    response = client.post(reverse("rule_toggle", args=[rule.pk]), {"enabled": "0"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert f"Rule {rule.rule_id} switched off." in response.content.decode()  # the action says what it did
    rule.refresh_from_db()
    assert rule.enabled is False
    # another knowledge base's rule: 404, never touched
    rule_base_ensure(knowledge_base=other_kb)
    foreign = ResolutionRule.objects.filter(knowledge_base=other_kb).first()
    assert client.post(reverse("rule_toggle", args=[foreign.pk]), {"enabled": "0"}).status_code == 404
    foreign.refresh_from_db()
    assert foreign.enabled is True


def test_induction_on_demand_records_a_run(client, kb, django_capture_on_commit_callbacks):
    login(client, make_user("otto", kb, "ops"))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("rule_induction_start"))
    assert response.status_code == 302
    page = client.get(reverse("rule_list")).content.decode()
    assert "Skipped" in page and "0 reviewed conflicts" in page


def test_conflict_page_shows_the_suggestion_and_apply_prefills_the_editor(client, kb, suggested):
    conflict, pdf, web = suggested
    login(client, make_user("rita", kb, "reviewer"))
    page = client.get(reverse("conflict_detail", args=[conflict.pk])).content.decode()
    assert "Fares Policy 2026</strong> is more likely right" in page
    assert "official-effective-beats-newer-page" in page
    assert "Apply suggestion" in page
    assert "<script>alert(1)</script>" not in page
    applied = client.get(reverse("conflict_detail", args=[conflict.pk]) + "?apply=1").content.decode()
    # the losing article's editor holds the proposed text, set to "edit"; the winner is preselected
    assert "A single adult ticket costs €22. &lt;script&gt;" in applied
    loser_side = "high" if web.pk > pdf.pk else "low"
    assert re.search(rf'name="{loser_side}_action" value="edit"[^>]*checked', applied)
    winner = "low" if loser_side == "high" else "high"
    assert re.search(rf'<option value="{winner}" selected>', applied)


def test_viewers_see_the_suggestion_but_no_actions(client, kb, suggested):
    conflict, _, _ = suggested
    login(client, make_user("vic", kb, "viewer"))
    page = client.get(reverse("conflict_detail", args=[conflict.pk])).content.decode()
    assert "is more likely right" in page
    assert "Apply suggestion" not in page and "Recompute" not in page
    assert client.post(reverse("conflict_suggestion", args=[conflict.pk])).status_code == 403
