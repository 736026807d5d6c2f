"""Per-turn conflict detection over one retrieval set: the rules every detector shares.

- fewer than 2 articles: nothing to compare, nothing is called;
- more than MAX_ARTICLES: only the first ones (callers pass them best-ranked first);
- a pair with a cached verdict (same article versions) is never sent to the LLM again;
- a pair whose articles share no claim about the same thing (claim alignment below a similarity floor,
  or only sentences both state word for word) is about different things: it is not sent to the LLM and
  its "no conflict" is a verdict like any other;
- a pair sent to the LLM is shown as its aligned claims, not whole articles (agents.excerpts), less the
  claim pairs the LLM judged consistent before (in other pairs); a pair with none left is settled without it,
  and a "no conflict" verdict makes every claim pair shown for it consistent (`consistent_claim_pairs`);
- in `auto`, claim findings below CONFIRM_BELOW confidence go to the LLM for confirmation when one is
  configured: confirmed ones are recorded as found by "both", rejected ones are dropped.

Timeouts and fail-open belong to the caller (the turn pipeline); an LLM failure propagates as
LLMError so the caller can record "error: <reason>".
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import itertools
import threading
from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agents.llm import LLMConfig, LLMError
from agents.llm_detector import detect_with_llm, verdicts_from_result
from agents.types import (
    MAX_ARTICLES_CHECKED,
    ArticleText,
    ClaimPairsShown,
    ClaimsShown,
    ConflictFinding,
    DetectionResult,
    PairJudgement,
    pair_key,
)

if TYPE_CHECKING:
    from agents.claims import ClaimVectors, JudgeSetup
    from agents.excerpts import PairAlignment

Detector = Literal["claims", "llm", "auto"]
DETECTORS: tuple[str, ...] = ("claims", "llm", "auto")
MIN_ARTICLES = 2
MAX_ARTICLES = MAX_ARTICLES_CHECKED

STATUS_OK = "ok"
STATUS_SKIPPED = "skipped_fewer_than_2"
STATUS_CAPPED = f"capped_at_{MAX_ARTICLES}"  # ran, on the first MAX_ARTICLES articles only
CONFIRM_BELOW = 0.75  # auto: claim findings less sure than this are confirmed by the LLM first
JUDGED_CONFIRM_BELOW = 0.9  # the same with the judge, whose confidences are calibrated precisions
CLAIM_CHECK_SETS = 4096  # retrieval sets whose claim findings a ClaimChecks keeps


def uses_cached_verdicts(detector: str) -> bool:
    """Whether plan_detection consults cached verdicts: only the LLM's pairs are cached, so the claim
    detector alone never does (its caller need not read them)."""
    return detector != "claims"


@dataclass
class DetectionReport:
    """How one turn's check went, as plain data: its status, findings and counts (conflicts stores it as a
    DetectionRun, whose `outcome` is a conflicts.models.DetectionOutcome)."""

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
    unrelated_pairs: int = 0  # not sent to the LLM: about different things
    known_claim_pairs: int = 0  # not sent to the LLM: every aligned claim pair was judged consistent before
    # Keys of the claim pairs the call this run paid for showed only for pairs it judged "no conflict"
    # (agents.llm_detector): what the caller records as judged consistent.
    consistent_claim_pairs: set[str] = field(default_factory=set)
    confirmed: int = 0  # claim findings the LLM confirmed (auto)
    rejected: int = 0  # claim findings the LLM did not confirm (auto): dropped

    @property
    def judged_pairs(self) -> list[tuple[str, str]]:
        return [judgement.refs for judgement in self.judgements]

    @property
    def ran(self) -> bool:
        return self.status != STATUS_SKIPPED



@dataclass
class DetectionPlan:
    """A turn's check up to the LLM call: what the claims, the cache and the similarity floor settled
    (in `outcome`), and the pairs left for the LLM. agents.batching sends several plans' pairs in one call."""

    outcome: DetectionReport
    articles: list[ArticleText]  # the articles checked (at most MAX_ARTICLES, best-ranked first)
    now: dt.date
    found: dict[tuple[str, str], ConflictFinding] = field(default_factory=dict)
    to_confirm: dict[tuple[str, str], ConflictFinding] = field(default_factory=dict)  # claim findings the LLM confirms
    unjudged: list[tuple[str, str]] = field(default_factory=list)  # pairs for the LLM (none without an LLM)
    # What the LLM is shown of each unjudged pair: its aligned claims per ref (none: the whole articles).
    excerpts: dict[tuple[str, str], dict[str, ClaimsShown]] = field(default_factory=dict)
    claim_pairs: dict[tuple[str, str], ClaimPairsShown] = field(default_factory=dict)  # shown per unjudged pair
    alignments: dict[tuple[str, str], PairAlignment] = field(default_factory=dict)  # awaiting plan_excerpts

    def candidate_claim_pairs(self) -> set[str]:
        """The keys of the claim pairs the excerpts of `alignments` could show."""
        return set().union(*(alignment.candidate_keys() for alignment in self.alignments.values()))

    @property
    def needs_llm(self) -> bool:
        return bool(self.unjudged)

    def shown(self, pairs) -> dict[str, ClaimsShown]:
        """What of each article the LLM is shown for `pairs`: the union of their aligned claims; an article
        of a pair without excerpts is shown whole (left out of the map)."""
        return shown_for(pairs, self.excerpts)


def shown_for(pairs, excerpts: Mapping[tuple[str, str], Mapping[str, ClaimsShown]]) -> dict[str, ClaimsShown]:
    """Per ref, the union of the excerpts of `pairs` that touch it; a ref one of whose pairs has no excerpt is
    left out (shown whole). agents.batching uses it for a call holding several turns' pairs."""
    shown: dict[str, ClaimsShown] = {}
    whole: set[str] = set()
    for key in pairs:
        claims = excerpts.get(key)
        for ref in key:
            if claims is None or not claims.get(ref):
                whole.add(ref)
            else:
                shown.setdefault(ref, {}).update(claims[ref])
    return {ref: claims for ref, claims in shown.items() if ref not in whole}


def run_detection(
    *,
    articles: list[ArticleText],
    detector: Detector,
    now: dt.date | None = None,
    llm_config: LLMConfig | None = None,
    cached: dict[tuple[str, str], ConflictFinding | None] | None = None,
    claim_vectors: ClaimVectors | None = None,
    claim_judge: JudgeSetup | None = None,
) -> DetectionReport:
    """Find conflicting pairs among `articles` (best-ranked first).

    claims: the deterministic claim detector only (no cache, no LLM).
    llm:    cached verdicts, then one LLM call for every uncached pair that is about related things.
    auto:   the claim detector first (sure findings stand; unsure ones are confirmed by the LLM); then
            cached verdicts and, when `llm_config` is given, one LLM call for the related pairs left.
    `claim_vectors` holds the sentence vectors of claims (computed once per article text); `claim_judge`
    the learned contradiction judge the claim detector consults (agents.claims.judged).
    """
    plan = plan_detection(articles=articles, detector=detector, now=now, llm_config=llm_config, cached=cached,
                          claim_vectors=claim_vectors, claim_judge=claim_judge)
    if not plan.needs_llm:
        return complete_detection(plan)
    result = detect_with_llm(articles=plan.articles, pairs=plan.unjudged, config=llm_config, now=plan.now,
                             excerpts=plan.shown(plan.unjudged), claim_pairs=plan.claim_pairs)
    return complete_detection(plan, verdicts=verdicts_from_result(result), call=result)


def plan_detection(
    *,
    articles: list[ArticleText],
    detector: Detector,
    now: dt.date | None = None,
    llm_config: LLMConfig | None = None,
    cached: dict[tuple[str, str], ConflictFinding | None] | None = None,
    claim_vectors: ClaimVectors | None = None,
    claim_checks: ClaimChecks | None = None,
    defer_excerpts: bool = False,
    claim_judge: JudgeSetup | None = None,
) -> DetectionPlan:
    """Everything run_detection does before its LLM call; `unjudged` is empty when no LLM is configured.
    `claim_checks` (built on the same `claim_vectors`) answers a retrieval set checked before from memory.
    With `defer_excerpts` the aligned pairs wait in `plan.alignments` for the caller's plan_excerpts, with the
    claim pairs judged consistent before (of plan.candidate_claim_pairs(): one lookup per turn); without it,
    none count as judged."""
    if detector not in DETECTORS:
        raise ValueError(f"unknown detector {detector!r}; expected one of {DETECTORS}")
    selected = _unique_by_ref(articles)
    today = now or dt.date.today()
    if len(selected) < MIN_ARTICLES:
        return DetectionPlan(DetectionReport(status=STATUS_SKIPPED, articles_considered=len(selected)), selected, today)
    status = STATUS_CAPPED if len(selected) > MAX_ARTICLES else STATUS_OK
    selected = selected[:MAX_ARTICLES]
    if detector == "llm" and llm_config is None:
        raise LLMError("not_configured", "detector 'llm' needs an LLM endpoint")
    plan = DetectionPlan(DetectionReport(status=status, articles_considered=len(selected)), selected, today)
    outcome, found, to_confirm = plan.outcome, plan.found, plan.to_confirm

    claim_findings, unrelated = (claim_checks.findings(articles=selected, now=today) if claim_checks is not None
                                 else _claim_findings(articles=selected, now=today, vectors=claim_vectors,
                                                      judge=claim_judge))
    setup = claim_judge if claim_judge is not None else (claim_checks.judge if claim_checks is not None else None)
    # A judge finding's confidence is its calibrated precision: only those at the 0.9-precision point skip the LLM.
    # (In `veto` mode the findings are the rules', with the rules' confidences.)
    judged = setup is not None and setup.mode in ("judge", "judge+rules")
    confirm_below = JUDGED_CONFIRM_BELOW if judged else CONFIRM_BELOW
    if detector in ("claims", "auto"):
        for finding in claim_findings:
            key = pair_key(*finding.refs)
            if detector == "auto" and llm_config is not None and finding.confidence < confirm_below:
                to_confirm[key] = finding
            else:
                found.setdefault(key, finding)
    if not uses_cached_verdicts(detector):
        return plan

    cache = {pair_key(*key): verdict for key, verdict in (cached or {}).items()}
    by_ref = {article.ref: article for article in selected}
    # Sentence vectors align claims by meaning: then the LLM is shown a pair's aligned claims only, and a
    # pair whose only close claims are word-for-word shared sentences is settled here (agents.excerpts).
    aligned = claim_vectors is not None and claim_vectors.encoder is not None
    left: list[tuple[str, str]] = []
    for a, b in itertools.combinations([article.ref for article in selected], 2):
        key = pair_key(a, b)
        if key in found:
            continue
        if key in cache:
            outcome.cache_hits += 1
            if cache[key] is not None:
                found[key] = _confirmed(to_confirm[key]) if key in to_confirm else cache[key]
            continue
        if key in unrelated and key not in to_confirm:
            _settle_unrelated(outcome, key)
            continue
        if llm_config is not None:
            left.append(key)
    if not aligned:
        plan.unjudged += left
        return plan
    from agents.excerpts import PairAlignment  # noqa: PLC0415 - with the claim detector's parsers, which load slowly (as _claim_findings)

    plan.alignments = {key: PairAlignment(by_ref[key[0]], by_ref[key[1]], vectors=claim_vectors, year=today.year)
                       for key in left}
    return plan if defer_excerpts else plan_excerpts(plan, settled=())


def plan_excerpts(plan: DetectionPlan, *, settled: Collection[str]) -> DetectionPlan:
    """Decide what the LLM is shown of each aligned pair left (plan.alignments), less the claim pairs in
    `settled` (judged consistent before): the pairs with something left to show become `unjudged`; a pair
    whose aligned claim pairs were all judged before is settled here, as is one about different things."""
    outcome, to_confirm = plan.outcome, plan.to_confirm
    for key, alignment in plan.alignments.items():
        excerpt = alignment.excerpt(settled=settled, must_show=to_confirm[key].snippets if key in to_confirm else None)
        if not excerpt.related and key not in to_confirm:
            if alignment.related:
                outcome.known_claim_pairs += 1
                outcome.judgements.append(PairJudgement(refs=key, conflict=None, detector="llm"))
            else:
                _settle_unrelated(outcome, key)
            continue
        plan.excerpts[key] = excerpt.claims
        plan.claim_pairs[key] = excerpt.claim_pairs
        plan.unjudged.append(key)
    plan.alignments = {}
    return plan


def _settle_unrelated(outcome: DetectionReport, key: tuple[str, str]) -> None:
    """A pair about different things: not sent to the LLM, its "no conflict" recorded like any verdict."""
    outcome.unrelated_pairs += 1
    outcome.judgements.append(PairJudgement(refs=key, conflict=None, detector="claims"))


def complete_detection(
    plan: DetectionPlan,
    *,
    verdicts: dict[tuple[str, str], ConflictFinding | None] | None = None,
    call: DetectionResult | None = None,
) -> DetectionReport:
    """The outcome of a plan once the LLM has given `verdicts` on (some of) its unjudged pairs.

    `call` carries the call's counts (calls, tokens, model, dropped items) when this turn is the one that
    pays for it; a turn whose pairs rode in another turn's call passes its verdicts only."""
    outcome, found, to_confirm = plan.outcome, plan.found, plan.to_confirm
    for key, verdict in (verdicts or {}).items():
        if key in to_confirm:
            if verdict is not None:
                found[key] = _confirmed(to_confirm[key])
                outcome.confirmed += 1
            else:
                outcome.rejected += 1
        elif verdict is not None:
            found.setdefault(key, verdict)
    outcome.judgements += [PairJudgement(refs=key, conflict=verdict) for key, verdict in (verdicts or {}).items()]
    if call is not None:
        outcome.consistent_claim_pairs |= call.consistent_claim_pairs
        outcome.llm_calls = call.llm_calls
        outcome.tokens = call.tokens
        outcome.model = call.model
        outcome.dropped_invented_refs = call.dropped_invented_refs
        outcome.dropped_bad_snippets = call.dropped_bad_snippets
    outcome.findings = _sorted(found)
    return outcome


def _confirmed(finding: ConflictFinding) -> ConflictFinding:
    # The claims' explanation names both titles and values; the LLM's verdict adds certainty.
    return dataclasses.replace(finding, detector="both", confidence=max(finding.confidence, CONFIRM_BELOW))


def _claim_findings(*, articles: list[ArticleText], now: dt.date, vectors: ClaimVectors | None,
                    judge: JudgeSetup | None = None) -> tuple[list[ConflictFinding], set[tuple[str, str]]]:
    """The claim detector's findings and the pairs it found to be about different things."""
    # Imported here: the claim detector loads parsing libraries the LLM-only tests do not need.
    from agents.claims import detect_claim_conflicts  # noqa: PLC0415 - the claim parsers load slowly: only the detectors that use them

    result = detect_claim_conflicts(articles=articles, now=now, vectors=vectors, judge=judge)
    findings = list(getattr(result, "findings", result))
    unrelated = result.unrelated_pairs() if hasattr(result, "unrelated_pairs") else set()
    return findings, unrelated


class ClaimChecks:
    """The claim detector's findings per exact retrieval set, kept (LRU, thread-safe) for later turns that
    retrieve the same set: the same texts checked on the same day with the same claim vectors give the same
    findings, so a set seen before costs a digest of its texts instead of a check (most of a claims-only
    turn's CPU). Keyed by content, not ids: an edited article is a new text and is checked afresh."""

    def __init__(self, vectors: ClaimVectors | None, *, max_sets: int = CLAIM_CHECK_SETS,
                 judge: JudgeSetup | None = None) -> None:
        self.vectors = vectors
        self.judge = judge
        self.max_sets = max_sets
        self._known: OrderedDict[bytes, tuple[tuple[ConflictFinding, ...], frozenset[tuple[str, str]]]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(articles: list[ArticleText], now: dt.date) -> bytes:
        digest = hashlib.blake2b(now.isoformat().encode(), digest_size=16)
        for article in articles:
            for part in (article.ref, article.title, article.body,
                         article.updated_at.isoformat() if article.updated_at else "", article.source):
                digest.update(b"\x1f" + part.encode("utf-8", "surrogatepass"))
            digest.update(b"\x1e")
        return digest.digest()

    def findings(self, *, articles: list[ArticleText], now: dt.date) -> tuple[list[ConflictFinding], set[tuple[str, str]]]:
        key = self.key(articles, now)
        with self._lock:
            known = self._known.get(key)
            if known is not None:
                self._known.move_to_end(key)
        if known is None:  # computed outside the lock: two threads missing the same set both compute it
            findings, unrelated = _claim_findings(articles=articles, now=now, vectors=self.vectors, judge=self.judge)
            known = (tuple(findings), frozenset(unrelated))
            with self._lock:
                self._known[key] = known
                while len(self._known) > self.max_sets:
                    self._known.popitem(last=False)
        return list(known[0]), set(known[1])


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
