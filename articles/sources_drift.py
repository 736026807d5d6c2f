"""Drift: a source changed an article that staff edited in the console since the last sync.

The source text is held as a DriftItem, never written over the console text; retrieval keeps serving
the console version until staff decide: keep it, take the source text, or merge the two by hand.
Each decision is one function that writes its audit row.
"""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from articles.audit import audit_event_record
from articles.chunking import _SENTENCE_END, paragraphs  # the chunker's own sentence boundaries
from articles.indexing import article_reindex
from articles.ingest import ParsedArticle
from articles.models import (
    Article,
    ArticleVersion,
    AuditAction,
    DriftItem,
    DriftStatus,
    SourcePage,
    VersionReason,
)
from articles.services import article_edit


class DriftStateError(Exception):
    """The drift item was already decided (by someone else, or in another tab)."""


def statements(text: str) -> list[str]:
    return [sentence.strip() for paragraph in paragraphs(text) for sentence in _SENTENCE_END.split(paragraph) if sentence.strip()]


def _normal(statement: str) -> str:
    return " ".join(statement.casefold().split())


def statements_removed_in_resolves(*, article: Article) -> list[str]:
    """Statements a conflict resolution took out of the article (present before, absent after)."""
    versions = {v.number: v for v in ArticleVersion.objects.filter(article=article).only("number", "body", "reason")}
    removed: dict[str, str] = {}
    for number, version in sorted(versions.items()):
        previous = versions.get(number - 1)
        if version.reason != VersionReason.RESOLVE or previous is None:
            continue
        kept = {_normal(s) for s in statements(version.body)}
        for statement in statements(previous.body):
            if _normal(statement) not in kept:
                removed.setdefault(_normal(statement), statement)
    return list(removed.values())


def reintroduced_statements(*, article: Article, source_body: str) -> list[str]:
    in_source = {_normal(s) for s in statements(source_body)}
    return [s for s in statements_removed_in_resolves(article=article) if _normal(s) in in_source]


def drift_hold(*, article: Article, page: SourcePage | None, parsed: ParsedArticle, source_name: str, key: str) -> DriftItem:
    """Hold a source change for review (replacing the text of one still pending). Caller holds the article's lock."""
    fields = {
        "knowledge_base_id": article.knowledge_base_id,
        "page": page,
        "console_version_id": article.current_version_id,
        "source_title": parsed.title,
        "source_body": parsed.body,
        "source_updated_at": parsed.updated_at,
        "reintroduced": reintroduced_statements(article=article, source_body=parsed.body),
    }
    item, created = DriftItem.objects.update_or_create(article=article, status=DriftStatus.PENDING, defaults=fields)
    audit_event_record(action=AuditAction.DRIFT_HELD, target=article, drift_item=item.pk, source=source_name, key=key,
                       replaced_pending=not created, reintroduced=len(item.reintroduced))
    return item


def _lock_pending(item: DriftItem) -> DriftItem:
    locked = DriftItem.objects.select_for_update(of=("self",)).select_related("article", "page").get(pk=item.pk)
    if locked.status != DriftStatus.PENDING:
        who = f" by {locked.decided_by}" if locked.decided_by_id else ""
        raise DriftStateError(f"This change was already decided ({locked.get_status_display().lower()}{who}).")
    return locked


def _decide(locked: DriftItem, *, status: str, actor, version: ArticleVersion | None) -> DriftItem:
    locked.status = status
    locked.decided_by = actor
    locked.decided_at = timezone.now()
    locked.result_version = version
    locked.save(update_fields=["status", "decided_by", "decided_at", "result_version"])
    return locked


def drift_keep(*, item: DriftItem, actor=None, note: str = "") -> DriftItem:
    """Keep the console text; the held source text is dropped (a later source change is held again)."""
    with transaction.atomic():
        locked = _lock_pending(item)
        _decide(locked, status=DriftStatus.KEPT, actor=actor, version=None)
        audit_event_record(action=AuditAction.DRIFT_KEPT, target=locked.article, actor=actor, drift_item=locked.pk,
                           note=note)
    return locked


def drift_take_source(*, item: DriftItem, actor=None) -> DriftItem:
    """Replace the console text with the source's; later source changes apply without review again.

    Refuses (StaleVersionError) if the article changed since the item was held.
    """
    with transaction.atomic():
        locked = _lock_pending(item)
        version = article_edit(
            article=locked.article,
            expected_version_id=locked.console_version_id,
            title=locked.source_title,
            body=locked.source_body,
            updated_at=locked.source_updated_at,
            actor=actor,
            reason=VersionReason.IMPORT,
            note="took the source's text over the console's",
        )
        if locked.page_id:
            SourcePage.objects.filter(pk=locked.page_id).update(synced_version=version)
        _decide(locked, status=DriftStatus.TAKEN, actor=actor, version=version)
        audit_event_record(action=AuditAction.DRIFT_TAKEN, target=locked.article, actor=actor, drift_item=locked.pk,
                           version=version.pk)
    article_reindex(article_id=locked.article_id)  # the source text reaches retrieval before we answer
    return locked


def drift_merge(*, item: DriftItem, title: str, body: str, actor=None, note: str = "") -> DriftItem:
    """Save staff's merge of both texts as a console edit (so later source changes are held again)."""
    with transaction.atomic():
        locked = _lock_pending(item)
        version = article_edit(
            article=locked.article,
            expected_version_id=locked.console_version_id,
            title=title,
            body=body,
            actor=actor,
            reason=VersionReason.EDIT,
            note=note or "merged a source change",
        )
        _decide(locked, status=DriftStatus.MERGED, actor=actor, version=version)
        audit_event_record(action=AuditAction.DRIFT_MERGED, target=locked.article, actor=actor, drift_item=locked.pk,
                           version=version.pk, note=note)
    article_reindex(article_id=locked.article_id)
    return locked
