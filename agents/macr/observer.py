"""MACR Observer, the verification half: validate candidate rules on held-out staff decisions.

Demonstrations are staff decisions on conflicts: which side was right (a ref), "both" (the conflict
was dismissed: the difference is intentional) or "neither". Candidate rules come from elsewhere —
the executable templates in rules.py and, later, an LLM reading batches of training decisions
(`CandidateGenerator`, not built here) — and are kept only if they hold up on decisions they were
not drawn from:

- Coverage = share of validation decisions where the rule's Type matches and its Condition holds.
- Support  = share of covered decisions where its Resolution gives the staff's outcome. A rule that
  names a winner agrees when staff picked that side; a rule that cannot tell (None) agrees when
  staff picked no single side ("both" or "neither").

A rule is accepted when coverage >= min_coverage and support >= min_support (defaults 0.05 / 0.6).

Which decisions a rule is validated on depends on where it came from. A rule drawn from decisions (an
LLM candidate read from the training part) must be judged on the held-out part only. The executable
templates and manual rules were drawn from none of the knowledge base's decisions, so every decision
is held out for them: they are validated on all of them, and a reviewer's decision against one of
them counts at the very next run instead of landing, by the hash, in a training part that never
judges it. Each validation keeps the keys of the decisions it agreed and disagreed with, so the rules
page can show what a rule was validated on and its counter-examples.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agents.macr.rules import ConflictPair, Rule
from agents.types import ArticleText, pair_key

OUTCOME_BOTH = "both"  # dismissed: both are right, the difference is intentional
OUTCOME_NEITHER = "neither"
DEFAULT_MIN_COVERAGE = 0.05
DEFAULT_MIN_SUPPORT = 0.6
DEFAULT_VALIDATION_SHARE = 0.3


@dataclass(frozen=True)
class Decision:
    """One staff decision on a conflict, as plain data. `decided_on` is the `now` rules are evaluated at:
    a rule must be judged on what was knowable then (an effective date in the future was not in force)."""

    a: ArticleText
    b: ArticleText
    type: str
    outcome: str  # a ref of a or b | "both" | "neither"
    decided_on: dt.date
    snippets: dict[str, str] = field(default_factory=dict)
    key: str = ""  # what the caller identifies the decision by (the product: the conflict's id)
    statement_dates: dict[str, dt.date] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.outcome not in (self.a.ref, self.b.ref, OUTCOME_BOTH, OUTCOME_NEITHER):
            raise ValueError(f"outcome must be {self.a.ref!r}, {self.b.ref!r}, 'both' or 'neither', not {self.outcome!r}")

    @property
    def refs(self) -> tuple[str, str]:
        return pair_key(self.a.ref, self.b.ref)

    @property
    def pair(self) -> ConflictPair:
        return ConflictPair(a=self.a, b=self.b, type=self.type, snippets=self.snippets,
                            statement_dates=self.statement_dates)


# Applies a textual rule to one decision's pair (an LLM call); returns the winner or None.
TextualJudge = Callable[[Rule, ConflictPair, dt.date], "str | None"]
# The LLM half of induction (not built here): reads training decisions, proposes candidate rules.
CandidateGenerator = Callable[[Sequence[Decision]], list[Rule]]


@dataclass(frozen=True)
class RuleValidation:
    rule_id: str
    cases: int  # validation decisions seen
    covered: int
    supported: int
    coverage: float
    support: float
    accepted: bool
    skipped_reason: str = ""  # e.g. a textual rule with no judge to apply it
    agreed_keys: tuple[str, ...] = ()  # covered decisions where the rule gave the staff's outcome
    disagreed_keys: tuple[str, ...] = ()  # covered decisions where it did not: counter-examples
    held_out_only: bool = True  # validated on the held-out part (drawn from decisions) or on all of them
    by_standing: dict = field(default_factory=dict)  # standing -> [agreed, covered], where the rule named a side


@dataclass(frozen=True)
class InductionResult:
    active_rules: list[Rule]  # accepted candidates, carrying their coverage/support
    validations: list[RuleValidation]
    training: list[Decision]
    validation: list[Decision]
    candidates: list[Rule] = field(default_factory=list)  # every rule validated, in the order of `validations`


def split_decisions(
    *, decisions: Sequence[Decision], validation_share: float = DEFAULT_VALIDATION_SHARE, salt: str = "macr"
) -> tuple[list[Decision], list[Decision]]:
    """Deterministic train / validation split by a hash of (pair, type).

    Hashing rather than shuffling keeps a decision on the same side as new decisions arrive, so the
    nightly run never validates a rule on a case it was induced from the night before; the `salt`
    lets a caller draw a different split on purpose.
    """
    if not 0.0 <= validation_share <= 1.0:
        raise ValueError("validation_share must be between 0 and 1")
    training, validation = [], []
    for decision in decisions:
        key = f"{salt}|{decision.refs[0]}|{decision.refs[1]}|{decision.type}".encode()
        bucket = int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2**64
        (validation if bucket < validation_share else training).append(decision)
    return training, validation


def _rule_verdict(*, rule: Rule, decision: Decision, judge: TextualJudge | None) -> tuple[bool, str | None]:
    """(covered, winner) of one rule on one decision."""
    pair, now = decision.pair, decision.decided_on
    if rule.is_executable:
        if not rule.applies(pair, now):
            return False, None
        return True, rule.resolve(pair, now)
    # A textual rule's condition and resolution are judged together by the LLM: it answers with a
    # winner, None for "cannot tell", or raises LookupError when the condition does not hold.
    if not rule.matches_type(pair.type):
        return False, None
    try:
        return True, judge(rule, pair, now)
    except LookupError:
        return False, None


def _agrees(winner: str | None, outcome: str) -> bool:
    if winner is None:
        return outcome in (OUTCOME_BOTH, OUTCOME_NEITHER)
    return winner == outcome


def validate_rule(
    *,
    rule: Rule,
    decisions: Sequence[Decision],
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    min_support: float = DEFAULT_MIN_SUPPORT,
    judge: TextualJudge | None = None,
) -> RuleValidation:
    if not rule.is_executable and judge is None:
        return RuleValidation(rule.id, len(decisions), 0, 0, 0.0, 0.0, False, "textual rule and no LLM judge")
    from agents.macr.calibration import standing  # noqa: PLC0415 - calibration imports rules, as this module does (a cycle)

    covered = supported = 0
    agreed_keys, disagreed_keys = [], []
    by_standing: dict[str, list[int]] = {}
    for decision in decisions:
        is_covered, winner = _rule_verdict(rule=rule, decision=decision, judge=judge)
        if is_covered:
            covered += 1
            agrees = _agrees(winner, decision.outcome)
            supported += agrees
            (agreed_keys if agrees else disagreed_keys).append(decision.key)
            if winner is not None:
                counts = by_standing.setdefault(standing(decision.pair, winner), [0, 0])
                counts[0] += agrees
                counts[1] += 1
    coverage = covered / len(decisions) if decisions else 0.0
    support = supported / covered if covered else 0.0
    accepted = bool(decisions) and coverage >= min_coverage and support >= min_support
    return RuleValidation(rule.id, len(decisions), covered, supported, round(coverage, 4), round(support, 4), accepted,
                          agreed_keys=tuple(agreed_keys), disagreed_keys=tuple(disagreed_keys), by_standing=by_standing)


def validate_rules(
    *,
    candidates: Sequence[Rule],
    decisions: Sequence[Decision],
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    min_support: float = DEFAULT_MIN_SUPPORT,
    judge: TextualJudge | None = None,
) -> list[RuleValidation]:
    return [
        validate_rule(rule=rule, decisions=decisions, min_coverage=min_coverage, min_support=min_support, judge=judge)
        for rule in candidates
    ]


def drawn_from_decisions(rule: Rule) -> bool:
    """Induced rules came from (training) decisions; executable templates and manual rules from none."""
    return rule.origin == "induced"


def induce_rules(
    *,
    decisions: Sequence[Decision],
    candidates: Sequence[Rule],
    generate_candidates: CandidateGenerator | None = None,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    min_support: float = DEFAULT_MIN_SUPPORT,
    validation_share: float = DEFAULT_VALIDATION_SHARE,
    judge: TextualJudge | None = None,
) -> InductionResult:
    """One induction run: split, add generated candidates (from training decisions only), validate on
    the held-out part, keep the accepted rules with their figures attached."""
    training, validation = split_decisions(decisions=decisions, validation_share=validation_share)
    all_candidates = list(candidates) + (list(generate_candidates(training)) if generate_candidates else [])
    validations = []
    for rule in all_candidates:
        held_out_only = drawn_from_decisions(rule)
        result = validate_rule(rule=rule, decisions=validation if held_out_only else decisions,
                               min_coverage=min_coverage, min_support=min_support, judge=judge)
        validations.append(dataclasses.replace(result, held_out_only=held_out_only))
    active = [
        rule.with_stats(coverage=result.coverage, support=result.support, cases=result.covered, agreed=result.supported,
                        by_standing=result.by_standing)
        for rule, result in zip(all_candidates, validations)
        if result.accepted
    ]
    return InductionResult(
        active_rules=active, validations=validations, training=training, validation=validation, candidates=all_candidates
    )
