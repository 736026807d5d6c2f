"""Reads for the API: a turn, the conflicts it found, a knowledge base's conflicts."""
from __future__ import annotations

from django.db.models import QuerySet

from articles.models import KnowledgeBase
from conflicts.models import (
    Conflict,
    ConflictOccurrence,
    Turn,
)


def turn_get(*, knowledge_base: KnowledgeBase, external_id: str) -> Turn:
    return Turn.objects.select_related("detection").get(knowledge_base=knowledge_base, external_id=external_id)


def conflicts_for_turn(*, turn: Turn) -> QuerySet:
    return (
        Conflict.objects.filter(occurrences__turn=turn)
        .select_related("article_low", "article_high")
        .order_by("pk")
    )


def conflicts_by_ids(*, knowledge_base: KnowledgeBase, ids) -> list[Conflict]:
    return list(Conflict.objects.filter(knowledge_base=knowledge_base, pk__in=ids).order_by("pk"))


def conflict_list(*, knowledge_base: KnowledgeBase, status: str | None = None) -> QuerySet:
    conflicts = Conflict.objects.filter(knowledge_base=knowledge_base).select_related("article_low", "article_high")
    if status:
        conflicts = conflicts.filter(status=status)
    return conflicts.order_by("-times_cited", "-impact", "-last_seen", "-pk")


def occurrences_for(*, conflict: Conflict) -> QuerySet:
    return ConflictOccurrence.objects.filter(conflict=conflict).select_related("turn").order_by("-created_at")
