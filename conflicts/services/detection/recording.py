"""Recording a turn's check: its outcome under its claim, the verdicts for later turns, and each conflict found
(upserted by its pair of articles, with this turn's occurrence, its counts and impact, and a suggestion job
when the articles' versions are new to it)."""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import logging
import math
import operator

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from agents.detection import STATUS_CAPPED
from agents.types import MAX_ARTICLES_CHECKED, ConflictFinding
from articles.audit import audit_event_record
from articles.models import Article, AuditAction, KnowledgeBase
from conflicts.models import (
    ActivityKind,
    ArticleUsage,
    Citation,
    ClaimPairVerdict,
    Conflict,
    ConflictOccurrence,
    ConflictStatus,
    DetectionOutcome,
    DetectionRun,
    PairVerdict,
    ResolutionSuggestion,
    Turn,
)
from conflicts.services.detection.judging import Check, Setup
from conflicts.services.detection.leasing import ClaimLost, run_finish, run_save_outcome
from conflicts.services.notifications import notify_conflict_sightings
from conflicts.services.review import conflict_activity_notes, conflict_regress, conflict_sighting_wake
from conflicts.services.suggestions import suggestions_enqueue
from kbreview.foreground import yield_to_foreground

logger = logging.getLogger(__name__)

IMPACT_EPOCH = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)


IMPACT_HALF_LIFE_S = 7 * 24 * 3600


def impact_point(moment: dt.datetime) -> float:
    """log-weight of one occurrence; later occurrences weigh exponentially more (7-day half-life)."""
    return (moment - IMPACT_EPOCH).total_seconds() / IMPACT_HALF_LIFE_S * math.log(2)


def record_all(checks: list[Check], *, setup: Setup) -> DetectionRun:
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


def _record(check: Check, *, setup: Setup) -> DetectionRun:
    run, detector = check.run, setup.detector
    if check.failed is not None:
        outcome, reason = check.failed
        return run_finish(run, outcome=outcome, detector=detector, reason=reason)
    outcome = check.outcome
    if not outcome.ran:
        return run_finish(run, outcome=DetectionOutcome.SKIPPED, detector=detector,
                       reason="fewer than 2 live articles", articles_checked=outcome.articles_considered)
    turn, usages = run.turn, check.usages

    def record() -> DetectionRun:
        n = outcome.articles_considered
        run_save_outcome(  # first: it checks our claim and locks the run
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


def _claim_pair_verdicts_store(*, knowledge_base_id: int, keys: set[str], model: str) -> None:
    ClaimPairVerdict.objects.bulk_create([ClaimPairVerdict(knowledge_base_id=knowledge_base_id, key=key, model=model)
                                          for key in sorted(keys)], ignore_conflicts=True)


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
            opened.append(conflict)
        # A reviewed pair seen on other texts than those reviewed comes back to Open (review decides).
        conflict_regress(conflict=conflict, turn=turn, version_low_id=low.version_id, version_high_id=high.version_id)
        if conflict.status == ConflictStatus.OPEN:
            # Keep what the reviewer reads in step with the latest texts.
            conflict.type, conflict.explanation = finding.type, finding.explanation
            conflict.snippet_low = finding.snippets.get(low.article.external_ref, conflict.snippet_low)
            conflict.snippet_high = finding.snippets.get(high.article.external_ref, conflict.snippet_high)
            if conflict.pk in created or _suggestion_outdated(conflict, low.version_id, high.version_id):
                outdated.append(conflict)
    conflict_activity_notes(conflicts=opened, kind=ActivityKind.OPENED, turn=turn.external_id)
    _sightings_save([conflicts[pair] for pair in pairs])
    notify_conflict_sightings(conflicts=[conflicts[pair] for pair in pairs])  # once, at the threshold
    if outdated:  # a suggestion for the articles' current versions (they may be newer than this turn's)
        current = dict(Article.objects.filter(
            pk__in={pk for c in outdated for pk in (c.article_low_id, c.article_high_id)}).values_list("pk", "current_version_id"))
        suggestions_enqueue(keys=[(c.pk, current[c.article_low_id], current[c.article_high_id]) for c in outdated])
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
