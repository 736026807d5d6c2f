"""MACR in the product: suggestions for conflicts, and rule induction from staff decisions.

The algorithms live in agents.macr over plain data; this module turns rows into that data,
persists what comes back, and keeps each knowledge base's rule base and its figures.
"""
from __future__ import annotations

import dataclasses
import logging

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from agents.llm import LLMError
from agents.configuration import llm_config_for
from agents.macr.calibration import default_threshold
from agents.macr.induction import induce_with_llm
from agents.macr.observer import OUTCOME_BOTH, OUTCOME_NEITHER, Decision, induce_rules
from agents.macr.pipeline import suggest_for_conflict
from agents.macr.reasoner import suggest
from agents.macr.reasoning import FeedbackCase
from agents.macr.rules import ConflictPair, Rule, executable_rules
from agents.types import ArticleText, Suggestion
from articles.audit import audit_event_record
from articles.embeddings import embed_texts
from articles.models import Article, ArticleVersion, AuditAction, KnowledgeBase, VersionReason
from articles.selectors import search
from conflicts import jobs
from conflicts.models import (
    Conflict,
    ConflictStatus,
    InductionRun,
    InductionStatus,
    JobStatus,
    ResolutionRule,
    ResolutionSuggestion,
    ReviewWinner,
    RuleKind,
    RuleOrigin,
    RuleStatus,
    SuggestionJob,
    SuggestionStatus,
)

logger = logging.getLogger(__name__)

# Below this many reviewed conflicts a validation split says nothing; the templates stay as they are.
MIN_DECISIONS_FOR_INDUCTION = 10


def _article_text(article: Article, version: ArticleVersion) -> ArticleText:
    return ArticleText(
        ref=article.external_ref,
        title=version.title,
        body=version.body,
        updated_at=version.updated_at,
        source=article.source_type,
    )


def rule_base_ensure(*, knowledge_base: KnowledgeBase) -> None:
    """Give the knowledge base a row for every executable template (active until validation says otherwise)."""
    existing = set(ResolutionRule.objects.filter(knowledge_base=knowledge_base).values_list("rule_id", flat=True))
    ResolutionRule.objects.bulk_create(
        [
            ResolutionRule(
                knowledge_base=knowledge_base,
                rule_id=rule.id,
                type=rule.type,
                condition=rule.condition,
                resolution=rule.resolution,
                origin=RuleOrigin.EXECUTABLE,
                status=RuleStatus.ACTIVE,
                priority=rule.priority,
            )
            for rule in executable_rules()
            if rule.id not in existing
        ],
        ignore_conflicts=True,
    )


def _textual_rule(row: ResolutionRule) -> Rule:
    return Rule(
        id=row.rule_id, type=row.type, condition=row.condition, resolution=row.resolution, origin=row.origin,
        kind=RuleKind.TEXTUAL.value, priority=row.priority, coverage=row.coverage, support=row.support,
        validated_cases=row.validated_cases, validated_agreed=row.validated_agreed,
    )


def suggestion_threshold(*, knowledge_base: KnowledgeBase) -> float:
    """Below this calibrated confidence a suggestion is "cannot tell" (the KB's own, or the dev default)."""
    own = knowledge_base.suggestion_min_confidence
    return default_threshold() if own is None else own


def _statement_date(article: Article, snippet: str):
    """When the conflicting sentence was written: the first version of the newest unbroken run of versions
    that carries it (a later edit elsewhere on the page does not date it); None when it is not found."""
    snippet = " ".join(snippet.split())
    if not snippet:
        return None
    date = None
    for version in article.versions.order_by("-number").only("body", "updated_at"):
        if snippet not in " ".join(version.body.split()):
            break
        date = version.updated_at or date
    return date


def active_rules(*, knowledge_base: KnowledgeBase, textual: bool = False) -> tuple[list[Rule], int]:
    """The rules the Reasoner may use now, with this knowledge base's figures, and the rule-base version.

    Textual rules are included only on request: they need the LLM to be applied.
    """
    rule_base_ensure(knowledge_base=knowledge_base)
    rows = list(ResolutionRule.objects.filter(knowledge_base=knowledge_base, status=RuleStatus.ACTIVE, enabled=True))
    version = max((row.rule_base_version for row in rows), default=0)
    by_id = {row.rule_id: row for row in rows}
    rules = []
    for rule in executable_rules():
        row = by_id.get(rule.id)
        if row is None:
            continue
        if row.coverage is not None and row.support is not None:
            rule = rule.with_stats(coverage=row.coverage, support=row.support, cases=row.validated_cases,
                                   agreed=row.validated_agreed, by_standing=row.validated_by_standing)
        rules.append(rule)
    if textual:
        rules += [_textual_rule(row) for row in rows if row.kind == RuleKind.TEXTUAL]
    return rules, version


def _latest_question(conflict: Conflict) -> str:
    occurrence = conflict.occurrences.select_related("turn").order_by("-created_at").first()
    return occurrence.turn.question if occurrence else conflict.explanation


def _kb_retriever(knowledge_base: KnowledgeBase):
    """C_ext for MACR: the best passage of the knowledge base outside the conflicting articles."""

    def retrieve(question: str, exclude_refs) -> str:
        for hit in search(knowledge_base=knowledge_base, question=question, limit=5):
            if hit.external_ref not in set(exclude_refs):
                return hit.chunk_text
        return ""

    return retrieve


def _suggest_with_llm(*, conflict: Conflict, a: ArticleText, b: ArticleText, config, rules: list[Rule]):
    """Full MACR (assessment, retrieval, Analyzer, Reasoner) for a conflict no executable rule covers."""
    return suggest_for_conflict(
        a=a,
        b=b,
        conflict_type=conflict.type,
        question=_latest_question(conflict),
        now=timezone.localdate(),
        config=config,
        rules=rules,
        embed=embed_texts,
        threshold=settings.MACR_ENTROPY_THRESHOLD,
        retrieve=_kb_retriever(conflict.knowledge_base),
        business=conflict.knowledge_base.name,
    )


class SuggestionClaimLost(Exception):
    """The job was finished or taken over by another worker while this one computed: write nothing."""


def suggestion_job_run(*, job_id: int) -> SuggestionJob:
    """Claim a queued suggestion job (one conditional update) and compute it; a job that is finished,
    or held by another worker, is returned unchanged."""
    claim = timezone.now()
    taken = (
        SuggestionJob.objects.filter(pk=job_id)
        .filter(Q(status=JobStatus.QUEUED) | Q(status=JobStatus.RUNNING, claimed_at__lt=jobs.claim_expiry()))
        .update(status=JobStatus.RUNNING, claimed_at=claim, attempts=F("attempts") + 1)
    )
    job = SuggestionJob.objects.get(pk=job_id)
    if not taken:
        return job
    try:
        suggestion_compute(conflict_id=job.conflict_id, job=job)
    except SuggestionClaimLost:
        logger.warning("suggestion job %s outlived its claim; the other worker's result stands", job_id)
    job.refresh_from_db()
    return job


def suggestion_job_release(*, job: SuggestionJob, error: str, final: bool) -> None:
    """A computation raised: queue the job again for a retry, or record why it failed for good."""
    SuggestionJob.objects.filter(pk=job.pk, status=JobStatus.RUNNING, claimed_at=job.claimed_at).update(
        status=JobStatus.FAILED if final else JobStatus.QUEUED,
        claimed_at=None,
        error=error[:2000],
        finished_at=timezone.now() if final else None,
    )


def suggestion_compute(*, conflict_id: int, job: SuggestionJob | None = None) -> ResolutionSuggestion:
    """(Re)compute the suggestion for one conflict from its articles' current versions. Idempotent.

    Executable rules first (free, no LLM); a conflict they do not cover goes to the LLM path of MACR
    when one is configured, and its provisional judgment is kept as feedback for the Observer.
    A failure leaves no suggestion and records why: none is better than a wrong one.
    """
    conflict = Conflict.objects.select_related(
        "article_low__current_version", "article_high__current_version", "knowledge_base"
    ).get(pk=conflict_id)
    low, high = conflict.article_low, conflict.article_high
    a, b = _article_text(low, low.current_version), _article_text(high, high.current_version)
    rules, version = active_rules(knowledge_base=conflict.knowledge_base)
    threshold = suggestion_threshold(knowledge_base=conflict.knowledge_base)
    statement_dates = {
        article.external_ref: date
        for article, snippet in ((low, conflict.snippet_low), (high, conflict.snippet_high))
        if (date := _statement_date(article, snippet)) is not None
    }
    result: Suggestion | None = suggest(
        a=a,
        b=b,
        conflict_type=conflict.type,
        now=timezone.localdate(),
        rules=rules,
        snippets={low.external_ref: conflict.snippet_low, high.external_ref: conflict.snippet_high},
        statement_dates=statement_dates,
        min_confidence=threshold,
    )
    llm_calls, failure, feedback = 0, "", {}
    # The LLM path is for pairs no rule covers; rules that cover it but are not sure enough stay "cannot tell".
    config = llm_config_for("suggestions") if result.winner is None and result.leaning is None else None
    if config is not None:
        rules, _ = active_rules(knowledge_base=conflict.knowledge_base, textual=True)
        try:
            macr = _suggest_with_llm(conflict=conflict, a=a, b=b, config=config, rules=rules)
        except LLMError as exc:  # the pipeline reports its own failures; this is a belt for the braces
            macr = None
            failure = f"LLM {exc}"
        if macr is not None:
            llm_calls, failure = macr.llm_calls, macr.failure or ""
            result = _below_threshold_cannot_tell(macr.suggestion, threshold)
            if macr.feedback:
                case = macr.feedback[0]
                feedback = {
                    "question": case.question,
                    "provisional_winner": case.provisional_winner,
                    "reasoning": case.reasoning,
                    "principle_condition": case.principle_condition,
                    "principle_resolution": case.principle_resolution,
                }
    return _suggestion_store(
        conflict=conflict, result=None if failure else result, failure=failure, llm_calls=llm_calls,
        feedback=feedback, rules=rules, rule_base_version=version, job=job,
    )


def _below_threshold_cannot_tell(result: Suggestion | None, threshold: float) -> Suggestion | None:
    """Nothing is shown below the threshold: a provisional LLM judgment (capped at 0.5) becomes "cannot tell"."""
    if result is None or result.winner is None or result.confidence >= threshold:
        return result
    return dataclasses.replace(
        result, winner=None, confidence=0.0, proposed_edit=None, leaning=result.winner,
        leaning_confidence=result.confidence,
        explanation=(f"Cannot tell: the model leans to {result.winner}, but only at confidence {result.confidence:.2f}, "
                     f"below this knowledge base's threshold {threshold:.2f}. {result.explanation}"),
    )


def _suggestion_store(
    *, conflict: Conflict, result: Suggestion | None, failure: str, llm_calls: int, feedback: dict, rules: list[Rule],
    rule_base_version: int, job: SuggestionJob | None = None,
) -> ResolutionSuggestion:
    low, high = conflict.article_low, conflict.article_high
    by_ref = {low.external_ref: low, high.external_ref: high}
    winner = by_ref.get(result.winner) if result and result.winner else None
    loser = (high if winner == low else low) if winner else None
    used = {r.id: r for r in rules if result and r.id in result.rules}
    if failure:
        status = SuggestionStatus.FAILED
    else:
        status = SuggestionStatus.SUGGESTED if winner else SuggestionStatus.ABSTAINED
    with transaction.atomic():
        if job is not None:
            held = SuggestionJob.objects.select_for_update().filter(
                pk=job.pk, status=JobStatus.RUNNING, claimed_at=job.claimed_at
            )
            if not held.update(status=JobStatus.DONE, finished_at=timezone.now(), error=""):
                raise SuggestionClaimLost(f"job {job.pk}")
        suggestion, _ = ResolutionSuggestion.objects.update_or_create(
            conflict=conflict,
            defaults={
                "status": status,
                "winner": winner,
                "explanation": result.explanation if result else "",
                "rules": [{"id": rid, "coverage": r.coverage, "support": r.support} for rid, r in used.items()],
                "confidence": result.confidence if result else 0.0,
                "edit_article": loser if result and result.proposed_edit else None,
                "proposed_edit": (result.proposed_edit or "") if result else "",
                "version_low": low.current_version,
                "version_high": high.current_version,
                "rule_base_version": rule_base_version,
                "llm_calls": llm_calls,
                "failure_reason": failure,
                "provisional": bool(feedback),
                "feedback": feedback,
            },
        )
    return suggestion


def suggestion_record_use(*, conflict: Conflict) -> int:
    """A reviewer resolved the conflict the way its suggestion said: count one real use of its rules.

    (Computing a suggestion is not a use; the same rule may be suggested many times and never followed.)
    """
    suggestion = ResolutionSuggestion.objects.filter(conflict=conflict, status=SuggestionStatus.SUGGESTED).first()
    if suggestion is None or not suggestion.rules:
        return 0
    followed = {ReviewWinner.LOW: conflict.article_low_id, ReviewWinner.HIGH: conflict.article_high_id}.get(conflict.winner)
    if followed is None or followed != suggestion.winner_id:
        return 0
    return ResolutionRule.objects.filter(
        knowledge_base_id=conflict.knowledge_base_id, rule_id__in=[r["id"] for r in suggestion.rules]
    ).update(times_applied=F("times_applied") + 1)


def suggestion_request(*, conflict_id: int, force: bool = False) -> None:
    """Compute the suggestion on a worker once the current transaction commits (once per article versions;
    `force`: a reviewer asked for it again)."""
    jobs.suggestion_enqueue(conflict_id=conflict_id, force=force)


def _outcome(conflict: Conflict) -> str:
    if conflict.status == ConflictStatus.DISMISSED or conflict.winner == ReviewWinner.BOTH:
        return OUTCOME_BOTH
    if conflict.winner == ReviewWinner.LOW:
        return conflict.article_low.external_ref
    if conflict.winner == ReviewWinner.HIGH:
        return conflict.article_high.external_ref
    return OUTCOME_NEITHER


def staff_decisions(*, knowledge_base: KnowledgeBase) -> list[Decision]:
    """Reviewed conflicts as demonstrations, judged on the versions the reviewer saw."""
    reviewed = (
        Conflict.objects.filter(
            knowledge_base=knowledge_base,
            status__in=[ConflictStatus.PROCESSED, ConflictStatus.DISMISSED],
            reviewed_version_low__isnull=False,
            reviewed_version_high__isnull=False,
            article_high__isnull=False,  # one-article findings have no side a rule could pick
        )
        .exclude(winner="")
        .select_related("article_low", "article_high")
        .order_by("pk")
    )
    version_ids = [v for c in reviewed for v in (c.reviewed_version_low_id, c.reviewed_version_high_id)]
    versions = ArticleVersion.objects.in_bulk(version_ids)
    decisions = []
    for conflict in reviewed:
        # The reviewer judged the texts before their fix: the version that existed when the conflict was seen.
        low_version = _version_before_review(conflict.article_low, versions[conflict.reviewed_version_low_id], conflict)
        high_version = _version_before_review(conflict.article_high, versions[conflict.reviewed_version_high_id], conflict)
        decisions.append(
            Decision(
                a=_article_text(conflict.article_low, low_version),
                b=_article_text(conflict.article_high, high_version),
                type=conflict.type,
                outcome=_outcome(conflict),
                decided_on=timezone.localdate(conflict.reviewed_at) if conflict.reviewed_at else timezone.localdate(),
                key=str(conflict.pk),
                snippets={
                    conflict.article_low.external_ref: conflict.snippet_low,
                    conflict.article_high.external_ref: conflict.snippet_high,
                },
            )
        )
    return decisions


def _version_before_review(article: Article, reviewed: ArticleVersion, conflict: Conflict) -> ArticleVersion:
    """A fix written while resolving is the reviewer's answer, not the case they judged: use the one before."""
    if reviewed.reason == VersionReason.RESOLVE and reviewed.number > 1:
        return article.versions.filter(number__lt=reviewed.number).order_by("-number").first() or reviewed
    return reviewed


def feedback_cases(*, knowledge_base: KnowledgeBase) -> list[FeedbackCase]:
    """Conflicts the rules did not cover, with the LLM's provisional judgment: folded into the next induction."""
    cases = []
    for suggestion in ResolutionSuggestion.objects.filter(
        conflict__knowledge_base=knowledge_base, provisional=True, version_low__isnull=False, version_high__isnull=False
    ).select_related("conflict__article_low", "conflict__article_high", "version_low", "version_high"):
        conflict, fb = suggestion.conflict, suggestion.feedback
        cases.append(
            FeedbackCase(
                pair=ConflictPair(
                    a=_article_text(conflict.article_low, suggestion.version_low),
                    b=_article_text(conflict.article_high, suggestion.version_high),
                    type=conflict.type,
                ),
                now=timezone.localdate(suggestion.computed_at),
                question=fb.get("question", ""),
                provisional_winner=fb.get("provisional_winner"),
                reasoning=fb.get("reasoning", ""),
                principle_condition=fb.get("principle_condition", ""),
                principle_resolution=fb.get("principle_resolution", ""),
            )
        )
    return cases


def rule_induction_run(*, knowledge_base: KnowledgeBase, actor=None) -> InductionRun:
    """The Observer: validate candidate rules on held-out staff decisions and keep those that pass.

    Candidates are the executable templates and the knowledge base's textual rules, plus, when an LLM
    is configured, rules it proposes from the training decisions and the feedback cases.
    """
    rule_base_ensure(knowledge_base=knowledge_base)
    run = InductionRun.objects.create(knowledge_base=knowledge_base, requested_by=actor)
    decisions = staff_decisions(knowledge_base=knowledge_base)
    run.decisions = len(decisions)
    if len(decisions) < MIN_DECISIONS_FOR_INDUCTION:
        return _induction_finish(run, status=InductionStatus.SKIPPED, reason=(
            f"{len(decisions)} reviewed conflicts; at least {MIN_DECISIONS_FOR_INDUCTION} are needed "
            "before rules are validated (the rule base stays as it is)"
        ))
    config = llm_config_for("suggestions")
    textual_rows = ResolutionRule.objects.filter(knowledge_base=knowledge_base, kind=RuleKind.TEXTUAL)
    candidates = executable_rules() + ([_textual_rule(row) for row in textual_rows] if config else [])
    thresholds = {"min_coverage": settings.MACR_MIN_COVERAGE, "min_support": settings.MACR_MIN_SUPPORT}
    try:
        if config is not None:
            from agents.macr.calls import CallMeter

            meter = CallMeter()
            result = induce_with_llm(decisions=decisions, candidates=candidates, config=config,
                                     feedback=feedback_cases(knowledge_base=knowledge_base), meter=meter, **thresholds)
            run.llm_calls = meter.calls
        else:
            result = induce_rules(decisions=decisions, candidates=candidates, **thresholds)
    except LLMError as exc:
        return _induction_finish(run, status=InductionStatus.FAILED, reason=f"LLM {exc}; the rule base is unchanged")
    with transaction.atomic():
        version = (
            ResolutionRule.objects.filter(knowledge_base=knowledge_base).aggregate(v=Max("rule_base_version"))["v"] or 0
        ) + 1
        for rule, validation in zip(result.candidates, result.validations):
            validated_on = [{"conflict": int(key), "agreed": True} for key in validation.agreed_keys if key] + [
                {"conflict": int(key), "agreed": False} for key in validation.disagreed_keys if key
            ]
            counts = {
                "validated_cases": validation.covered, "validated_agreed": validation.supported,
                "validated_by_standing": validation.by_standing, "validated_on": validated_on,
            }
            updated = ResolutionRule.objects.filter(knowledge_base=knowledge_base, rule_id=validation.rule_id).update(
                **counts,
                coverage=validation.coverage,
                support=validation.support,
                status=RuleStatus.ACTIVE if validation.accepted else RuleStatus.RETIRED,
                rule_base_version=version,
            )
            if not updated:
                # A rule the LLM proposed in this run: kept as active or as a rejected candidate, with figures.
                ResolutionRule.objects.create(
                    knowledge_base=knowledge_base, rule_id=rule.id, type=rule.type, condition=rule.condition,
                    resolution=rule.resolution, origin=RuleOrigin.INDUCED, kind=RuleKind.TEXTUAL,
                    status=RuleStatus.ACTIVE if validation.accepted else RuleStatus.CANDIDATE,
                    priority=rule.priority, coverage=validation.coverage, support=validation.support,
                    rule_base_version=version, **counts,
                )
        run.training, run.validation = len(result.training), len(result.validation)
        run.candidates = len(result.validations)
        run.accepted = len(result.active_rules)
        run.rule_base_version = version
        run.figures = [
            {"id": v.rule_id, "coverage": v.coverage, "support": v.support, "covered": v.covered,
             "agreed": v.supported, "held_out_only": v.held_out_only,
             "cases": v.cases, "accepted": v.accepted, "skipped": v.skipped_reason}
            for v in result.validations
        ]
        return _induction_finish(run, status=InductionStatus.DONE)


def _induction_finish(run: InductionRun, *, status: str, reason: str = "") -> InductionRun:
    run.status, run.reason, run.finished_at = status, reason, timezone.now()
    run.save()
    return run


def rule_set_enabled(*, rule: ResolutionRule, enabled: bool, actor=None) -> ResolutionRule:
    with transaction.atomic():
        if rule.enabled != enabled:
            rule.enabled = enabled
            rule.save(update_fields=["enabled", "updated_at"])
            audit_event_record(
                action=AuditAction.RULE_ENABLED if enabled else AuditAction.RULE_DISABLED,
                target=rule, knowledge_base=rule.knowledge_base, actor=actor, rule_id=rule.rule_id,
            )
    return rule


def rule_induction_request(*, knowledge_base: KnowledgeBase, actor=None) -> None:
    """Run the Observer now (ops asked for it), after the request's transaction commits."""
    jobs.rule_induction_enqueue(knowledge_base_id=knowledge_base.pk, actor_id=actor.pk if actor else None)
