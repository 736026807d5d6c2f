"""Checking a turn's retrieved articles for conflicts, beside the reply and never in its way.

Fail open: a timeout or an error records "no conflicts" with the reason on the turn's DetectionRun;
nothing propagates to whoever is sending the reply.

Turns that arrive close together share an LLM call (Celery dispatch; agents.batching packs the calls). The
worker that takes a turn plans its check (claims, cached verdicts, pairs about different things); when pairs
are left for the LLM it either leaves the turn to a gate already open in the same knowledge base
(`gathering_until`), or opens one until DETECTION_BATCH_WAIT_MS after the turn was recorded, sends a wake-up
message for that moment and returns to the pool. The worker the wake-up reaches claims the turn again and up
to DETECTION_BATCH_MAX_TURNS - 1 queued turns of the knowledge base (one conditional update, as for its own),
plans them and sends all their pairs in as few calls as the cap of 20 articles per call allows. Each turn's
run is written under its own claim; a failed call records every turn that needed it as failed open. Only
when the broker will not take the wake-up does a worker wait in place (bounded by the same setting).
"""
from __future__ import annotations

import dataclasses
import functools
import datetime as dt
import logging
import math
import operator
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from agents.claims import ClaimVectors
from agents.claims.analysis import VECTOR_CACHE_ARTICLES, analyse_text
from agents.batching import judge_call, pack_calls
from agents.detection import (
    STATUS_CAPPED, ClaimChecks, DetectionPlan, complete_detection, plan_detection, plan_excerpts, uses_cached_verdicts,
)
from agents.detection import DetectionOutcome as AgentsOutcome
from agents.llm import LLMConfig, LLMError
from agents.configuration import llm_config_for
from agents.judge_onnx import judge_setup
from agents.types import MAX_ARTICLES_CHECKED, ArticleText, ConflictFinding, pair_key
from articles.audit import audit_event_record
from articles.claim_texts import texts_key
from articles.embeddings import embed_texts
from articles.models import Article, ArticleStatus, AuditAction, KnowledgeBase
from articles.selectors import version_claim_vectors
from conflicts import jobs
from conflicts.models import (
    ActivityKind,
    ArticleUsage,
    Citation,
    ClaimPairVerdict,
    Conflict,
    ConflictActivity,
    ConflictOccurrence,
    ConflictStatus,
    DetectionOutcome,
    DetectionRun,
    PairVerdict,
    ResolutionSuggestion,
    Turn,
)
from conflicts.services.notifications import notify_conflict_sightings
from conflicts.services.review import conflict_regress, conflict_sighting_wake
from kbreview.foreground import yield_to_foreground

logger = logging.getLogger(__name__)

# Each check runs on a thread of its own so that DETECTION_TIMEOUT_S bounds it even when an LLM call
# hangs. Sized for an LLM answering in seconds: most of a check is waiting on the network.
_bounded = ThreadPoolExecutor(max_workers=32, thread_name_prefix="kbreview-detect")

IMPACT_EPOCH = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
IMPACT_HALF_LIFE_S = 7 * 24 * 3600


def impact_point(moment: dt.datetime) -> float:
    """log-weight of one occurrence; later occurrences weigh exponentially more (7-day half-life)."""
    return (moment - IMPACT_EPOCH).total_seconds() / IMPACT_HALF_LIFE_S * math.log(2)


class StoredFirstEncoder:
    """The claim detector's encoder in this process: the vectors the index sync stored for an article
    version's claims (loaded per turn by `load`), and the index's sentence model only for texts without them
    (a version indexed before claim vectors were stored, or never indexed)."""

    def __init__(self, encode, *, max_entries: int = VECTOR_CACHE_ARTICLES) -> None:
        self.encode = encode
        self.max_entries = max_entries
        self._known: OrderedDict[str, tuple[int, np.ndarray]] = OrderedDict()  # texts key -> (version, vectors)
        self._looked_up: OrderedDict[int, None] = OrderedDict()  # versions fetched already, found or not
        self._lock = threading.Lock()

    def __call__(self, texts) -> np.ndarray:
        key = texts_key(texts)
        with self._lock:
            version_id, vectors = self._known.pop(key, (None, None))  # ClaimVectors keeps them from now on
            if version_id is not None:
                self._looked_up.pop(version_id, None)  # should ClaimVectors drop them, fetch them again
        if vectors is not None and len(vectors) == len(texts):
            return vectors
        return self.encode(list(texts))

    def load(self, *, knowledge_base_id: int, version_ids) -> None:
        """Fetch the stored claim vectors of the versions not looked up yet (one query; none when all were)."""
        with self._lock:
            missing = [v for v in dict.fromkeys(version_ids) if v not in self._looked_up]
        if not missing:
            return
        self.keep(version_claim_vectors(knowledge_base_id=knowledge_base_id, version_ids=missing), looked_up=missing)

    def keep(self, stored: dict[int, tuple[str, np.ndarray]], *, looked_up=()) -> None:
        """Hold stored vectors (version id -> (texts key, vectors)) until the claim detector asks for them."""
        with self._lock:
            for version_id in [*looked_up, *stored]:
                self._looked_up[version_id] = None
            for version_id, (key, vectors) in stored.items():
                self._known[key] = (version_id, vectors)
            while len(self._looked_up) > self.max_entries:
                self._looked_up.popitem(last=False)
            while len(self._known) > self.max_entries:
                self._known.popitem(last=False)


def claim_texts_of(title: str, body: str, *, year: int | None = None) -> list[str]:
    """The texts the claim detector embeds for an article (its claims, values masked) when checking in
    `year` (this one by default): what the index sync stores vectors of (registered in conflicts.apps)."""
    return [facts.masked for facts in analyse_text(title, body, year or timezone.localdate().year)]


@functools.cache
def claim_vectors() -> ClaimVectors:
    """Claim vectors for this process: stored at index time per article version, computed with the index's
    sentence model for a text without them, and kept per article text for later turns."""
    return ClaimVectors(StoredFirstEncoder(embed_texts))


def claim_checks() -> ClaimChecks:
    """The claim findings of retrieval sets this process has checked (a chatbot's frequent questions
    retrieve the same sets again), over this process's claim vectors (new ones start with none)."""
    return _claim_checks_over(claim_vectors())


@functools.lru_cache(maxsize=1)
def _claim_checks_over(vectors: ClaimVectors) -> ClaimChecks:
    return ClaimChecks(vectors, judge=judge_setup(settings.JUDGE_DIR, mode=settings.JUDGE_MODE))


def claim_detector_warm_up() -> None:
    """Load the sentence model and the value parsers before the first check: a worker calls this at
    start so that no turn's check (bounded by DETECTION_TIMEOUT_S) pays for loading them."""
    from agents.claims import detect_claim_conflicts

    sample = [ArticleText(ref="warm-1", title="Warm-up", body="Open 9 am to 5 pm; a day pass costs €10 (2 hours)."),
              ArticleText(ref="warm-2", title="Warm-up", body="Call +44 20 7946 0018 by 1 March 2026.")]
    detect_claim_conflicts(articles=sample, vectors=claim_vectors())


def _article_texts(*, turn: Turn) -> tuple[list[ArticleText], dict[str, ArticleUsage]]:
    """The retrieved articles as the customer's turn saw them (the versions recorded then), best first."""
    usages = (
        ArticleUsage.objects.filter(turn=turn, rank__isnull=False, article__status=ArticleStatus.ACTIVE)
        .select_related("article", "version")
        .order_by("rank")
    )
    by_ref = {u.article.external_ref: u for u in usages}
    texts = [
        ArticleText(
            ref=ref,
            title=u.version.title,
            body=u.version.body,
            updated_at=u.version.updated_at,
            source=u.article.source_type,
        )
        for ref, u in by_ref.items()
    ]
    return texts, by_ref


def _cached_verdicts(*, usages: dict[str, ArticleUsage]) -> dict[tuple[str, str], ConflictFinding | None]:
    ref_by_version = {u.version_id: ref for ref, u in usages.items()}
    ids = list(ref_by_version)
    cached: dict[tuple[str, str], ConflictFinding | None] = {}
    for verdict in PairVerdict.objects.filter(version_low_id__in=ids, version_high_id__in=ids):
        key = pair_key(ref_by_version[verdict.version_low_id], ref_by_version[verdict.version_high_id])
        cached[key] = (
            ConflictFinding(refs=key, type=verdict.type, explanation=verdict.explanation, snippets=verdict.snippets,
                            detector=verdict.detector or "llm")
            if verdict.is_conflict
            else None
        )
    return cached


def _verdicts_store(*, judgements, usages: dict[str, ArticleUsage], model: str) -> None:
    rows = []
    for judgement in judgements:
        a, b = (usages[ref].version_id for ref in judgement.refs)
        low, high = sorted((a, b))
        finding = judgement.conflict
        rows.append(
            PairVerdict(
                version_low_id=low,
                version_high_id=high,
                is_conflict=finding is not None,
                type=finding.type if finding else "",
                explanation=finding.explanation if finding else "",
                snippets=finding.snippets if finding else {},
                detector=judgement.detector,
                model=model if judgement.detector == "llm" else "",
            )
        )
    PairVerdict.objects.bulk_create(rows, ignore_conflicts=True)


def conflict_record(
    *, turn: Turn, finding: ConflictFinding, usages: dict[str, ArticleUsage], detector: str
) -> Conflict:
    """Upsert the pair's conflict and add this turn's occurrence, atomically (safe under concurrent workers);
    a turn already counted for the pair is not counted again."""
    finding = dataclasses.replace(finding, detector=detector)
    low, high = sorted(usages[ref].article_id for ref in finding.refs)

    def record() -> Conflict:
        counted = ConflictOccurrence.objects.filter(
            turn=turn, conflict__article_low_id=low, conflict__article_high_id=high).select_related("conflict").first()
        if counted is not None:
            return counted.conflict
        return conflicts_record(turn=turn, findings=[finding], usages=usages)[0]

    return _retrying_pair_races(record)


def _retrying_pair_races(record):
    """Run `record` in a transaction of its own; once more when a concurrent worker inserted one of the same
    pairs (or suggestion jobs) first, which the second attempt finds and counts."""
    try:
        with transaction.atomic():
            return record()
    except IntegrityError:
        with transaction.atomic():
            return record()


def conflicts_record(
    *, turn: Turn, findings: list[ConflictFinding], usages: dict[str, ArticleUsage]
) -> list[Conflict]:
    """Upsert each finding's conflict (by its pair of articles) and add this turn's occurrence of it, in a
    few set-based queries whatever the number of findings: the pairs' conflicts read and locked at once,
    the new ones inserted at once, every occurrence inserted at once, the counts written at once.

    Runs inside the caller's transaction, which holds the turn's check (so none of its occurrences exists
    yet). A concurrent worker that inserts one of the same new pairs first makes this raise
    IntegrityError: the caller runs its transaction again (_retrying_pair_races), which then finds it."""
    if not findings:
        return []
    now = timezone.now()
    sightings = {}  # (article_low_id, article_high_id) -> (finding, low usage, high usage)
    for finding in findings:
        low, high = sorted((usages[ref] for ref in finding.refs), key=lambda u: u.article_id)
        sightings[(low.article_id, high.article_id)] = (finding, low, high)
    pairs = sorted(sightings)
    same_pair = functools.reduce(operator.or_, (Q(article_low_id=a, article_high_id=b) for a, b in pairs))
    conflicts = {
        (c.article_low_id, c.article_high_id): c
        for c in Conflict.objects.select_for_update(of=("self",)).select_related("suggestion")
        .filter(same_pair).order_by("pk")
    }
    new = [
        Conflict(
            knowledge_base_id=turn.knowledge_base_id,
            article_low_id=pair[0],
            article_high_id=pair[1],
            type=finding.type,
            explanation=finding.explanation,
            snippet_low=finding.snippets.get(low.article.external_ref, ""),
            snippet_high=finding.snippets.get(high.article.external_ref, ""),
            detector=finding.detector,
            first_seen=now,
            last_seen=now,
        )
        for pair in pairs
        if pair not in conflicts
        for finding, low, high in [sightings[pair]]
    ]
    if new:
        Conflict.objects.bulk_create(new)
        conflicts.update({(c.article_low_id, c.article_high_id): c for c in new})
    created = {c.pk for c in new}
    ConflictOccurrence.objects.bulk_create(
        ConflictOccurrence(conflict=conflicts[pair], turn=turn, version_low_id=low.version_id,
                           version_high_id=high.version_id, detector=finding.detector,
                           citation=Citation.of(low=low.cited, high=high.cited))
        for pair in pairs
        for finding, low, high in [sightings[pair]]
    )
    opened, outdated = [], []
    for pair in pairs:
        conflict, (finding, low, high) = conflicts[pair], sightings[pair]
        conflict.detector = detector_merged(conflict.detector, finding.detector)
        conflict_sighting_count(conflict=conflict, citation=Citation.of(low=low.cited, high=high.cited), moment=now)
        if conflict.pk in created:
            opened.append(ConflictActivity(conflict=conflict, kind=ActivityKind.OPENED, from_status=conflict.status,
                                           to_status=conflict.status, detail={"turn": turn.external_id}))
        # A reviewed pair seen on other texts than those reviewed comes back to Open (review decides).
        conflict_regress(conflict=conflict, turn=turn, version_low_id=low.version_id, version_high_id=high.version_id)
        if conflict.status == ConflictStatus.OPEN:
            # Keep what the reviewer reads in step with the latest texts.
            conflict.type, conflict.explanation = finding.type, finding.explanation
            conflict.snippet_low = finding.snippets.get(low.article.external_ref, conflict.snippet_low)
            conflict.snippet_high = finding.snippets.get(high.article.external_ref, conflict.snippet_high)
            if conflict.pk in created or _suggestion_outdated(conflict, low.version_id, high.version_id):
                outdated.append(conflict)
    ConflictActivity.objects.bulk_create(opened)
    _sightings_save([conflicts[pair] for pair in pairs])
    notify_conflict_sightings(conflicts=[conflicts[pair] for pair in pairs])  # once, at the threshold
    if outdated:  # a suggestion for the articles' current versions (they may be newer than this turn's)
        current = dict(Article.objects.filter(
            pk__in={pk for c in outdated for pk in (c.article_low_id, c.article_high_id)}).values_list("pk", "current_version_id"))
        jobs.suggestions_enqueue(keys=[(c.pk, current[c.article_low_id], current[c.article_high_id]) for c in outdated])
    return [conflicts[pair] for pair in pairs]


# What counting a sighting changes on a conflict (status changes are saved by conflict_regress itself).
SIGHTING_FIELDS = ["detector", "impact", "times_seen", "times_cited", "last_seen", "type", "explanation",
                   "snippet_low", "snippet_high"]


def _sightings_save(conflicts: list[Conflict]) -> None:
    """Write the counted conflicts' SIGHTING_FIELDS in one query. Most checks count one conflict: a plain
    UPDATE then, since bulk_update's CASE per field and row costs the worker several times its CPU."""
    if len(conflicts) == 1:
        (conflict,) = conflicts
        Conflict.objects.filter(pk=conflict.pk).update(**{name: getattr(conflict, name) for name in SIGHTING_FIELDS})
    else:
        Conflict.objects.bulk_update(conflicts, SIGHTING_FIELDS)


def conflict_sighting_count(*, conflict: Conflict, citation: str, moment: dt.datetime) -> None:
    """Count one more occurrence on the locked conflict (the caller saves it): times seen and cited, the
    recency-decayed impact, last seen; a snooze "until seen N more times" that is now reached ends here."""
    point = impact_point(moment)
    conflict.impact = point if conflict.times_seen == 0 else float(_logaddexp(conflict.impact, point))
    conflict.times_seen += 1
    conflict.times_cited += int(citation != Citation.NEITHER)
    conflict.last_seen = moment
    conflict_sighting_wake(conflict=conflict)


DETECTORS_FOUND = ("claims", "llm", "both")


def detector_merged(recorded: str, found: str) -> str:
    """Who has found a pair so far: "both" once the claim detector and the LLM each have (on one turn, the
    claims' finding confirmed by the LLM; or on different turns, each on its own)."""
    if not recorded or recorded == found:
        return found
    if recorded in DETECTORS_FOUND and found in DETECTORS_FOUND:
        return "both"
    return found


def _suggestion_outdated(conflict: Conflict, version_low_id: int, version_high_id: int) -> bool:
    """Whether the conflict's suggestion (read with it: select_related("suggestion")) was computed on
    other versions than these, or is missing."""
    try:
        seen = (conflict.suggestion.version_low_id, conflict.suggestion.version_high_id)
    except ResolutionSuggestion.DoesNotExist:
        return True
    return seen != (version_low_id, version_high_id)


def _logaddexp(a: float, b: float) -> float:
    high, low = max(a, b), min(a, b)
    return high + math.log1p(math.exp(low - high))


class ClaimLost(Exception):
    """Another worker finished or took over this check (ours outlived its claim): write nothing."""


def _claim(*, turn_id: int) -> dt.datetime | None:
    """Take the turn's queued check with one conditional update; None if another worker holds it."""
    now = timezone.now()
    taken = (
        DetectionRun.objects.filter(turn_id=turn_id, outcome=DetectionOutcome.QUEUED)
        .filter(Q(claimed_at__isnull=True) | Q(claimed_at__lt=jobs.detection_claim_expiry()))
        .update(claimed_at=now, attempts=F("attempts") + 1)
    )
    return now if taken else None


def _finish(run: DetectionRun, *, outcome: str, reason: str = "", **fields) -> DetectionRun:
    with transaction.atomic():
        return _save_outcome(run, outcome=outcome, reason=reason, **fields)


def _save_outcome(run: DetectionRun, *, outcome: str, reason: str, **fields) -> DetectionRun:
    """Write the outcome, provided our claim still stands (else ClaimLost, and the caller's transaction rolls
    back): one conditional UPDATE that also locks the run until commit, so it goes first, before anything
    else the check records, and what a turn's check records is written once."""
    run.outcome = outcome
    run.reason = reason[:2000]
    run.finished_at = timezone.now()
    # From the turn being recorded to the verdict: time spent waiting for a worker counts too.
    run.latency_ms = int((run.finished_at - run.created_at).total_seconds() * 1000)
    for name, value in fields.items():
        setattr(run, name, value)
    values = {f.attname: getattr(run, f.attname) for f in DetectionRun._meta.concrete_fields if not f.primary_key}
    if not DetectionRun.objects.filter(pk=run.pk, outcome=DetectionOutcome.QUEUED, claimed_at=run.claimed_at).update(**values):
        raise ClaimLost(f"turn {run.turn_id}")
    return run


def turn_detect(*, turn_id: int) -> DetectionRun:
    """Check one turn's retrieval set once; a finished run, or one another worker holds, is returned
    unchanged (idempotent: duplicate messages and re-sent work do nothing)."""
    claim = _claim(turn_id=turn_id)  # before reading the run: what it then reads is what the claim left
    run = DetectionRun.objects.select_related("turn").get(turn_id=turn_id)
    if claim is None:  # finished, or another worker holds it
        return run
    try:
        return _detect_claimed(run)
    except ClaimLost:
        logger.warning("detection of turn %s outlived its claim; the other worker's result stands", turn_id)
        return DetectionRun.objects.get(pk=run.pk)
    except BaseException:
        # Let a retry (or the sweeper) take it again at once rather than after the claim expires.
        # (The run holds the claim: a worker whose wake-up the broker refused took its turn back with a new one.)
        DetectionRun.objects.filter(pk=run.pk, claimed_at=run.claimed_at,
                                    outcome=DetectionOutcome.QUEUED).update(claimed_at=None)
        raise


@dataclass
class _Setup:
    detector: str
    llm_config: LLMConfig | None
    timeout_s: float

    @property
    def batching(self) -> bool:
        # Inline dispatch runs at commit in the caller's process: it neither waits nor takes other turns' work.
        return (self.llm_config is not None and settings.DETECTION_DISPATCH != "inline"
                and settings.DETECTION_BATCH_MAX_TURNS > 1)


@dataclass
class _Check:
    """One turn's check in this worker's hands: planned, then judged (alone or with others), then recorded."""

    run: DetectionRun
    usages: dict[str, ArticleUsage]
    plan: DetectionPlan | None = None
    outcome: AgentsOutcome | None = None
    failed: tuple[str, str] | None = None  # (outcome, reason): recorded as no conflicts
    batch_turns: int = 0


def _setup() -> _Setup:
    detector = settings.DETECTION_DETECTOR
    llm_config = llm_config_for("detection") if detector in ("llm", "auto") else None
    if llm_config is not None and llm_config.timeout_s > settings.DETECTION_TIMEOUT_S:
        # A call may not outlive the check that waits for it; a hung endpoint frees its thread in time.
        llm_config = dataclasses.replace(llm_config, timeout_s=settings.DETECTION_TIMEOUT_S)
    if detector == "llm" and llm_config is None:
        detector = "claims"  # no LLM configured: the deterministic detector still serves
    return _Setup(detector=detector, llm_config=llm_config, timeout_s=settings.DETECTION_TIMEOUT_S)


def _bounded_result(future, *, deadline: float, setup: _Setup, what: str):
    """The future's result, or (outcome, reason) of the failure recorded as "no conflicts" (fail open)."""
    try:
        return future.result(timeout=max(0.0, deadline - time.monotonic())), None
    except FutureTimeout:
        future.cancel()  # if it never started, it never will
        return None, (DetectionOutcome.TIMEOUT, f"no verdict within {setup.timeout_s:g} s; recorded as no conflicts")
    except LLMError as exc:
        return None, (DetectionOutcome.ERROR, f"LLM {exc}; recorded as no conflicts")
    except Exception as exc:  # fail open on anything a detector can throw
        logger.exception("detector failed on %s", what)
        return None, (DetectionOutcome.ERROR, f"{type(exc).__name__}: {exc}; recorded as no conflicts")


def _check_plan(run: DetectionRun, *, setup: _Setup, deadline: float) -> _Check:
    """Claims, cached verdicts and pairs about different things for one turn, on a bounded thread; then, with
    the claim pairs judged before (read here, where the database is), what the LLM is shown, on it again."""
    articles, usages = _article_texts(turn=run.turn)
    claim_vectors().encoder.load(knowledge_base_id=run.turn.knowledge_base_id,
                                 version_ids=[u.version_id for u in usages.values()])
    future = _bounded.submit(
        plan_detection,
        articles=articles,
        detector=setup.detector,
        now=timezone.localdate(),
        llm_config=setup.llm_config,
        cached=_cached_verdicts(usages=usages) if uses_cached_verdicts(setup.detector) else None,
        claim_vectors=claim_vectors(),
        claim_checks=claim_checks(),
        defer_excerpts=True,  # the claim pairs judged before are looked up here, on this thread's connection
    )
    plan, failed = _bounded_result(future, deadline=deadline, setup=setup, what=f"turn {run.turn_id}")
    if plan is not None and plan.alignments:
        settled = _settled_claim_pairs(knowledge_base_id=run.turn.knowledge_base_id, keys=plan.candidate_claim_pairs())
        plan, failed = _bounded_result(_bounded.submit(plan_excerpts, plan, settled=settled), deadline=deadline,
                                       setup=setup, what=f"turn {run.turn_id}")
    return _Check(run=run, usages=usages, plan=plan, failed=failed)


def _settled_claim_pairs(*, knowledge_base_id: int, keys: set[str]) -> set[str]:
    """Of `keys` (agents.excerpts.claim_pair_key), the claim pairs the LLM judged consistent in this knowledge base."""
    if not keys:
        return set()
    return set(ClaimPairVerdict.objects.filter(knowledge_base_id=knowledge_base_id, key__in=list(keys))
               .values_list("key", flat=True))


def detection_verdicts_forget(*, knowledge_base: KnowledgeBase, model: str | None = None, actor=None) -> tuple[int, int]:
    """Forget the knowledge base's cached verdicts (all, or those of one LLM `model`), so that every pair is
    judged again when a turn next retrieves it: after switching to a better model, say. Conflicts already found
    stay. Returns (pair verdicts, claim-pair verdicts) deleted; the change is audited."""
    pairs = PairVerdict.objects.filter(version_low__article__knowledge_base=knowledge_base)
    claim_pairs = ClaimPairVerdict.objects.filter(knowledge_base=knowledge_base)
    if model is not None:
        pairs, claim_pairs = pairs.filter(model=model), claim_pairs.filter(model=model)
    with transaction.atomic():
        forgotten = (pairs.delete()[0], claim_pairs.delete()[0])
        audit_event_record(action=AuditAction.VERDICTS_FORGOTTEN, target=knowledge_base, knowledge_base=knowledge_base,
                           actor=actor, model=model, pair_verdicts=forgotten[0], claim_pair_verdicts=forgotten[1])
    return forgotten


def _claim_pair_verdicts_store(*, knowledge_base_id: int, keys: set[str], model: str) -> None:
    ClaimPairVerdict.objects.bulk_create([ClaimPairVerdict(knowledge_base_id=knowledge_base_id, key=key, model=model)
                                          for key in sorted(keys)], ignore_conflicts=True)


def _detect_claimed(run: DetectionRun) -> DetectionRun:
    setup = _setup()
    deadline = time.monotonic() + setup.timeout_s
    leader = _check_plan(run, setup=setup, deadline=deadline)
    checks = [leader]
    try:
        if leader.plan is not None and leader.plan.needs_llm and setup.batching:
            if _gate_join(run):
                return run  # the wake-up of a gate open in this knowledge base judges this one with its own
            if _gate_open(run):
                # The wake-up message judges this turn with the ones that join meanwhile: no worker sleeps.
                return DetectionRun.objects.get(pk=run.pk)
            company, deadline, waited = _gather(run, setup=setup)
            if waited:
                # Verdicts recorded meanwhile (a batch that was in flight when this turn was planned) settle
                # its pairs now: plan it again rather than ask the LLM for them a second time.
                checks[0] = _check_plan(run, setup=setup, deadline=deadline)
            checks += company
        _judge(checks, setup=setup, deadline=deadline)
        return _record_all(checks, setup=setup)
    except BaseException:
        for check in checks[1:]:  # the leader's own claim is released by turn_detect
            DetectionRun.objects.filter(pk=check.run.pk, claimed_at=check.run.claimed_at,
                                        outcome=DetectionOutcome.QUEUED).update(claimed_at=None)
        if DetectionRun.objects.filter(pk=run.pk, gathering_until__isnull=False).update(gathering_until=None):
            # Interrupted before collecting its company: the turns left to this gate need another worker now.
            jobs.detection_wake(turn_ids=list(DetectionRun.objects.filter(
                outcome=DetectionOutcome.QUEUED, claimed_at__isnull=True,
                turn__knowledge_base_id=run.turn.knowledge_base_id).exclude(pk=run.pk)
                .values_list("turn_id", flat=True)[: settings.DETECTION_BATCH_MAX_TURNS]))
        raise


def _gate_join(run: DetectionRun) -> bool:
    """Leave this turn to a gate open in the same knowledge base (its wake-up takes it), if there is one.

    Race-free against the gate closing: both lock the gathering run's row, so either our release is
    committed before the woken worker collects, or the gate is closed before we look."""
    with transaction.atomic():
        gate = (
            DetectionRun.objects.select_for_update(of=("self",))
            .filter(outcome=DetectionOutcome.QUEUED, gathering_until__gt=timezone.now(),
                    turn__knowledge_base_id=run.turn.knowledge_base_id)
            .exclude(pk=run.pk)
            .first()
        )
        if gate is None:
            return False
        # Handed over, not attempted: the gathering worker's claim counts the attempt.
        DetectionRun.objects.filter(pk=run.pk, claimed_at=run.claimed_at).update(claimed_at=None,
                                                                              attempts=F("attempts") - 1)
    logger.debug("turn %s left to the batch of turn %s", run.turn_id, gate.turn_id)
    return True


def _gate_end(run: DetectionRun) -> dt.datetime:
    return run.created_at + dt.timedelta(milliseconds=settings.DETECTION_BATCH_WAIT_MS)


def _gate_open(run: DetectionRun) -> bool:
    """Open this turn's gate until DETECTION_BATCH_WAIT_MS after it was recorded and hand the turn to a wake-up
    message for that moment: turns of the knowledge base taken meanwhile join it (_gate_join), and this worker
    is free at once instead of sleeping through the wait. The claim is released (the wake-up claims the turn
    again; a hand-over is not an attempt), so the sweeper re-sends the turn should the message be lost.

    False when there is nothing to open: the wait is over, or the gate was opened already (this is its wake-up,
    or a duplicate message: either takes the turn, waiting out what is left of the gate first), or the broker
    would not take the wake-up (this worker takes the turn back and waits itself)."""
    now, until = timezone.now(), _gate_end(run)
    if run.gathering_until is not None or until <= now:
        return False
    if not DetectionRun.objects.filter(pk=run.pk, claimed_at=run.claimed_at, outcome=DetectionOutcome.QUEUED).update(
            gathering_until=until, claimed_at=None, attempts=F("attempts") - 1):
        raise ClaimLost(f"turn {run.turn_id}")
    if jobs.detection_wake_at(turn_id=run.turn_id, countdown=(until - now).total_seconds()):
        return True
    run.claimed_at = _claim(turn_id=run.turn_id)
    if run.claimed_at is None:
        return True  # another worker took it meanwhile (a duplicate message): it waits and judges
    run.gathering_until = until
    return False


def _gather(run: DetectionRun, *, setup: _Setup) -> tuple[list[_Check], float, bool]:
    """Wait (bounded) for other turns of the knowledge base, then claim and plan the queued ones. Returns
    them, the deadline (DETECTION_TIMEOUT_S after the wait) that bounds their planning and the calls, and
    whether this worker waited (only when its gate's wake-up could not be sent, or came early)."""
    until = _gate_end(run)
    waited = until > timezone.now()
    if waited:
        DetectionRun.objects.filter(pk=run.pk, claimed_at=run.claimed_at).update(gathering_until=until)
        _wait_until(until)
    cap = settings.DETECTION_BATCH_MAX_TURNS - 1
    with transaction.atomic():
        DetectionRun.objects.filter(pk=run.pk).update(gathering_until=None)  # closes the gate (row lock)
        run.gathering_until = None  # as saved with the outcome
        waiting = (
            DetectionRun.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(outcome=DetectionOutcome.QUEUED, turn__knowledge_base_id=run.turn.knowledge_base_id)
            .filter(Q(claimed_at__isnull=True) | Q(claimed_at__lt=jobs.detection_claim_expiry()))
            .exclude(pk=run.pk)
            .order_by("created_at", "pk")
        )
        ids = list(waiting.values_list("pk", flat=True)[: cap + 1])
        taken, left = ids[:cap], ids[cap:]
        claimed_at = timezone.now()
        DetectionRun.objects.filter(pk__in=taken).update(claimed_at=claimed_at, attempts=F("attempts") + 1)
        if left:  # more are waiting than one batch takes: make sure a worker comes for them
            jobs.detection_wake(turn_ids=list(
                waiting.exclude(pk__in=taken).values_list("turn_id", flat=True)[: settings.DETECTION_BATCH_MAX_TURNS]))
    runs = DetectionRun.objects.select_related("turn").filter(pk__in=taken).order_by("created_at", "pk")
    deadline = time.monotonic() + setup.timeout_s
    return [_check_plan(other, setup=setup, deadline=deadline) for other in runs], deadline, waited


def _wait_until(moment: dt.datetime) -> None:
    """The bounded wait in place: what is left of a gate when its wake-up came early, or the whole wait when
    the wake-up could not be sent (bench/detection_cost.py, on a simulated clock, moves its clock instead)."""
    time.sleep(max(0.0, (moment - timezone.now()).total_seconds()))


def _judge(checks: list[_Check], *, setup: _Setup, deadline: float) -> None:
    """Every planned check's pairs for the LLM, in as few calls as agents.batching packs them (in parallel)."""
    planned = [check for check in checks if check.plan is not None]
    batch = pack_calls([check.plan for check in planned], max_pairs=settings.DETECTION_BATCH_MAX_PAIRS)
    futures = {number: _bounded.submit(judge_call, call, config=setup.llm_config) for number, call in enumerate(batch.calls)}
    results, failures = {}, {}
    for number, future in futures.items():
        result, failed = _bounded_result(future, deadline=deadline, setup=setup, what=f"a call for {len(batch.calls[number].members)} turn(s)")
        if failed is None:
            results[number] = result
        else:
            shared = len(batch.calls[number].members)
            failures[number] = failed if shared == 1 else (failed[0], f"{failed[1]} (a call shared by {shared} turns)")
    for index, check in enumerate(planned):
        failed = [failures[number] for number in batch.calls_of(index) if number in failures]
        if failed:
            check.failed = failed[0]
            continue
        pays = batch.pays_for(index)
        check.outcome = complete_detection(check.plan, verdicts=batch.verdicts_for(index, results),
                                           call=results[pays] if pays is not None else None)
        check.batch_turns = batch.turns_sharing(index)


def _record_all(checks: list[_Check], *, setup: _Setup) -> DetectionRun:
    """Write each check's outcome under its own claim; returns the first (the turn this worker was sent for)."""
    yield_to_foreground()  # the judging took a while: replies may be searching again
    lost: ClaimLost | None = None
    for check in checks:
        try:
            check.run = _record(check, setup=setup)
        except ClaimLost as exc:
            if check is checks[0]:
                lost = exc
            else:
                logger.warning("detection of turn %s outlived its claim; the other worker's result stands",
                               check.run.turn_id)
    if lost is not None:
        raise lost
    return checks[0].run


def _record(check: _Check, *, setup: _Setup) -> DetectionRun:
    run, detector = check.run, setup.detector
    if check.failed is not None:
        outcome, reason = check.failed
        return _finish(run, outcome=outcome, detector=detector, reason=reason)
    outcome = check.outcome
    if not outcome.ran:
        return _finish(run, outcome=DetectionOutcome.SKIPPED, detector=detector,
                       reason="fewer than 2 live articles", articles_checked=outcome.articles_considered)
    turn, usages = run.turn, check.usages

    def record() -> DetectionRun:
        n = outcome.articles_considered
        _save_outcome(  # first: it checks our claim and locks the run
            run,
            outcome=DetectionOutcome.CAPPED if outcome.status == STATUS_CAPPED else DetectionOutcome.OK,
            reason=f"only the {MAX_ARTICLES_CHECKED} best-ranked articles were checked" if outcome.status == STATUS_CAPPED else "",
            detector=detector,
            articles_checked=n,
            pairs_checked=n * (n - 1) // 2,
            cache_hits=outcome.cache_hits,
            conflicts_found=len(outcome.findings),
            llm_calls=outcome.llm_calls,
            tokens=outcome.tokens,
            model=outcome.model,
            dropped_invented_refs=outcome.dropped_invented_refs,
            dropped_bad_snippets=outcome.dropped_bad_snippets,
            unrelated_pairs=outcome.unrelated_pairs,
            known_claim_pairs=outcome.known_claim_pairs,
            llm_confirmed=outcome.confirmed,
            llm_rejected=outcome.rejected,
            batch_turns=check.batch_turns,
        )
        # The configured model judged them, whether this turn paid for the call or rode in another's.
        model = setup.llm_config.model if setup.llm_config is not None else outcome.model
        _verdicts_store(judgements=outcome.judgements, usages=usages, model=model)
        _claim_pair_verdicts_store(knowledge_base_id=turn.knowledge_base_id, keys=outcome.consistent_claim_pairs,
                                   model=model)
        conflicts_record(turn=turn, findings=outcome.findings, usages=usages)
        return run

    return _retrying_pair_races(record)
