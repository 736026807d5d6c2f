"""How far a suggestion can be trusted: calibrated confidence, and the threshold below which it is "cannot tell".

A rule's confidence on a pair is an estimate of how often it names the side staff would pick in that
situation, from two kinds of evidence:

- the knowledge base's own decisions: the Observer's validation counts (`validated_agreed` of
  `validated_cases` covered decisions), and
- for the built-in executable rules, a prior measured on the dev half of kb-conflicts-broad, per rule
  and per *standing* of the two sides (is the side the rule lets lose an official document facing an
  unofficial page, the other way round, or neither?), because the same rule is much surer in some of
  those situations than in others. A pair labelled "cannot tell" that the rule answered counts as wrong.

They combine as a Beta posterior mean: (agreed + w·p) / (cases + w), with the prior's weight w capped at
PRIOR_WEIGHT_CAP decisions so a knowledge base's own reviewers move it visibly, and a rule with no
measurement at all starting at p = 0.5 with w = 2 (no evidence either way: below every threshold, so
never shown as advice). The confidence rises with support at a fixed number of cases, and with the
number of cases at a fixed support above the prior.

The priors and the default threshold (the lowest confidence at which the suggestions made on the dev
half are still ≥ 0.95 precise) are written to rule_priors.json by
`bench/suggestions_quality.py --write-priors`, from the dev half only.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from agents.macr.rules import ConflictPair, Rule, is_official_document

PRIORS_PATH = Path(__file__).with_name("rule_priors.json")
PRIOR_WEIGHT_CAP = 20
UNMEASURED_PRIOR = 0.5
UNMEASURED_WEIGHT = 2
TARGET_PRECISION = 0.95
FALLBACK_THRESHOLD = 0.9  # only when rule_priors.json is missing

STANDING_LOSER_OFFICIAL = "loser-official"  # the side the rule lets lose is official, the winner is not
STANDING_WINNER_OFFICIAL = "winner-official"
STANDING_LEVEL = "same-standing"
STANDING_WORDS = {
    STANDING_LOSER_OFFICIAL: "where it lets an official document lose to an unofficial page",
    STANDING_WINNER_OFFICIAL: "where it lets an official document beat an unofficial page",
    STANDING_LEVEL: "between two texts of the same standing",
}


@dataclass(frozen=True)
class Prior:
    right: int
    decided: int

    @property
    def accuracy(self) -> float:
        """Laplace-smoothed: one measured decision is not certainty either way."""
        return (self.right + 1) / (self.decided + 2)


@dataclass(frozen=True)
class Priors:
    rules: Mapping[str, Mapping[str, Prior]]
    threshold: float
    source: str = ""

    def prior(self, rule_id: str, standing: str) -> Prior | None:
        by_standing = self.rules.get(rule_id) or {}
        return by_standing.get(standing)


def priors_from_json(data: Mapping) -> Priors:
    rules = {
        rule_id: {standing: Prior(right=int(v[0]), decided=int(v[1])) for standing, v in by_standing.items()}
        for rule_id, by_standing in (data.get("rules") or {}).items()
    }
    return Priors(rules=rules, threshold=float(data.get("threshold", FALLBACK_THRESHOLD)), source=data.get("source", ""))


@lru_cache(maxsize=1)
def builtin_priors() -> Priors:
    if not PRIORS_PATH.is_file():
        return Priors(rules={}, threshold=FALLBACK_THRESHOLD)
    return priors_from_json(json.loads(PRIORS_PATH.read_text(encoding="utf-8")))


def default_threshold() -> float:
    """The threshold chosen on the dev half for >= 0.95 precision (a knowledge base may set its own)."""
    return builtin_priors().threshold


def standing(pair: ConflictPair, winner: str) -> str:
    win = pair.a if pair.a.ref == winner else pair.b
    lose = pair.other(win)
    win_official, lose_official = is_official_document(win), is_official_document(lose)
    if lose_official and not win_official:
        return STANDING_LOSER_OFFICIAL
    if win_official and not lose_official:
        return STANDING_WINNER_OFFICIAL
    return STANDING_LEVEL


def posterior(*, agreed: int, cases: int, prior: float, weight: float) -> float:
    """Beta posterior mean of a success rate: monotone in `agreed` at fixed `cases`."""
    if agreed < 0 or cases < 0 or agreed > cases:
        raise ValueError(f"agreed ({agreed}) must be between 0 and cases ({cases})")
    return (agreed + weight * prior) / (cases + weight)


@dataclass(frozen=True)
class Confidence:
    value: float
    evidence: str  # in words, for the reviewer
    raw: float = 0.0  # unrounded


def rule_confidence(rule: Rule, *, pair: ConflictPair, winner: str, priors: Priors | None = None) -> Confidence:
    priors = priors if priors is not None else builtin_priors()
    situation = standing(pair, winner)
    measured = priors.prior(rule.id, situation)
    if measured is not None and measured.decided:
        prior, weight = measured.accuracy, min(measured.decided, PRIOR_WEIGHT_CAP)
        parts = [f"right in {measured.right} of {measured.decided} test decisions {STANDING_WORDS[situation]}"]
    else:
        prior, weight = UNMEASURED_PRIOR, UNMEASURED_WEIGHT
        parts = []
    cases, agreed = rule.validated_cases, rule.validated_agreed
    where = ""
    if rule.validated_by_standing:
        # the knowledge base's decisions in the same situation; none there: none count
        agreed, cases = rule.validated_by_standing.get(situation, (0, 0))
        where = f" {STANDING_WORDS[situation]}"
    if cases:
        parts.append(f"agreed with {agreed} of {cases} of this knowledge base's decisions{where}")
    elif not parts:
        parts.append("never validated on any decision")
    value = posterior(agreed=agreed, cases=cases, prior=prior, weight=weight)
    return Confidence(value=round(value, 4), evidence="; ".join(parts), raw=value)
