"""Per-turn conflict detection over one retrieval set: the rules every detector shares.

- fewer than 2 articles: nothing to compare, nothing is called;
- more than MAX_ARTICLES: only the first ones (callers pass them best-ranked first);
- a pair with a cached verdict (same article versions) is never sent to the LLM again.

Timeouts and fail-open belong to the caller (the turn pipeline); an LLM failure propagates as
LLMError so the caller can record "error: <reason>".
"""
from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass, field
from typing import Literal

from agents.llm import LLMConfig, LLMError
from agents.llm_detector import detect_with_llm, verdicts_from_result
from agents.types import MAX_ARTICLES_CHECKED, ArticleText, ConflictFinding, PairJudgement, pair_key

Detector = Literal["claims", "llm", "auto"]
DETECTORS: tuple[str, ...] = ("claims", "llm", "auto")
MIN_ARTICLES = 2
MAX_ARTICLES = MAX_ARTICLES_CHECKED

STATUS_OK = "ok"
STATUS_SKIPPED = "skipped_fewer_than_2"
STATUS_CAPPED = f"capped_at_{MAX_ARTICLES}"  # ran, on the first MAX_ARTICLES articles only


@dataclass
class DetectionOutcome:
    status: str
    findings: list[ConflictFinding] = field(default_factory=list)
    # Verdicts the LLM gave in this run, conflict or not: what the caller caches by article versions.
    judgements: list[PairJudgement] = field(default_factory=list)
    articles_considered: int = 0
    cache_hits: int = 0
    llm_calls: int = 0
    tokens: int = 0
    model: str = ""
    dropped_invented_refs: int = 0
    dropped_bad_snippets: int = 0

    @property
    def judged_pairs(self) -> list[tuple[str, str]]:
        return [judgement.refs for judgement in self.judgements]

    @property
    def ran(self) -> bool:
        return self.status != STATUS_SKIPPED


def run_detection(
    *,
    articles: list[ArticleText],
    detector: Detector,
    now: dt.date | None = None,
    llm_config: LLMConfig | None = None,
    cached: dict[tuple[str, str], ConflictFinding | None] | None = None,
) -> DetectionOutcome:
    """Find conflicting pairs among `articles` (best-ranked first).

    claims: the deterministic claim detector only (no cache, no LLM).
    llm:    cached verdicts, then one LLM call for every uncached pair; needs `llm_config`.
    auto:   the claim detector first; then cached verdicts and, when `llm_config` is given, one LLM
            call for the pairs the claims did not flag.
    """
    if detector not in DETECTORS:
        raise ValueError(f"unknown detector {detector!r}; expected one of {DETECTORS}")
    selected = _unique_by_ref(articles)
    if len(selected) < MIN_ARTICLES:
        return DetectionOutcome(status=STATUS_SKIPPED, articles_considered=len(selected))
    status = STATUS_CAPPED if len(selected) > MAX_ARTICLES else STATUS_OK
    selected = selected[:MAX_ARTICLES]
    if detector == "llm" and llm_config is None:
        raise LLMError("not_configured", "detector 'llm' needs an LLM endpoint")
    today = now or dt.date.today()
    outcome = DetectionOutcome(status=status, articles_considered=len(selected))

    found: dict[tuple[str, str], ConflictFinding] = {}
    if detector in ("claims", "auto"):
        for finding in _claim_findings(articles=selected, now=today):
            found.setdefault(pair_key(*finding.refs), finding)
    if detector == "claims":
        outcome.findings = _sorted(found)
        return outcome

    cache = {pair_key(*key): verdict for key, verdict in (cached or {}).items()}
    unjudged: list[tuple[str, str]] = []
    for a, b in itertools.combinations([article.ref for article in selected], 2):
        key = pair_key(a, b)
        if key in found:
            continue
        if key in cache:
            outcome.cache_hits += 1
            if cache[key] is not None:
                found[key] = cache[key]
            continue
        unjudged.append(key)

    if unjudged and llm_config is not None:
        result = detect_with_llm(articles=selected, pairs=unjudged, config=llm_config, now=today)
        for finding in result.findings:
            found.setdefault(finding.refs, finding)
        outcome.judgements = [
            PairJudgement(refs=key, conflict=verdict) for key, verdict in verdicts_from_result(result).items()
        ]
        outcome.llm_calls = result.llm_calls
        outcome.tokens = result.tokens
        outcome.model = result.model
        outcome.dropped_invented_refs = result.dropped_invented_refs
        outcome.dropped_bad_snippets = result.dropped_bad_snippets
    outcome.findings = _sorted(found)
    return outcome


def _claim_findings(*, articles: list[ArticleText], now: dt.date) -> list[ConflictFinding]:
    # Imported here: agents.claims is written in parallel and must not be needed by the LLM-only path.
    from agents.claims import detect_claim_conflicts

    result = detect_claim_conflicts(articles=articles, now=now)
    return list(getattr(result, "findings", result))


def _unique_by_ref(articles: list[ArticleText]) -> list[ArticleText]:
    # The same article retrieved twice (two chunks) is one article; its best rank is the first.
    seen: set[str] = set()
    unique: list[ArticleText] = []
    for article in articles:
        if article.ref not in seen:
            seen.add(article.ref)
            unique.append(article)
    return unique


def _sorted(found: dict[tuple[str, str], ConflictFinding]) -> list[ConflictFinding]:
    return [found[key] for key in sorted(found)]
