"""agents.judge and agents.claims.judged: the learned judge as a plain callable (cache, both orders,
calibration), and the claim detector's use of it, with a stub judge where the test is about the mechanism.
Every sentence is written for these tests (no data set's sentences or names)."""
from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pytest

from agents.claims import ClaimVectors, JudgeSetup, detect_claim_conflicts
from agents.judge import (
    CONTRADICTS,
    DIFFERENT_SCOPE,
    LABELS,
    UNRELATED,
    CachedJudge,
    Calibration,
    StatementPair,
    tail_point,
)
from agents.types import ArticleText
from articles.embeddings import embed_texts

NOW = dt.date(2026, 6, 1)


def one_hot(index: int, sure: float = 0.97) -> np.ndarray:
    row = np.full(4, (1 - sure) / 3)
    row[index] = sure
    return row


class StubScorer:
    """Scores by a visible rule, so a test can say what the judge 'thinks': statements whose numbers differ
    contradict, statements naming 'members' on one side only are different scope, the rest consistent."""

    def __init__(self):
        self.calls: list[list[StatementPair]] = []

    def __call__(self, pairs):
        self.calls.append(list(pairs))
        rows = []
        for pair in pairs:
            numbers_a, numbers_b = set(re.findall(r"\d+", pair.text_a)), set(re.findall(r"\d+", pair.text_b))
            if ("members" in pair.text_a.lower()) != ("members" in pair.text_b.lower()):
                rows.append(one_hot(DIFFERENT_SCOPE))
            elif numbers_a and numbers_b and numbers_a != numbers_b:
                rows.append(one_hot(CONTRADICTS))
            else:
                rows.append(one_hot(1))
        return np.array(rows)


def calibration(**overrides) -> Calibration:
    values = dict(thresholds=(0.0, 0.5, 0.9), values=(0.05, 0.6, 0.93), high_precision_score=0.9, report_score=0.5,
                  settle_score=0.9)
    values.update(overrides)
    return Calibration(**values)


def test_the_cache_scores_each_text_pair_once_in_both_orders():
    scorer = StubScorer()
    judge = CachedJudge(scorer)
    pair = StatementPair("Lockers cost 3 a day.", "Lockers cost 4 a day.", "Lockers", "Prices")
    first = judge.judge([pair])[0]
    assert first.label == "contradicts"
    assert len(scorer.calls) == 1 and len(scorer.calls[0]) == 2  # the pair and its swap
    assert scorer.calls[0][1] == pair.swapped()
    again = judge.judge([pair, pair.swapped()])  # the same texts in either order: from the cache
    assert len(scorer.calls) == 1 and judge.inferred == 1
    assert again[0] == again[1] == first


def test_both_orders_are_averaged():
    def lopsided(pairs):  # says contradicts only when the shorter text comes first
        return np.array([one_hot(CONTRADICTS, 1.0) if len(p.text_a) < len(p.text_b) else one_hot(1, 1.0) for p in pairs])

    verdict = CachedJudge(lopsided).judge([StatementPair("Short one.", "A much longer statement.")])[0]
    assert verdict.contradicts == pytest.approx(0.5)


def test_the_cache_forgets_the_oldest_beyond_its_size():
    judge = CachedJudge(StubScorer(), max_entries=2)
    pairs = [StatementPair(f"Item {i} costs 1.", f"Item {i} costs 2.") for i in range(3)]
    judge.judge(pairs)
    judge.judge([pairs[0]])
    assert judge.inferred == 4  # the first was evicted and scored again


def test_calibration_is_monotone_and_names_its_precision_points():
    rng = np.random.default_rng(5)
    scores = rng.uniform(size=2000)
    positives = rng.uniform(size=2000) < scores ** 2  # more likely a contradiction the higher the score
    fitted = Calibration.fit(scores, positives)
    probes = np.linspace(0, 1, 101)
    confidences = [fitted.confidence(x) for x in probes]
    assert all(a <= b for a, b in zip(confidences, confidences[1:]))
    assert confidences[0] < 0.1 and confidences[-1] > 0.8
    tail = positives[scores >= fitted.high_precision_score]
    assert tail.mean() >= 0.9 and len(tail) >= 10
    assert fitted.report_score <= fitted.high_precision_score
    assert Calibration.from_json(fitted.to_json()) == fitted


def test_no_precision_point_when_nothing_reaches_it():
    assert tail_point(np.array([0.9, 0.8, 0.7]), np.array([0.0, 0.0, 1.0]), 0.9) == 1.01


@pytest.fixture(scope="module")
def vectors():
    return ClaimVectors(embed_texts)


def articles(first: str, second: str) -> list[ArticleText]:
    return [ArticleText(ref="kb-1", title="Bike lockers", body=first, updated_at=dt.date(2026, 1, 5)),
            ArticleText(ref="kb-2", title="Locker hire", body=second, updated_at=dt.date(2026, 3, 9))]


def test_the_judge_decides_and_the_values_explain(vectors):
    setup = JudgeSetup(judge=CachedJudge(StubScorer()), calibration=calibration(), mode="judge")
    result = detect_claim_conflicts(articles=articles("A bike locker costs €3 per day.",
                                                      "Bike lockers are €5 per day."),
                                    now=NOW, vectors=vectors, judge=setup)
    [finding] = result.findings
    assert finding.type == "price" and finding.confidence == 0.93
    assert "€3" in finding.explanation and "€5" in finding.explanation


def test_a_pair_the_judge_calls_apart_is_settled_and_vetoes_a_rule(vectors):
    first, second = "Lockers cost €3 per day.", "For members, lockers cost €2 per day."
    rules_only = detect_claim_conflicts(articles=articles(first, second), now=NOW, vectors=vectors)
    setup = JudgeSetup(judge=CachedJudge(StubScorer()), calibration=calibration(), mode="judge+rules")
    judged = detect_claim_conflicts(articles=articles(first, second), now=NOW, vectors=vectors, judge=setup)
    assert judged.findings == []
    assert ("kb-1", "kb-2") in judged.settled_apart and ("kb-1", "kb-2") in judged.unrelated_pairs()
    assert len(rules_only.findings) == 1  # the rules alone take the members' price for a contradiction: vetoed


def test_rules_mode_never_calls_the_judge(vectors):
    scorer = StubScorer()
    setup = JudgeSetup(judge=CachedJudge(scorer), calibration=calibration(), mode="rules")
    detect_claim_conflicts(articles=articles("Lockers cost €3.", "Lockers cost €4."), now=NOW, vectors=vectors,
                           judge=setup)
    assert scorer.calls == []


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="judge mode 'vote'"):
        JudgeSetup(judge=CachedJudge(StubScorer()), calibration=calibration(), mode="vote")


def test_labels_are_four_and_ordered():
    assert LABELS[CONTRADICTS] == "contradicts" and LABELS[UNRELATED] == "unrelated" and len(LABELS) == 4


def test_veto_reads_only_what_a_rule_flagged_and_drops_what_it_calls_apart(vectors):
    scorer = StubScorer()
    setup = JudgeSetup(judge=CachedJudge(scorer), calibration=calibration(), mode="veto")
    members = articles("Lockers cost €3 per day.", "For members, lockers cost €2 per day.")
    assert detect_claim_conflicts(articles=members, now=NOW, vectors=vectors, judge=setup).findings == []
    assert [len(call) for call in scorer.calls] == [2]  # one flagged statement pair, in both orders
    # A rule finding the judge does not call apart stands, with the rule's own reading.
    prices = articles("A bike locker costs €3 per day.", "Bike lockers are €5 per day.")
    [finding] = detect_claim_conflicts(articles=prices, now=NOW, vectors=vectors, judge=setup).findings
    assert finding.type == "price"


def test_a_vetoed_finding_gives_way_to_the_pairs_next_finding(vectors):
    deposits = {"A locker key needs a deposit of €9.", "The deposit for a locker key is €15."}

    def scorer(pairs):  # calls the two deposits apart, anything else a contradiction
        return np.array([one_hot(UNRELATED if {p.text_a, p.text_b} == deposits else CONTRADICTS) for p in pairs])

    setup = JudgeSetup(judge=CachedJudge(scorer), calibration=calibration(), mode="veto")
    pair = articles("A bike locker costs €3 per day. A locker key needs a deposit of €9.",
                    "Bike lockers are €5 per day. The deposit for a locker key is €15.")
    rules = detect_claim_conflicts(articles=pair, now=NOW, vectors=vectors).findings
    assert [set(f.snippets.values()) for f in rules] == [deposits]  # the rules' strongest finding
    [finding] = detect_claim_conflicts(articles=pair, now=NOW, vectors=vectors, judge=setup).findings
    # Vetoed, it gives way to the pair's next rule finding, which the judge does not veto.
    assert set(finding.snippets.values()) == {"A bike locker costs €3 per day.", "Bike lockers are €5 per day."}
