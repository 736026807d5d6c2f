"""agents.claims.judged: the learned judge inside the claim detector, with a stub judge callable whose verdicts
each test scripts, so what is under test is the mechanism (what is read, what decides, what is kept), not a model.
The detector-level runs of each mode are in tests/agents/test_judge.py.
Every statement is written for these tests (no data set's sentences or names).
"""
from __future__ import annotations

import numpy as np
import pytest

from agents.claims.analysis import analyse_text
from agents.claims.contradiction import Contradiction
from agents.claims.judged import (
    TOP_ALIGNED,
    JudgeSetup,
    PairJudgement,
    disagreement_type,
    judge_pairs,
    judged_contradiction,
    statement_pair,
    value_difference,
    values_agree,
    vetoed,
)
from agents.judge import CONSISTENT, CONTRADICTS, DIFFERENT_SCOPE, CachedJudge, Calibration

KEY = ("kb-1", "kb-2")


def facts(text: str, title: str = "Tallow Lane Laundry"):
    return analyse_text(title, text, 2026)[0]


def row(label: int, sure: float = 0.96) -> np.ndarray:
    probabilities = np.full(4, (1 - sure) / 3)
    probabilities[label] = sure
    return probabilities


class ScriptedScorer:
    """The judge's model as a callable: a pair of statement texts scripted to a label, or (label, how sure), in
    either order; every other pair consistent. Records what it was asked."""

    def __init__(self, script: dict[frozenset[str], int | tuple[int, float]] | None = None):
        self.script = script or {}
        self.asked: list[tuple[str, str]] = []

    def __call__(self, pairs):
        self.asked.extend((p.text_a, p.text_b) for p in pairs)
        scripted = [self.script.get(frozenset({p.text_a, p.text_b}), CONSISTENT) for p in pairs]
        return np.array([row(*label) if isinstance(label, tuple) else row(label) for label in scripted])


def setup_for(scorer, mode="judge+rules", **overrides) -> JudgeSetup:
    calibration = Calibration(thresholds=(0.0, 0.5, 0.9), values=(0.05, 0.6, 0.95), high_precision_score=0.9,
                              report_score=0.5, settle_score=0.9)
    return JudgeSetup(judge=CachedJudge(scorer), calibration=calibration, mode=mode, **overrides)


def test_a_statement_pair_carries_each_sides_heading_and_a_cells_row_label():
    cell = analyse_text("Wash prices", "| Load | Price |\n|---|---|\n| Duvet wash | £14 |", 2026)[0]
    sentence = facts("A duvet wash costs £12.")
    pair = statement_pair(cell, sentence)
    assert (pair.text_a, pair.text_b) == ("Duvet wash: £14", "A duvet wash costs £12.")
    assert pair.heading_a == cell.claim.context and "Duvet wash" in pair.heading_a
    assert pair.heading_b == "Tallow Lane Laundry"


@pytest.mark.parametrize("first, second, expected", [
    ("A service wash costs £9.", "A service wash costs £11.", "price"),
    ("The launderette opens at 07:00.", "The launderette opens at 08:30.", "hours"),
    ("Collections take 3 days.", "Collections take 5 days.", "quantity"),
    ("Pets are welcome in the waiting area.", "Pets are not allowed in the waiting area.", "policy"),
    # Only kinds both sides give count: a price on one side and a time on the other say nothing of either.
    ("A service wash costs £9.", "Service washes are ready by 17:00.", "policy"),
])
def test_what_a_disagreement_is_about_comes_from_the_kinds_of_value_both_give(first, second, expected):
    assert disagreement_type(facts(first), facts(second)) == expected


def test_values_agree_only_when_every_comparable_value_has_its_equal():
    monthly = facts("The drop-off plan is €24.50 a month.")
    assert values_agree(monthly, facts("Our drop-off plan costs 24.50 EUR per month."))
    assert not values_agree(monthly, facts("The drop-off plan is €26 a month."))
    assert not values_agree(monthly, facts("Drop-off bags are collected at 09:00."))  # nothing comparable
    # One equal value is not enough when another comparable one differs.
    both = facts("The drop-off plan is €24.50 a month, and €30 a month with ironing.")
    assert not values_agree(both, facts("The drop-off plan is €24.50 a month, and €35 a month with ironing."))


def test_the_value_difference_names_what_each_side_says():
    assert value_difference(facts("A rug clean costs £40."), facts("Rug cleaning is £45.")) == "one says £40, the other £45"
    assert value_difference(facts("A rug clean costs £40."), facts("Rug cleaning is £40.")) == ""
    assert value_difference(facts("A rug clean costs £40."), facts("Rugs are ready in 3 days.")) == ""


def test_the_judge_reads_the_best_aligned_pairs_and_keeps_the_most_contradictory():
    base = facts("A shirt is pressed for £2.")
    aligned = [(base, facts(f"Shirt pressing costs £{n}.")) for n in range(3, 3 + TOP_ALIGNED + 2)]
    surest = aligned[2][1].claim.text
    scorer = ScriptedScorer({frozenset({base.claim.text, aligned[1][1].claim.text}): CONTRADICTS,
                             frozenset({base.claim.text, surest}): (CONTRADICTS, 0.99)})
    judgement = judge_pairs(setup_for(scorer), {KEY: aligned})[KEY]
    asked = {frozenset(p) for p in scorer.asked}
    assert len(asked) == TOP_ALIGNED  # the best-aligned first, no more
    assert frozenset({base.claim.text, aligned[-1][1].claim.text}) not in asked
    a, b, verdict = judgement.best
    assert (a, b) == aligned[2] and verdict.contradicts == pytest.approx(0.99)
    assert judgement.all_apart < 0.1  # most pairs read as consistent: not apart


def test_statements_whose_values_agree_are_no_contradiction_whatever_the_judge_reads():
    a, b = facts("A duvet wash is £14."), facts("Duvet washes cost £14.00.")
    judgement = judge_pairs(setup_for(ScriptedScorer({frozenset({a.claim.text, b.claim.text}): CONTRADICTS})),
                            {KEY: [(a, b)]})[KEY]
    assert judgement.best is None


def test_a_pair_every_aligned_statement_of_which_is_apart_reads_as_apart():
    a, b = facts("Members wash for £3 a load."), facts("A load costs £4.")
    c = facts("Members dry for £1 a load.")
    script = {frozenset({a.claim.text, b.claim.text}): DIFFERENT_SCOPE, frozenset({c.claim.text, b.claim.text}): DIFFERENT_SCOPE}
    judgement = judge_pairs(setup_for(ScriptedScorer(script)), {KEY: [(a, b), (c, b)]})[KEY]
    assert judgement.all_apart == pytest.approx(0.96 + 0.04 / 3)
    one_consistent = judge_pairs(setup_for(ScriptedScorer({frozenset({a.claim.text, b.claim.text}): DIFFERENT_SCOPE})),
                                 {KEY: [(a, b), (c, b)]})[KEY]
    assert one_consistent.all_apart < 0.1  # the least apart pair decides


def rule_between(a, b, confidence=0.7, kind="price") -> Contradiction:
    return Contradiction(type=kind, confidence=confidence, said_a=a.claim.text, said_b=b.claim.text, a=a, b=b)


def test_a_rule_finding_is_vetoed_only_when_the_judge_calls_it_apart():
    a, b = facts("Members wash for £3 a load."), facts("A load costs £4.")
    rule = rule_between(a, b)
    c, d = facts("Members dry for £1 a load."), facts("Drying a load costs £2.")
    other = rule_between(c, d)
    script = {frozenset({a.claim.text, b.claim.text}): DIFFERENT_SCOPE, frozenset({c.claim.text, d.claim.text}): CONTRADICTS}
    # One batch for a set's rule findings, a verdict each, in order.
    assert vetoed(setup_for(ScriptedScorer(script)), [rule, other]) == [True, False]
    assert vetoed(setup_for(ScriptedScorer(script)), []) == []


def test_in_judge_mode_the_judge_alone_decides_with_a_calibrated_confidence():
    a, b = facts("A service wash costs £9."), facts("Service washes are £11.")
    script = ScriptedScorer({frozenset({a.claim.text, b.claim.text}): CONTRADICTS})
    setup = setup_for(script, mode="judge")
    judgement = judge_pairs(setup, {KEY: [(a, b)]})[KEY]
    found = judged_contradiction(setup, judgement, rule=None)
    assert (found.type, found.confidence, found.said_a, found.said_b) == ("price", 0.95, a.claim.text, b.claim.text)
    # A rule's finding counts for nothing in this mode, and the judge's bar for one article pair holds.
    assert judged_contradiction(setup, PairJudgement(None, 0.0), rule_between(a, b)) is None
    strict = setup_for(script, mode="judge", pair_min_confidence=0.99)
    assert judged_contradiction(strict, judgement, rule=None) is None


def test_judge_and_rules_keeps_the_rules_reading_at_the_surer_confidence():
    a, b = facts("A service wash costs £9."), facts("Service washes are £11.")
    setup = setup_for(ScriptedScorer({frozenset({a.claim.text, b.claim.text}): CONTRADICTS}))
    judgement = judge_pairs(setup, {KEY: [(a, b)]})[KEY]
    rule = rule_between(a, b, confidence=0.62, kind="procedure")
    both = judged_contradiction(setup, judgement, rule)
    assert (both.type, both.confidence) == ("procedure", 0.95)
    # The judge unsure: the rule's finding stands as it is.
    assert judged_contradiction(setup, PairJudgement(None, 0.0), rule) == rule


def test_judge_and_rules_drops_a_rule_finding_the_judge_calls_apart():
    a, b = facts("Members wash for £3 a load."), facts("A load costs £4.")
    setup = setup_for(ScriptedScorer({frozenset({a.claim.text, b.claim.text}): DIFFERENT_SCOPE}))
    judgement = judge_pairs(setup, {KEY: [(a, b)]})[KEY]
    assert judgement.best is not None  # read, but not a contradiction the judge reports
    assert judged_contradiction(setup, judgement, rule_between(a, b)) is None
