"""Plain data exchanged between `agents` and the apps that persist its results.

`agents` never imports models: callers turn rows into these, and persist what comes back.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

# A turn's check looks at most at this many retrieved articles (the best-ranked ones).
MAX_ARTICLES_CHECKED = 20

# The kinds of conflict the detectors report, with the label the console shows; the models' choices,
# the LLM detector's schema and its prompt all derive from this one list.
CONFLICT_TYPE_LABELS: dict[str, str] = {
    "price": "Price",
    "hours": "Hours",
    "contact": "Contact details",
    "date": "Dates and deadlines",
    "policy": "Policy",
    "eligibility": "Eligibility",
    "procedure": "Procedure",
    "quantity": "Quantity",
    "other": "Other",
}
CONFLICT_TYPES: tuple[str, ...] = tuple(CONFLICT_TYPE_LABELS)

# A finding about one article rather than a pair, recorded by the answer path (never by a detector, so it is not
# among CONFLICT_TYPES): IGD's answer-level filter routed to the model's closed-book memory against this article.
MODEL_DISAGREES = "model_disagrees"
ARTICLE_FINDING_TYPE_LABELS: dict[str, str] = {MODEL_DISAGREES: "Model disagrees with article"}
# Every kind the console stores and filters on: the detectors' pair types, then the one-article findings.
RECORDED_TYPE_LABELS: dict[str, str] = {**CONFLICT_TYPE_LABELS, **ARTICLE_FINDING_TYPE_LABELS}


# What the LLM is shown of an article for some pairs (agents.excerpts): the aligned claims only, as
# claim index -> (its heading or the question it answers, its text exactly as in the body).
ClaimsShown = dict[int, tuple[str, str]]
# The claim pairs an excerpt shows for one pair of articles: key (agents.excerpts.claim_pair_key) -> each
# claim's (ref, text), so a call can tell which of them its prompt really held.
ClaimPairsShown = dict[str, tuple[tuple[str, str], tuple[str, str]]]


@dataclass(frozen=True)
class ArticleText:
    """One retrieved article as the detectors and MACR see it."""

    ref: str
    title: str
    body: str
    updated_at: dt.date | None = None
    source: str = "faq"  # faq | pdf | web | manual


@dataclass(frozen=True)
class ConflictFinding:
    """Two articles that cannot both be right. `refs` is sorted; snippets are keyed by ref."""

    refs: tuple[str, str]
    type: str  # one of CONFLICT_TYPES
    explanation: str
    snippets: dict[str, str] = field(default_factory=dict)
    confidence: float = 1.0  # 0..1: how sure the detector is
    detector: str = "claims"  # claims | llm | both (the claims found it and the LLM confirmed it)

    def as_json(self) -> dict:
        return {
            "refs": list(self.refs),
            "type": self.type,
            "explanation": self.explanation,
            "snippets": dict(self.snippets),
            "detector": self.detector,
            "confidence": self.confidence,
        }


@dataclass(frozen=True)
class PairJudgement:
    """A verdict on one pair, conflict or not, as cached by article versions."""

    refs: tuple[str, str]
    conflict: ConflictFinding | None
    detector: str = "llm"  # who judged: "llm", or "claims" for a pair about different things altogether


@dataclass
class DetectionResult:
    findings: list[ConflictFinding]
    judged_pairs: list[tuple[str, str]] = field(default_factory=list)
    llm_calls: int = 0
    tokens: int = 0
    dropped_invented_refs: int = 0
    dropped_bad_snippets: int = 0
    model: str = ""
    # Keys of the claim pairs (agents.excerpts) this call showed only for pairs it judged "no conflict".
    consistent_claim_pairs: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Suggestion:
    refs: tuple[str, str]
    winner: str | None  # None: cannot tell
    explanation: str
    rules: tuple[str, ...] = ()
    confidence: float = 0.0
    proposed_edit: str | None = None
    leaning: str | None = None  # "cannot tell" below the threshold: the side the rules leaned to
    leaning_confidence: float = 0.0

    def as_json(self) -> dict:
        return {
            "refs": list(self.refs),
            "winner": self.winner,
            "explanation": self.explanation,
            "rules": list(self.rules),
        }


def pair_key(a: str, b: str) -> tuple[str, str]:
    """The unordered pair of two refs, as a sorted tuple."""
    return (a, b) if a <= b else (b, a)
