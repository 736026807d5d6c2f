"""The learned judge inside the claim detector: the aligned statement pairs of two articles are scored by
the judge (agents.judge), and its verdict decides; the typed values stay as evidence and make the
explanation concrete.

Modes:
    rules        the rule families of compare.py alone (the detector before the judge)
    veto         the rules' findings, less those whose statements the judge calls different scope or
                 unrelated; the judge reads only the statements a rule flagged (cheap) and adds no finding
    judge        the judge decides; values only explain
    judge+rules  the judge's findings, plus rule findings the judge does not veto, so a rule's concrete
                 reading survives where the judge is unsure
"""
from __future__ import annotations

from dataclasses import dataclass

from agents.judge import CachedJudge, Calibration, StatementPair, Verdict

from .analysis import ClaimFacts
from .contradiction import Contradiction
from .values import AGE, CLOCK, COUNT, DATE, EMAIL, MONEY, PERCENT, PHONE, QUANTITY, URL, comparable, equal_values

JUDGE_MODES = ("rules", "veto", "judge", "judge+rules")
TOP_ALIGNED = 6  # statement pairs per article pair the judge reads, best-aligned first
VETO_APART = 0.8  # judge+rules: a rule finding whose statements the judge calls apart this surely is dropped
# An article pair is read by its most contradictory aligned statement pair (a maximum over several), so its own
# finding needs a higher bar than one statement pair: chosen on the dev half only (bench/judge_threshold.py:
# judge+rules F1 0.64 at 0.90 against 0.54 at 0.50).
PAIR_MIN_CONFIDENCE = 0.90

# What a disagreement is about, from the kinds of value the two statements carry (first match wins).
TYPE_BY_VALUE_KIND = ((MONEY, "price"), (PERCENT, "price"), (CLOCK, "hours"), (PHONE, "contact"), (EMAIL, "contact"),
                      (URL, "contact"), (DATE, "date"), (AGE, "eligibility"), (QUANTITY, "quantity"), (COUNT, "quantity"))


@dataclass(frozen=True)
class JudgeSetup:
    judge: CachedJudge
    calibration: Calibration
    mode: str = "judge+rules"
    pair_min_confidence: float = PAIR_MIN_CONFIDENCE

    def __post_init__(self) -> None:
        if self.mode not in JUDGE_MODES:
            raise ValueError(f"judge mode {self.mode!r} is none of {', '.join(JUDGE_MODES)}")


def statement_pair(a: ClaimFacts, b: ClaimFacts) -> StatementPair:
    def side(facts: ClaimFacts) -> tuple[str, str]:
        claim = facts.claim
        text = f"{claim.label}: {claim.text}" if claim.label else claim.text
        return text, claim.context

    (text_a, heading_a), (text_b, heading_b) = side(a), side(b)
    return StatementPair(text_a, text_b, heading_a, heading_b)


def disagreement_type(a: ClaimFacts, b: ClaimFacts) -> str:
    kinds = {value.kind for value in a.values} & {value.kind for value in b.values}
    for kind, conflict_type in TYPE_BY_VALUE_KIND:
        if kind in kinds:
            return conflict_type
    return "policy"


def values_agree(a: ClaimFacts, b: ClaimFacts) -> bool:
    """Both statements give values that measure the same things, and every such value has its equal on the
    other side (€24.99 a month / 24.99 EUR per month; 48 hours / 2 days): the typed values say the two
    agree, which outweighs the judge (it reads same-value paraphrases as contradictions too often)."""
    pairs = [(x, y) for x in a.values for y in b.values if comparable(x, y, strict_period=False)]
    if not pairs:
        return False
    left = {id(x) for x, _ in pairs}
    right = {id(y) for _, y in pairs}
    matched_left = {id(x) for x, y in pairs if equal_values(x, y)}
    matched_right = {id(y) for x, y in pairs if equal_values(x, y)}
    return matched_left == left and matched_right == right


def value_difference(a: ClaimFacts, b: ClaimFacts) -> str:
    """"one says €21.00, the other €19.80" when both statements give a value of one kind and they differ."""
    for kind, _ in TYPE_BY_VALUE_KIND:
        left = [v for v in a.values if v.kind == kind]
        right = [v for v in b.values if v.kind == kind]
        if left and right and {v.key for v in left}.isdisjoint({v.key for v in right}):
            return f"one says {left[0].text.strip()}, the other {right[0].text.strip()}"
    return ""


@dataclass
class PairJudgement:
    """The judge's reading of one article pair: its most contradictory aligned statement pair, and whether
    every aligned pair is confidently apart (different scope or unrelated)."""

    best: tuple[ClaimFacts, ClaimFacts, Verdict] | None
    all_apart: float  # the least "apart" score over the aligned pairs (1.0: none aligned)


def judge_pairs(setup: JudgeSetup, aligned: dict[tuple[str, str], list[tuple[ClaimFacts, ClaimFacts]]],
                also: list[Contradiction] = ()) -> dict[tuple[str, str], PairJudgement]:
    """Judge the top aligned statement pairs (best first) of every article pair in one batch (cached per text pair),
    with the statements of the rule findings `also` (which `vetoed` then reads from the cache)."""
    requests = [(key, a, b) for key, items in aligned.items() for a, b in items[:TOP_ALIGNED]]
    verdicts = setup.judge.judge([statement_pair(a, b) for _, a, b in requests]
                                 + [statement_pair(rule.a, rule.b) for rule in also])
    out: dict[tuple[str, str], PairJudgement] = {key: PairJudgement(None, 1.0) for key in aligned}
    for (key, a, b), verdict in zip(requests, verdicts):
        judgement = out[key]
        judgement.all_apart = min(judgement.all_apart, verdict.settles_apart)
        if values_agree(a, b):
            continue  # the values are evidence: equal values are no contradiction, whatever the judge reads
        if judgement.best is None or verdict.contradicts > judgement.best[2].contradicts:
            judgement.best = (a, b, verdict)
    return out


def vetoed(setup: JudgeSetup, rules: list[Contradiction]) -> list[bool]:
    """For each rule finding, whether the judge calls the statements it flagged different scope or unrelated,
    surely enough to drop it. The statements of all of them are judged in one batch (one model run for a set)."""
    verdicts = setup.judge.judge([statement_pair(rule.a, rule.b) for rule in rules]) if rules else []
    return [verdict.settles_apart >= VETO_APART for verdict in verdicts]


def judged_contradiction(setup: JudgeSetup, judgement: PairJudgement, rule: Contradiction | None
                         ) -> Contradiction | None:
    """The finding for one article pair under the setup's mode, its confidence calibrated."""
    calibration = setup.calibration
    judge_found = None
    if judgement.best is not None:
        a, b, verdict = judgement.best
        confidence = calibration.confidence(verdict.contradicts)
        if verdict.contradicts >= calibration.report_score and confidence >= setup.pair_min_confidence:
            judge_found = Contradiction(type=disagreement_type(a, b), confidence=confidence,
                                        said_a=a.claim.text, said_b=b.claim.text, a=a, b=b)
    if setup.mode == "judge":
        return judge_found
    if rule is not None and vetoed(setup, [rule])[0]:  # judge+rules (judged already, with the set: from the cache)
        rule = None
    if judge_found is None:
        return rule
    if rule is None:
        return judge_found
    # Both: the rule's concrete reading (its type and statements), at the surer of the two confidences.
    return Contradiction(type=rule.type, confidence=max(rule.confidence, judge_found.confidence),
                         said_a=rule.said_a, said_b=rule.said_b, a=rule.a, b=rule.b)
