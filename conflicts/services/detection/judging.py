"""Planning and judging a turn's check: the retrieved articles as the turn saw them, the cached verdicts, the
claim detector's plan, and the LLM calls (packed by agents.batching), each bounded by DETECTION_TIMEOUT_S on a
thread of its own. A timeout or an error becomes the check's failure, recorded as "no conflicts" (fail open)."""
from __future__ import annotations

import dataclasses
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from agents.batching import judge_call, pack_calls
from agents.configuration import llm_config_for
from agents.detection import (
    DetectionPlan,
    DetectionReport,
    complete_detection,
    plan_detection,
    plan_excerpts,
    uses_cached_verdicts,
)
from agents.llm import LLMConfig, LLMError
from agents.types import ArticleText, ConflictFinding, pair_key
from articles.models import ArticleStatus
from conflicts.models import ArticleUsage, ClaimPairVerdict, DetectionOutcome, DetectionRun, PairVerdict, Turn
from conflicts.services.detection.detector import claim_checks, claim_vectors

logger = logging.getLogger(__name__)

# Each check runs on a thread of its own so that DETECTION_TIMEOUT_S bounds it even when an LLM call
# hangs. Sized for an LLM answering in seconds: most of a check is waiting on the network.
_bounded = ThreadPoolExecutor(max_workers=32, thread_name_prefix="kbreview-detect")


@dataclass
class Setup:
    detector: str
    llm_config: LLMConfig | None
    timeout_s: float

    @property
    def batching(self) -> bool:
        # Inline dispatch runs at commit in the caller's process: it neither waits nor takes other turns' work.
        return (self.llm_config is not None and settings.DETECTION_DISPATCH != "inline"
                and settings.DETECTION_BATCH_MAX_TURNS > 1)


@dataclass
class Check:
    """One turn's check in this worker's hands: planned, then judged (alone or with others), then recorded."""

    run: DetectionRun
    usages: dict[str, ArticleUsage]
    plan: DetectionPlan | None = None
    outcome: DetectionReport | None = None
    failed: tuple[str, str] | None = None  # (outcome, reason): recorded as no conflicts
    batch_turns: int = 0


def detection_setup() -> Setup:
    detector = settings.DETECTION_DETECTOR
    llm_config = llm_config_for("detection") if detector in ("llm", "auto") else None
    if llm_config is not None and llm_config.timeout_s > settings.DETECTION_TIMEOUT_S:
        # A call may not outlive the check that waits for it; a hung endpoint frees its thread in time.
        llm_config = dataclasses.replace(llm_config, timeout_s=settings.DETECTION_TIMEOUT_S)
    if detector == "llm" and llm_config is None:
        detector = "claims"  # no LLM configured: the deterministic detector still serves
    return Setup(detector=detector, llm_config=llm_config, timeout_s=settings.DETECTION_TIMEOUT_S)


def _bounded_result(future, *, deadline: float, setup: Setup, what: str):
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


def check_plan(run: DetectionRun, *, setup: Setup, deadline: float) -> Check:
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
    return Check(run=run, usages=usages, plan=plan, failed=failed)


def _settled_claim_pairs(*, knowledge_base_id: int, keys: set[str]) -> set[str]:
    """Of `keys` (agents.excerpts.claim_pair_key), the claim pairs the LLM judged consistent in this knowledge base."""
    if not keys:
        return set()
    return set(ClaimPairVerdict.objects.filter(knowledge_base_id=knowledge_base_id, key__in=list(keys))
               .values_list("key", flat=True))


def judge(checks: list[Check], *, setup: Setup, deadline: float) -> None:
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
