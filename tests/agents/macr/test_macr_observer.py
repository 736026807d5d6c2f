"""MACR Observer: Coverage / Support on a hand-made decision set, thresholds, split, induction."""
from __future__ import annotations

import datetime as dt

import pytest

from agents.macr.observer import Decision, induce_rules, split_decisions, validate_rule, validate_rules
from agents.macr.rules import NEWER_CONTENT_DATE_WINS, Rule
from agents.types import ArticleText

DAY = dt.date(2026, 5, 1)


def art(ref, updated):
    return ArticleText(ref=ref, title=ref, body=f"Text of {ref}.", updated_at=updated)


def decision(index, *, newer_wins=True, same_day=False, outcome=None, conflict_type="price"):
    old = art(f"old-{index}", dt.date(2025, 1, 1))
    new = art(f"new-{index}", dt.date(2025, 1, 1) if same_day else dt.date(2026, 1, 1))
    if outcome is None:
        outcome = new.ref if newer_wins else old.ref
    return Decision(a=old, b=new, type=conflict_type, outcome=outcome, decided_on=DAY)


# 10 decisions: 6 where dates differ and the newer side won, 2 where the older won (a careless copy),
# 2 same-day pairs staff dismissed ("both").
DECISIONS = (
    [decision(i) for i in range(6)]
    + [decision(i, newer_wins=False) for i in range(6, 8)]
    + [decision(i, same_day=True, outcome="both") for i in range(8, 10)]
)


def test_coverage_and_support_by_hand():
    result = validate_rule(rule=NEWER_CONTENT_DATE_WINS, decisions=DECISIONS)
    # covered: the 8 pairs with differing dates → 8/10; supported: the 6 newer wins → 6/8
    assert (result.cases, result.covered, result.supported) == (10, 8, 6)
    assert result.coverage == 0.8
    assert result.support == 0.75
    assert result.accepted


def test_cannot_tell_agrees_with_dismissed_and_type_filters_coverage():
    abstainer = Rule(id="same-day-cannot-tell", type="price", condition="same update date", resolution="cannot tell",
                     origin="manual", condition_check=lambda pair, now: pair.a.updated_at == pair.b.updated_at,
                     resolution_pick=lambda pair, now: None)
    result = validate_rule(rule=abstainer, decisions=DECISIONS)
    assert (result.covered, result.supported, result.coverage, result.support) == (2, 2, 0.2, 1.0)
    hours_only = Rule(id="hours-only", type="hours", condition="always", resolution="newer wins", origin="manual",
                      condition_check=lambda pair, now: True, resolution_pick=NEWER_CONTENT_DATE_WINS.resolution_pick)
    assert validate_rule(rule=hours_only, decisions=DECISIONS).covered == 0


def test_thresholds_filter_rules():
    always_old = Rule(id="older-wins", type="*", condition="dates differ", resolution="older wins", origin="manual",
                      condition_check=NEWER_CONTENT_DATE_WINS.condition_check,
                      resolution_pick=lambda pair, now: min(pair.articles, key=lambda a: a.updated_at).ref)
    results = {r.rule_id: r for r in validate_rules(candidates=[NEWER_CONTENT_DATE_WINS, always_old], decisions=DECISIONS)}
    assert results["older-wins"].support == 0.25 and not results["older-wins"].accepted  # support < 0.6
    assert results["newer-content-date-wins"].accepted
    strict = validate_rule(rule=NEWER_CONTENT_DATE_WINS, decisions=DECISIONS, min_support=0.8)
    assert not strict.accepted  # 0.75 < 0.8
    rare = Rule(id="rare", type="*", condition="only pair 0", resolution="newer wins", origin="manual",
                condition_check=lambda pair, now: pair.a.ref == "old-0",
                resolution_pick=NEWER_CONTENT_DATE_WINS.resolution_pick)
    rare_result = validate_rule(rule=rare, decisions=DECISIONS)
    assert (rare_result.coverage, rare_result.support) == (0.1, 1.0) and rare_result.accepted
    assert not validate_rule(rule=rare, decisions=DECISIONS, min_coverage=0.2).accepted  # coverage < 0.2
    assert not validate_rule(rule=rare, decisions=[]).accepted


def test_textual_rule_needs_a_judge():
    textual = Rule(id="t", type="*", condition="c", resolution="r", origin="induced", kind="textual")
    skipped = validate_rule(rule=textual, decisions=DECISIONS)
    assert not skipped.accepted and skipped.skipped_reason
    judged = validate_rule(rule=textual, decisions=DECISIONS, judge=lambda rule, pair, now: pair.b.ref)
    assert (judged.covered, judged.supported) == (10, 6)


def test_decision_outcome_is_checked():
    with pytest.raises(ValueError):
        decision(0, outcome="somebody-else")


def test_split_is_deterministic_disjoint_and_stable_as_decisions_arrive():
    many = [decision(i) for i in range(200)]
    train, validation = split_decisions(decisions=many, validation_share=0.3)
    assert len(train) + len(validation) == 200
    assert {d.refs for d in train}.isdisjoint({d.refs for d in validation})
    assert 40 <= len(validation) <= 80  # ~30%
    again_train, again_validation = split_decisions(decisions=list(reversed(many)), validation_share=0.3)
    assert {d.refs for d in again_validation} == {d.refs for d in validation}
    _, more_validation = split_decisions(decisions=many + [decision(i) for i in range(200, 260)], validation_share=0.3)
    assert {d.refs for d in validation} <= {d.refs for d in more_validation}
    _, salted = split_decisions(decisions=many, validation_share=0.3, salt="other")
    assert {d.refs for d in salted} != {d.refs for d in validation}


def test_induction_generates_candidates_from_training_only_and_attaches_figures():
    many = [decision(i) for i in range(40)] + [decision(i, same_day=True, outcome="both") for i in range(40, 50)]
    seen_by_generator = []

    def generator(training):
        seen_by_generator.extend(training)
        return [Rule(id="generated-older-wins", type="*", condition="dates differ", resolution="older wins",
                     origin="induced", condition_check=NEWER_CONTENT_DATE_WINS.condition_check,
                     resolution_pick=lambda pair, now: min(pair.articles, key=lambda a: a.updated_at).ref)]

    result = induce_rules(decisions=many, candidates=[NEWER_CONTENT_DATE_WINS], generate_candidates=generator)
    assert seen_by_generator == result.training
    assert {d.refs for d in seen_by_generator}.isdisjoint({d.refs for d in result.validation})
    assert [rule.id for rule in result.active_rules] == ["newer-content-date-wins"]
    active = result.active_rules[0]
    assert active.support == 1.0 and active.coverage is not None and 0.05 <= active.coverage <= 1.0
    assert [v.rule_id for v in result.validations] == ["newer-content-date-wins", "generated-older-wins"]
