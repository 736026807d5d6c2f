""""The model disagrees with this article": findings the answer path records when IGD's answer-level filter
routes to the model's closed-book memory against a retrieved article.

Off unless the knowledge base turns it on (AnswerSettings.record_model_disagreements): a small local model's
memory is weak, so most of its disagreements are the model's mistakes, not the article's. When on, a finding is a
one-article Conflict (type MODEL_DISAGREES) identified by the article version it disputes: seen again on that
version it gains an occurrence; on a new version it is a new finding. Review (resolve, dismiss, reopen, assign,
snooze) is the conflicts' own; MACR has no side to suggest and skips it.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents.igd.pipeline import MemoryDisagreement
from agents.types import MODEL_DISAGREES
from articles.models import KnowledgeBase
from conflicts.models import (
    ActivityKind,
    AnswerSettings,
    ArticleUsage,
    Citation,
    Conflict,
    ConflictOccurrence,
    Turn,
)
from conflicts.services.detection import conflict_sighting_count
from conflicts.services.notifications import notify_conflict_sighting
from conflicts.services.review import conflict_activity_note

logger = logging.getLogger(__name__)

DETECTOR = "igd"  # who found it, in Conflict.detector / ConflictOccurrence.detector


def model_disagreements_recorded(*, knowledge_base: KnowledgeBase) -> bool:
    """Whether the knowledge base records model-disagreement findings (off without a settings row)."""
    return bool(
        AnswerSettings.objects.filter(knowledge_base=knowledge_base)
        .values_list("record_model_disagreements", flat=True)
        .first()
    )


def model_disagreement_explanation(*, ref: str, context_preview: str, memory_preview: str) -> str:
    """What the queue and the detail page say; the ref is shown as the article's current title (display.with_titles)."""
    model = "The local model" if settings.IGD_BACKEND == "local" else "The answer model"
    return (
        f"{model}, answering closed-book, disagrees with {ref}: it answered “{memory_preview.strip()}” "
        f"where the article says “{context_preview.strip()}”."
    )


def model_disagreement_record(*, turn: Turn, disagreement: MemoryDisagreement) -> Conflict | None:
    """Record the disagreement on the article version the turn retrieved, with this turn's occurrence, and the
    "opened" activity row when the finding is new. None when the knowledge base does not record them, or when the
    article is not among the turn's retrieved articles. Idempotent per turn."""
    if not model_disagreements_recorded(knowledge_base=turn.knowledge_base):
        return None
    usage = (
        ArticleUsage.objects.filter(turn=turn, article__external_ref=disagreement.ref)
        .select_related("article")
        .first()
    )
    if usage is None:
        logger.warning("turn %s: the model disagreed with %s, which the turn did not retrieve", turn.pk, disagreement.ref)
        return None
    now = timezone.now()
    explanation = model_disagreement_explanation(
        ref=disagreement.ref, context_preview=disagreement.context_preview, memory_preview=disagreement.memory_preview
    )
    with transaction.atomic():
        finding, created = Conflict.objects.get_or_create(
            type=MODEL_DISAGREES,
            disputed_version_id=usage.version_id,
            defaults={
                "knowledge_base_id": turn.knowledge_base_id,
                "article_low_id": usage.article_id,
                "explanation": explanation,
                "snippet_low": disagreement.passage,
                "detector": DETECTOR,
                "first_seen": now,
                "last_seen": now,
            },
        )
        finding = Conflict.objects.select_for_update().get(pk=finding.pk)
        citation = Citation.of(low=usage.cited, high=False)
        _, occurrence_created = ConflictOccurrence.objects.get_or_create(
            conflict=finding,
            turn=turn,
            defaults={
                "version_low_id": usage.version_id,
                "version_high_id": None,
                "detector": DETECTOR,
                "citation": citation,
                "context_preview": disagreement.context_preview,
                "memory_preview": disagreement.memory_preview,
            },
        )
        if not occurrence_created:
            return finding  # this turn was already counted
        conflict_sighting_count(conflict=finding, citation=citation, moment=now)
        if created:
            conflict_activity_note(
                conflict=finding,
                kind=ActivityKind.OPENED,
                turn=turn.external_id,
                question=turn.question,
                article_version=usage.version_id,
                context_preview=disagreement.context_preview,
                memory_preview=disagreement.memory_preview,
                memory_ratio=disagreement.memory_ratio,
                user_ratio=disagreement.user_ratio,
            )
        finding.save()
        notify_conflict_sighting(conflict=finding)  # once, when a new finding reaches the threshold, as for pairs
    return finding
