"""The demo's seeded review history teaches the Observer: rules validated on it, and feedback that moves them."""
from __future__ import annotations

import pytest
from django.urls import reverse

from conflicts.models import Conflict, ConflictStatus, InductionStatus, ResolutionRule, ReviewWinner, RuleStatus
from conflicts.services.demo_history import demo_history_load
from conflicts.services.induction import rule_induction_run
from tests.conflicts.console_support import PASSWORD, make_user


@pytest.mark.django_db
def test_the_demo_history_induces_at_least_three_validated_rules(kb):
    assert demo_history_load(knowledge_base=kb) >= 10
    assert demo_history_load(knowledge_base=kb) == 0  # idempotent
    run = rule_induction_run(knowledge_base=kb)
    assert run.status == InductionStatus.DONE, run.reason
    active = ResolutionRule.objects.filter(knowledge_base=kb, status=RuleStatus.ACTIVE, validated_cases__gt=0)
    assert active.count() >= 3, [(r.rule_id, r.coverage, r.support) for r in ResolutionRule.objects.filter(knowledge_base=kb)]
    for rule in active:
        assert rule.support >= 0.6 and rule.coverage >= 0.05
        assert len(rule.validated_on) == rule.validated_cases  # the decisions it was validated on, by conflict


@pytest.mark.django_db
def test_a_decision_against_a_rule_lowers_its_support_and_shows_as_a_counter_example(kb):
    demo_history_load(knowledge_base=kb)
    rule_induction_run(knowledge_base=kb)
    rule = ResolutionRule.objects.get(knowledge_base=kb, rule_id="official-effective-beats-newer-page")
    before = (rule.support, rule.validated_agreed, rule.validated_cases)
    agreed_on = [item["conflict"] for item in rule.validated_on if item["agreed"]]
    # A reviewer decides one of those cases the other way.
    contrary = Conflict.objects.get(pk=agreed_on[0])
    Conflict.objects.filter(pk=contrary.pk).update(winner=ReviewWinner.HIGH, status=ConflictStatus.PROCESSED)
    rule_induction_run(knowledge_base=kb)
    rule.refresh_from_db()
    assert rule.support < before[0]
    assert rule.validated_agreed == before[1] - 1 and rule.validated_cases == before[2]
    assert {"conflict": contrary.pk, "agreed": False} in rule.validated_on


def _rules_page(client):
    response = client.get(reverse("rule_list"))
    assert response.status_code == 200
    return response.content.decode()


def _row(body, rule_id):
    start = body.index(f'id="rule-{rule_id}"')
    return body[start:body.index("</tr>", start)]


@pytest.mark.django_db
def test_the_rules_page_shows_each_validated_rule_with_its_figures_and_decisions_then_a_counter_example(client, kb):
    viewer = make_user("vera", kb, "viewer")
    assert client.login(username=viewer.username, password=PASSWORD)
    demo_history_load(knowledge_base=kb)
    rule_induction_run(knowledge_base=kb)
    validated = list(ResolutionRule.objects.filter(knowledge_base=kb, status=RuleStatus.ACTIVE, validated_cases__gt=0))
    assert len(validated) >= 3
    body = _rules_page(client)
    for rule in validated:
        row = _row(body, rule.rule_id)
        assert f"{rule.support} <span class=\"muted\">({rule.validated_agreed}/{rule.validated_cases})</span>" in row
        assert f"<td>{rule.coverage}</td>" in row
        assert f"{rule.validated_cases} decision" in row
        for item in rule.validated_on:
            assert f"#{item['conflict']}</a>" in row
    target = ResolutionRule.objects.get(knowledge_base=kb, rule_id="official-effective-beats-newer-page")
    assert "counter-example" not in _row(body, target.rule_id)

    # a reviewer decides one of the rule's agreeing cases the other way; the next induction shows it
    contrary = next(item["conflict"] for item in target.validated_on if item["agreed"])
    Conflict.objects.filter(pk=contrary).update(winner=ReviewWinner.HIGH, status=ConflictStatus.PROCESSED)
    rule_induction_run(knowledge_base=kb)
    target.refresh_from_db()
    row = _row(_rules_page(client), target.rule_id)
    assert "1 counter-example" in row
    assert f'<li class="counter-example"><a href="/conflicts/{contrary}/">#{contrary}</a>' in row
    assert f"({target.validated_agreed}/{target.validated_cases})" in row
