"""The demo's seeded review history teaches the Observer: rules validated on it, and feedback that moves them."""
from __future__ import annotations

import pytest

from conflicts.models import Conflict, ConflictStatus, InductionStatus, ResolutionRule, ReviewWinner, RuleStatus
from conflicts.services.demo_history import demo_history_load
from conflicts.services.induction import rule_induction_run


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
