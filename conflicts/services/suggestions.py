"""MACR in the product: suggestions for conflicts, and rule induction from staff decisions.

The algorithms live in agents.macr over plain data; this module turns rows into that data,
persists what comes back, and keeps each knowledge base's rule base and its figures.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone

from agents.macr.observer import OUTCOME_BOTH, OUTCOME_NEITHER, Decision, induce_rules
from agents.macr.reasoner import suggest
from agents.macr.rules import Rule, executable_rules
from agents.types import ArticleText
from articles.models import Article, ArticleVersion, KnowledgeBase
from conflicts.models import (
    Conflict,
    ConflictStatus,
    InductionRun,
    InductionStatus,
    ResolutionRule,
    ResolutionSuggestion,
    ReviewWinner,
    RuleOrigin,
    RuleStatus,
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


def active_rules(*, knowledge_base: KnowledgeBase) -> tuple[list[Rule], int]:
    """The rules the Reasoner may use now, with this knowledge base's figures, and the rule-base version."""
    rule_base_ensure(knowledge_base=knowledge_base)
    rows = {
        row.rule_id: row
        for row in ResolutionRule.objects.filter(knowledge_base=knowledge_base, status=RuleStatus.ACTIVE, enabled=True)
    }
    version = ResolutionRule.objects.filter(knowledge_base=knowledge_base).aggregate(v=Max("rule_base_version"))["v"] or 0
    rules = []
    for rule in executable_rules():
        row = rows.get(rule.id)
        if row is None:
            continue
        if row.coverage is not None and row.support is not None:
            rule = rule.with_stats(coverage=row.coverage, support=row.support)
        rules.append(rule)
    # Textual rules need the LLM judge, which is not wired into the product yet; they are listed, not applied.
    return rules, version


def suggestion_compute(*, conflict_id: int) -> ResolutionSuggestion:
    """(Re)compute the suggestion for one conflict from its articles' current versions. Idempotent."""
    conflict = Conflict.objects.select_related(
        "article_low__current_version", "article_high__current_version", "knowledge_base"
    ).get(pk=conflict_id)
    low, high = conflict.article_low, conflict.article_high
    rules, version = active_rules(knowledge_base=conflict.knowledge_base)
    result = suggest(
        a=_article_text(low, low.current_version),
        b=_article_text(high, high.current_version),
        conflict_type=conflict.type,
        now=timezone.localdate(),
        rules=rules,
        snippets={low.external_ref: conflict.snippet_low, high.external_ref: conflict.snippet_high},
    )
    by_ref = {low.external_ref: low, high.external_ref: high}
    winner = by_ref.get(result.winner) if result.winner else None
    loser = (high if winner == low else low) if winner else None
    used = {r.id: r for r in rules if r.id in result.rules}
    with transaction.atomic():
        suggestion, _ = ResolutionSuggestion.objects.update_or_create(
            conflict=conflict,
            defaults={
                "status": SuggestionStatus.SUGGESTED if winner else SuggestionStatus.ABSTAINED,
                "winner": winner,
                "explanation": result.explanation,
                "rules": [{"id": rid, "coverage": r.coverage, "support": r.support} for rid, r in used.items()],
                "confidence": result.confidence,
                "edit_article": loser if result.proposed_edit else None,
                "proposed_edit": result.proposed_edit or "",
                "version_low": low.current_version,
                "version_high": high.current_version,
                "rule_base_version": version,
                "llm_calls": 0,
            },
        )
        if used:
            ResolutionRule.objects.filter(knowledge_base=conflict.knowledge_base, rule_id__in=list(used)).update(
                times_applied=F("times_applied") + 1
            )
    return suggestion


def suggestion_enqueue(*, conflict_id: int) -> None:
    """Compute the suggestion once the current transaction commits (a worker, or in-process without one)."""
    from conflicts.tasks import compute_suggestion

    transaction.on_commit(lambda: compute_suggestion.delay(conflict_id))


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
                snippets={
                    conflict.article_low.external_ref: conflict.snippet_low,
                    conflict.article_high.external_ref: conflict.snippet_high,
                },
            )
        )
    return decisions


def _version_before_review(article: Article, reviewed: ArticleVersion, conflict: Conflict) -> ArticleVersion:
    """A fix written while resolving is the reviewer's answer, not the case they judged: use the one before."""
    if reviewed.reason == "resolve" and reviewed.number > 1:
        return article.versions.filter(number__lt=reviewed.number).order_by("-number").first() or reviewed
    return reviewed


def rule_induction_run(*, knowledge_base: KnowledgeBase, actor=None) -> InductionRun:
    """The Observer: validate every candidate rule on held-out staff decisions and keep those that pass."""
    rule_base_ensure(knowledge_base=knowledge_base)
    run = InductionRun.objects.create(knowledge_base=knowledge_base, requested_by=actor)
    decisions = staff_decisions(knowledge_base=knowledge_base)
    run.decisions = len(decisions)
    if len(decisions) < MIN_DECISIONS_FOR_INDUCTION:
        run.status = InductionStatus.SKIPPED
        run.reason = (
            f"{len(decisions)} reviewed conflicts; at least {MIN_DECISIONS_FOR_INDUCTION} are needed "
            "before rules are validated (the templates stay as they are)"
        )
        run.finished_at = timezone.now()
        run.save()
        return run
    result = induce_rules(
        decisions=decisions,
        candidates=executable_rules(),
        min_coverage=settings.MACR_MIN_COVERAGE,
        min_support=settings.MACR_MIN_SUPPORT,
    )
    with transaction.atomic():
        version = (
            ResolutionRule.objects.filter(knowledge_base=knowledge_base).aggregate(v=Max("rule_base_version"))["v"] or 0
        ) + 1
        for validation in result.validations:
            ResolutionRule.objects.filter(knowledge_base=knowledge_base, rule_id=validation.rule_id).update(
                coverage=validation.coverage,
                support=validation.support,
                status=RuleStatus.ACTIVE if validation.accepted else RuleStatus.RETIRED,
                rule_base_version=version,
            )
        run.status = InductionStatus.DONE
        run.training, run.validation = len(result.training), len(result.validation)
        run.candidates = len(result.validations)
        run.accepted = len(result.active_rules)
        run.rule_base_version = version
        run.figures = [
            {"id": v.rule_id, "coverage": v.coverage, "support": v.support, "covered": v.covered,
             "cases": v.cases, "accepted": v.accepted, "skipped": v.skipped_reason}
            for v in result.validations
        ]
        run.finished_at = timezone.now()
        run.save()
    return run


def rule_set_enabled(*, rule: ResolutionRule, enabled: bool) -> ResolutionRule:
    rule.enabled = enabled
    rule.save(update_fields=["enabled", "updated_at"])
    return rule
