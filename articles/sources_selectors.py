"""Reads about sources, their syncs and drift items. Every selector takes the knowledge base."""
from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from articles.models import DriftItem, DriftStatus, KnowledgeBase, PageState, Source, SourcePage, SourceSync


def source_list(*, knowledge_base: KnowledgeBase) -> QuerySet:
    return (
        Source.objects.filter(knowledge_base=knowledge_base)
        .select_related("last_sync")
        .annotate(
            page_count=Count("pages", filter=Q(pages__state=PageState.PRESENT), distinct=True),
            awaiting_gone=Count("pages", filter=Q(pages__state=PageState.GONE_PENDING), distinct=True),
        )
        .order_by("name")
    )


def source_get(*, knowledge_base: KnowledgeBase, source_id: int) -> Source | None:
    return source_list(knowledge_base=knowledge_base).filter(pk=source_id).first()


def source_syncs(*, source: Source, limit: int = 10) -> list[SourceSync]:
    return list(source.syncs.select_related("requested_by").order_by("-created_at", "-id")[:limit])


def source_file_rows(*, source: Source, last_sync: SourceSync | None) -> list[dict]:
    """An uploaded-files source's files, each with the error the last sync reported for it (if any)."""
    errors: dict[str, str] = {}
    for item in (last_sync.page_errors if last_sync else []):
        errors.setdefault(item.get("key", ""), item.get("error", ""))
    return [{"file": f, "error": errors.get(f.name, "")} for f in source.files.only("pk", "name", "size", "uploaded_at")]


def source_sync_get(*, knowledge_base: KnowledgeBase, sync_id: int) -> SourceSync | None:
    return SourceSync.objects.filter(knowledge_base=knowledge_base, pk=sync_id).select_related("source").first()


def source_pages(*, source: Source, state: str | None = None, failing: bool = False) -> QuerySet:
    pages = SourcePage.objects.filter(source=source).select_related("article")
    if failing:
        pages = pages.exclude(last_error="")
    return pages.filter(state=state) if state else pages


def source_page_get(*, knowledge_base: KnowledgeBase, page_id: int) -> SourcePage | None:
    return (
        SourcePage.objects.filter(source__knowledge_base=knowledge_base, pk=page_id)
        .select_related("source", "article")
        .first()
    )


def drift_items(*, knowledge_base: KnowledgeBase, status: str = DriftStatus.PENDING) -> QuerySet:
    return (
        DriftItem.objects.filter(knowledge_base=knowledge_base, status=status)
        .select_related("article", "page__source", "console_version", "decided_by")
        .order_by("-created_at", "-id")
    )


def drift_pending_count(*, knowledge_base: KnowledgeBase) -> int:
    return DriftItem.objects.filter(knowledge_base=knowledge_base, status=DriftStatus.PENDING).count()


def drift_get(*, knowledge_base: KnowledgeBase, item_id: int) -> DriftItem | None:
    return (
        DriftItem.objects.filter(knowledge_base=knowledge_base, pk=item_id)
        .select_related("article__current_version", "page__source", "console_version", "decided_by", "result_version")
        .first()
    )
