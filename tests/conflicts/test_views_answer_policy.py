"""The console's answer-policy page (each policy explained; ops change it, audited), the conflict page's policy
effect and the dashboard's count of protected replies."""
import pytest
from django.urls import reverse

from articles.models import AuditEvent
from conflicts.models import AnswerSettings, PolicyDecision
from conflicts.services.answering import answer_settings_update
from tests.conflicts.console_support import PASSWORD, add_occurrence, make_conflict, make_user

pytestmark = pytest.mark.django_db


def login(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_the_page_explains_each_policy_with_an_example(client, kb):
    login(client, make_user("vera", kb, role="viewer"))
    page = client.get(reverse("answer_policy"))
    html = page.content.decode()
    assert page.status_code == 200
    for anchor in ("policy-off", "policy-caveat", "policy-prefer", "policy-quarantine"):
        assert f'id="{anchor}"' in html
    assert html.count("Example:") == 5 and 'id="current-policy">Off' in html
    assert "answer-policy-form" not in html  # viewers read, ops change
    assert client.post(reverse("answer_policy"), {"policy": "caveat"}).status_code == 403


def test_ops_set_the_policy_and_the_change_is_audited(client, kb):
    ops = make_user("olga", kb, role="ops")
    login(client, ops)
    response = client.post(reverse("answer_policy"), {
        "policy": "prefer_suggested", "caveat_text": "Please check with us.", "prefer_threshold": "0.7"})
    assert response.status_code == 302
    row = AnswerSettings.objects.get(knowledge_base=kb)
    assert (row.policy, row.caveat_text, row.prefer_threshold) == ("prefer_suggested", "Please check with us.", 0.7)
    event = AuditEvent.objects.get(action="answer.settings")
    assert event.actor == ops and event.detail["after"]["policy"] == "prefer_suggested"
    assert 'id="current-policy">Prefer the suggested side' in client.get(reverse("answer_policy")).content.decode()


def test_a_bad_caveat_is_refused_by_name_and_markup_is_shown_escaped(client, kb):
    login(client, make_user("olga", kb, role="ops"))
    long = client.post(reverse("answer_policy"), {"policy": "caveat", "caveat_text": "x" * 241, "prefer_threshold": "0.8"})
    assert long.status_code == 400 and 'data-field="caveat_text"' in long.content.decode()
    tags = client.post(reverse("answer_policy"), {"policy": "caveat", "caveat_text": "See [[faq-1]].", "prefer_threshold": "0.8"})
    assert tags.status_code == 400 and "citation tags" in tags.content.decode()
    assert not AnswerSettings.objects.exists()
    answer_settings_update(knowledge_base=kb, policy="caveat", caveat_text="<script>alert(1)</script> check")
    html = client.get(reverse("answer_policy")).content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; check" in html


def test_the_conflict_page_shows_the_policy_effect_and_the_dashboard_counts_protected_replies(client, kb, articles):
    login(client, make_user("rita", kb, role="reviewer"))
    conflict = make_conflict(kb, articles[0], articles[1], times_seen=3)
    held = [add_occurrence(conflict, external_id=f"t{i}", question="Q?", reply="A.").turn for i in range(3)]
    for turn in held[:2]:
        PolicyDecision.objects.create(knowledge_base=kb, turn=turn, conflict=conflict, policy="prefer_suggested",
                                      action="held_back", held_back=articles[0], confidence=0.9)
    PolicyDecision.objects.create(knowledge_base=kb, turn=held[2], conflict=conflict, policy="caveat", action="caveat")
    html = client.get(reverse("conflict_detail", args=[conflict.pk])).content.decode()
    effect = html[html.index('id="policy-effect"'):]
    effect = effect[: effect.index("</p>")]
    assert "3 replies" in effect and "<strong>2</strong> with Article 0 <code>faq-0</code> held back" in effect
    assert "<strong>1</strong> answered under a caveat" in effect
    dashboard = client.get(reverse("home")).content.decode()
    assert 'id="protected-count">3<' in dashboard
