"""MACR in the product: suggestions for conflicts, and rule induction from staff decisions.

The algorithms live in agents.macr over plain data; this module turns rows into that data,
persists what comes back, and keeps each knowledge base's rule base and its figures.
"""
from __future__ import annotations

import dataclasses
import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from agents.configuration import llm_config_for
from agents.llm import LLMError
from agents.macr.calibration import default_threshold
from agents.macr.pipeline import suggest_for_conflict
from agents.macr.reasoner import suggest
from agents.macr.rules import Rule, executable_rules
from agents.types import ArticleText, Suggestion
from articles.audit import audit_event_record
from articles.embeddings import embed_texts
from articles.models import Article, ArticleVersion, AuditAction, KnowledgeBase
from articles.selectors import search
from conflicts.models import (
    Conflict,
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
from kbreview.jobs import enqueue
from kbreview.leases import lease_claim, lease_fail, lease_finish, lease_release

logger = logging.getLogger(__name__)

def _article_text(article: Article, version: ArticleVersion) -> ArticleText:
    return ArticleText(
        ref=article.external_ref,
        title=version.title,
        body=version.body,
        updated_at=version.updated_at,
        source=article.source_type,
    )


def rule_base_ensure(*, knowledge_base: KnowledgeBase) -> None:
    """Give the knowledge base a row for every executable template (active until validation says otherwise),
    and keep the words of the rows it has in step with the templates (a rule that learned a premise says so on
    the rules page); their status, figures and switches are the knowledge base's own and stay."""
    words = {rule_id: (condition, resolution) for rule_id, condition, resolution in ResolutionRule.objects.filter(
        knowledge_base=knowledge_base).values_list("rule_id", "condition", "resolution")}
    existing = set(words)
    for rule in executable_rules():
        if rule.id in words and words[rule.id] != (rule.condition, rule.resolution):
            ResolutionRule.objects.filter(knowledge_base=knowledge_base, rule_id=rule.id,
                                          origin=RuleOrigin.EXECUTABLE).update(
                condition=rule.condition, resolution=rule.resolution, updated_at=timezone.now())
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


def suggestion_enqueue(*, conflict_id: int, force: bool = False) -> SuggestionJob | None:
    """Queue a suggestion computation for the conflict's current article versions, once per versions, sent
    to a worker after commit.

    Nothing is queued when one is pending for these versions, nor (unless `force`: a reviewer asked) when one
    already finished for them, nor ever for a one-article finding. Returns the new SuggestionJob or None."""
    conflict = Conflict.objects.only("article_low_id", "article_high_id").get(pk=conflict_id)
    if not conflict.is_pair:
        return None  # a one-article finding has no "which side is right" to suggest
    versions = dict(Article.objects.filter(pk__in=(conflict.article_low_id, conflict.article_high_id))
                    .values_list("pk", "current_version_id"))
    created = suggestions_enqueue(
        keys=[(conflict_id, versions[conflict.article_low_id], versions[conflict.article_high_id])], force=force)
    return created[0] if created else None


def suggestions_enqueue(*, keys: list[tuple[int, int, int]], force: bool = False) -> list[SuggestionJob]:
    """suggestion_enqueue for several (conflict id, version_low id, version_high id) at once: one look-up of
    the jobs pending (or, unless `force`, finished) for those versions and one insert of the missing ones."""
    if not keys:
        return []
    settled = (JobStatus.QUEUED, JobStatus.RUNNING) if force else (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.DONE)
    taken = set(SuggestionJob.objects.filter(conflict_id__in={key[0] for key in keys}, status__in=settled)
                .values_list("conflict_id", "version_low_id", "version_high_id"))
    missing = sorted(set(keys) - taken)
    if not missing:
        return []
    try:
        with transaction.atomic():
            created = SuggestionJob.objects.bulk_create(
                SuggestionJob(conflict_id=c, version_low_id=low, version_high_id=high) for c, low, high in missing)
    except IntegrityError:  # a concurrent request queued some of the same versions first: one by one
        if len(missing) == 1:
            return []
        return [job for key in missing for job in suggestions_enqueue(keys=[key], force=force)]
    return [enqueue(job) for job in created]


def suggestion_job_run(*, job_id: int, final: bool = True) -> SuggestionJob:
    """Claim a queued suggestion job (kbreview.leases) and compute it; a job that is finished, or held by
    another worker, is returned unchanged. When the computation raises, the job is queued again for a retry,
    or (`final`: no retry is left) failed with the error, and the error propagates."""
    claim = lease_claim(SuggestionJob, pk=job_id)
    job = SuggestionJob.objects.get(pk=job_id)
    if claim is None:
        return job
    try:
        suggestion_compute(conflict_id=job.conflict_id, job=job)
    except SuggestionClaimLost:
        logger.warning("suggestion job %s outlived its claim; the other worker's result stands", job_id)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:2000]
        if final:
            lease_fail(job, error)
        else:
            lease_release(job, error=error)
        raise
    job.refresh_from_db()
    return job


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
        if job is not None and not lease_finish(job, status=JobStatus.DONE, finished_at=timezone.now(), error=""):
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
