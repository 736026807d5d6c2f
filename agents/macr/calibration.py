"""How far a suggestion can be trusted: calibrated confidence, and the threshold below which it is "cannot tell".

A rule's confidence on a pair is an estimate of how often it names the side staff would pick in that
situation, from two kinds of evidence:

- the knowledge base's own decisions: the Observer's validation counts (`validated_agreed` of
  `validated_cases` covered decisions), and
- for the built-in executable rules, a prior measured on the dev half of kb-conflicts-broad, per rule
  and per *situation*: which kind of text the rule lets win over which (a terms or policy document, another
  official document, an FAQ answer, a web page), because the same rule is much surer in some of those
  situations than in others ("the newer text wins" is right for a web page announcing a change against an
  older guide, and a coin flip for an FAQ answer against the terms it summarises). A situation measured on
  few decisions leans on the coarser *standing* of the two sides (is the side the rule lets lose an
  official document facing an unofficial page, the other way round, or neither?): partial pooling, with
  the standing's accuracy counting as SITUATION_POOLING decisions. A pair labelled "cannot tell" that the rule answered counts as wrong.

They combine as a Beta posterior mean: (agreed + w·p) / (cases + w), with the prior's weight w capped at
PRIOR_WEIGHT_CAP decisions so a knowledge base's own reviewers move it visibly, and a rule with no
measurement at all starting at p = 0.5 with w = 2 (no evidence either way: below every threshold, so
never shown as advice). The confidence rises with support at a fixed number of cases, and with the
number of cases at a fixed support above the prior.

The priors and the default threshold (the lowest confidence at which the suggestions made on the dev
half are still ≥ 0.95 precise, keeping no confidence level that is on its own right less than 4 times
in 5) are written to rule_priors.json by
`bench/suggestions_quality.py --write-priors`, from the dev half only.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from agents.macr.rules import ConflictPair, Rule, is_official_document
from agents.types import ArticleText

PRIORS_PATH = Path(__file__).with_name("rule_priors.json")
PRIOR_WEIGHT_CAP = 20
UNMEASURED_PRIOR = 0.5
UNMEASURED_WEIGHT = 2
TARGET_PRECISION = 0.95
MIN_BAND_PRECISION = 0.8  # the default threshold never keeps a confidence level right less than 4 times in 5 on dev
FALLBACK_THRESHOLD = 0.9  # only when rule_priors.json is missing

STANDING_LOSER_OFFICIAL = "loser-official"  # the side the rule lets lose is official, the winner is not
STANDING_WINNER_OFFICIAL = "winner-official"
STANDING_LEVEL = "same-standing"
SITUATION_POOLING = 4  # a situation's record is shrunk towards its standing's with the weight of this many decisions

# What kind of text a side is, for the situations the priors are measured in. A document that binds
# (terms, conditions, a policy, an agreement, regulations) is told apart from other official documents
# (guides, handbooks, price lists, templates): an FAQ answer that contradicts the one is not the same
# situation as a web page that contradicts the other.
KIND_TERMS, KIND_DOCUMENT, KIND_FAQ, KIND_PAGE = "terms", "document", "faq", "page"
KIND_WORDS = {
    KIND_TERMS: "a terms or policy document",
    KIND_DOCUMENT: "an official document",
    KIND_FAQ: "an FAQ answer",
    KIND_PAGE: "a web page",
}
_BINDING_TITLE = re.compile(r"\b(?:terms|conditions|polic(?:y|ies)|agreements?|contracts?|regulations|wording)\b",
                            re.IGNORECASE)

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
    rules: Mapping[str, Mapping[str, Prior]]  # rule id -> standing -> prior
    threshold: float
    source: str = ""
    situations: Mapping[str, Mapping[str, Prior]] = field(default_factory=dict)  # rule id -> situation -> prior

    def prior(self, rule_id: str, standing: str) -> Prior | None:
        by_standing = self.rules.get(rule_id) or {}
        return by_standing.get(standing)

    def measured(self, rule_id: str, *, situation_key: str, standing_key: str) -> tuple[Prior | None, float, str]:
        """The measurement to use, its (pooled) accuracy, and the words for where it was measured.

        A situation's own record is shrunk towards its standing's accuracy with the weight of
        SITUATION_POOLING decisions (partial pooling): a situation measured a few times moves the
        estimate only a little, one measured often speaks for itself. No record of the situation: the
        standing's figure alone."""
        coarse = self.prior(rule_id, standing_key)
        fine = (self.situations.get(rule_id) or {}).get(situation_key)
        if fine is None or not fine.decided:
            return coarse, (coarse.accuracy if coarse else UNMEASURED_PRIOR), STANDING_WORDS[standing_key]
        base = coarse.accuracy if coarse is not None and coarse.decided else UNMEASURED_PRIOR
        pooled = (fine.right + SITUATION_POOLING * base) / (fine.decided + SITUATION_POOLING)
        return fine, pooled, situation_words(situation_key)


def _prior_table(data: Mapping | None) -> dict[str, dict[str, Prior]]:
    return {
        rule_id: {key: Prior(right=int(v[0]), decided=int(v[1])) for key, v in by_key.items()}
        for rule_id, by_key in (data or {}).items()
    }


def priors_from_json(data: Mapping) -> Priors:
    return Priors(rules=_prior_table(data.get("rules")), situations=_prior_table(data.get("situations")),
                  threshold=float(data.get("threshold", FALLBACK_THRESHOLD)), source=data.get("source", ""))


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


def document_kind(article: ArticleText) -> str:
    if is_official_document(article):
        return KIND_TERMS if _BINDING_TITLE.search(article.title) else KIND_DOCUMENT
    return KIND_FAQ if article.source == "faq" else KIND_PAGE


def situation(pair: ConflictPair, winner: str) -> str:
    """Which kind of text wins over which: "faq-over-terms", "page-over-document", ..."""
    win = pair.a if pair.a.ref == winner else pair.b
    return f"{document_kind(win)}-over-{document_kind(pair.other(win))}"


def situation_words(key: str) -> str:
    winner, _, loser = key.partition("-over-")
    return f"where it lets {KIND_WORDS.get(winner, winner)} win over {KIND_WORDS.get(loser, loser)}"


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
    where = standing(pair, winner)
    measured, accuracy, measured_where = priors.measured(rule.id, situation_key=situation(pair, winner),
                                                         standing_key=where)
    if measured is not None and measured.decided:
        prior, weight = accuracy, min(measured.decided, PRIOR_WEIGHT_CAP)
        parts = [f"right in {measured.right} of {measured.decided} test decisions {measured_where}"]
    else:
        prior, weight = UNMEASURED_PRIOR, UNMEASURED_WEIGHT
        parts = []
    cases, agreed = rule.validated_cases, rule.validated_agreed
    own_where = ""
    if rule.validated_by_standing:
        # the knowledge base's decisions in the same standing; none there: none count
        agreed, cases = rule.validated_by_standing.get(where, (0, 0))
        own_where = f" {STANDING_WORDS[where]}"
    if cases:
        parts.append(f"agreed with {agreed} of {cases} of this knowledge base's decisions{own_where}")
    elif not parts:
        parts.append("never validated on any decision")
    value = posterior(agreed=agreed, cases=cases, prior=prior, weight=weight)
    return Confidence(value=round(value, 4), evidence="; ".join(parts), raw=value)
