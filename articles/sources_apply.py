"""What one document of a sync does to articles: unchanged bytes cost nothing; changed text becomes a new
article version (its article re-indexed at the end of the sync), or a drift item when staff edited the
article in the console since the last sync (articles/sources_drift.py); pages the source no longer lists go
by the source's gone policy. Each document is applied in its own transaction, so a failing page leaves
nothing of itself written and the others still land.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

from django.db import DatabaseError, transaction
from django.utils import timezone

from articles.audit import audit_event_record
from articles.ingest import ParsedArticle
from articles.models import (
    CONSOLE_REASONS,
    Article,
    ArticleStatus,
    ArticleVersion,
    AuditAction,
    DriftStatus,
    GonePolicy,
    PageState,
    Source,
    SourcePage,
    SourceSync,
)
from articles.services import (
    ArticleInputError,
    article_delete,
    article_locked_by_ref,
    article_restore,
    article_upsert,
    content_hash,
)
from articles.sources_drift import drift_hold
from kbreview.leases import lease_heartbeat

PROGRESS_EVERY_S = 0.3
COUNT_KEYS = (
    "created", "changed", "unchanged", "not_modified", "held", "back", "gone", "gone_pending", "errors", "fetched",
)


class PageError(Exception):
    """One page that cannot be applied; its message goes in the sync report."""


@dataclass
class SyncRun:
    """What one sync has listed, applied and counted so far (reported through its lease's heartbeat)."""

    sync: SourceSync
    source: Source
    pages: dict[str, SourcePage]
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_KEYS, 0))
    page_errors: list[dict] = field(default_factory=list)
    seen_keys: set[str] = field(default_factory=set)
    changed_ids: set[int] = field(default_factory=set)
    confirmed_ids: list[int] = field(default_factory=list)  # pages found unchanged: one UPDATE at the end
    done: int = 0
    last_report: float = 0.0

    def error(self, key: str, message: str) -> None:
        self.counts["errors"] += 1
        self.page_errors.append({"key": key, "error": message})
        page = self.pages.get(key)
        if page is not None:
            SourcePage.objects.filter(pk=page.pk).update(last_error=message[:2000])

    def progress(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last_report >= PROGRESS_EVERY_S:
            self.last_report = now
            lease_heartbeat(self.sync, done=self.done, counts=self.counts)


def _document_pages(run: SyncRun, key: str, *, file_pages: bool) -> list[SourcePage]:
    if not file_pages:
        return [run.pages[key]] if key in run.pages else []
    prefix = key + "#"
    return [page for page_key, page in run.pages.items() if page_key.startswith(prefix)]


def document_pages_keep(run: SyncRun, key: str) -> None:
    """A document that failed keeps its pages as they are (an error is not a removal)."""
    for page in _document_pages(run, key, file_pages=True):
        run.seen_keys.add(page.key)


def apply_document(run: SyncRun, *, key: str, raw: bytes, etag: str, last_modified: str, parse, file_pages: bool = False):
    raw_hash = hashlib.sha256(raw).hexdigest()
    known = _document_pages(run, key, file_pages=file_pages)
    if known and all(p.raw_hash == raw_hash and p.state == PageState.PRESENT for p in known):
        # Same bytes as last time: nothing to parse or write (a server without ETag still costs no version).
        run.seen_keys.update(p.key for p in known)
        run.counts["unchanged"] += len(known)
        run.confirmed_ids.extend(p.pk for p in known)
        if any((p.etag, p.last_modified) != (etag, last_modified) for p in known):
            SourcePage.objects.filter(pk__in=[p.pk for p in known]).update(etag=etag, last_modified=last_modified)
        return
    try:
        items = parse(raw)
    except PageError as exc:
        if file_pages:
            document_pages_keep(run, key)
        run.error(key, str(exc))
        return
    # A document's articles are written in one transaction: a file whose fifth FAQ entry cannot be written
    # leaves none of its entries written, and the run's bookkeeping is put back to match.
    pages, changed_ids = dict(run.pages), set(run.changed_ids)
    outcomes = []
    try:
        with transaction.atomic():
            for page_key, parsed in items:
                outcomes.append(_apply_page(run, key=page_key, parsed=parsed, raw_hash=raw_hash, etag=etag,
                                            last_modified=last_modified))
    except (PageError, ArticleInputError, DatabaseError) as exc:
        run.pages, run.changed_ids = pages, changed_ids
        if file_pages:
            document_pages_keep(run, key)
        elif key in run.pages:
            run.seen_keys.add(key)
        message = str(exc) if not isinstance(exc, DatabaseError) else f"cannot be stored: {str(exc).splitlines()[0]}"
        run.error(key, message)
        return
    for (page_key, _), outcome in zip(items, outcomes):
        run.seen_keys.add(page_key)
        run.counts[outcome] += 1


def _edited_in_console_since(article: Article, synced: ArticleVersion | None) -> bool:
    return ArticleVersion.objects.filter(
        article=article, reason__in=CONSOLE_REASONS, number__gt=synced.number if synced else 0
    ).exists()


def _apply_page(run: SyncRun, *, key: str, parsed: ParsedArticle, raw_hash: str, etag: str, last_modified: str) -> str:
    """Write one page's article (created / changed), hold it as drift, or confirm it unchanged; one transaction."""
    source = run.source
    knowledge_base = source.knowledge_base
    page = run.pages.get(key)
    new_hash = content_hash(title=parsed.title, body=parsed.body, updated_at=parsed.updated_at)
    with transaction.atomic():
        article = article_locked_by_ref(knowledge_base=knowledge_base, ref=parsed.ref)
        if article is not None:
            owner = (
                SourcePage.objects.filter(article=article)
                .exclude(pk=page.pk if page else None)
                .exclude(state=PageState.GONE)
                .select_related("source")
                .first()
            )
            if owner is not None:
                raise PageError(f"ref {parsed.ref!r} already comes from source {owner.source.name!r} ({owner.key})")
        synced = page.synced_version if page else None
        if article is None:
            article, _ = article_upsert(knowledge_base=knowledge_base, parsed=parsed)
            outcome, synced = "created", article.current_version
            run.changed_ids.add(article.pk)
        elif page is not None and page.source_hash == new_hash and page.article_id == article.pk:
            outcome = "unchanged"  # the source's text is what we saw last time (bytes around it changed)
        elif article.current_version is not None and article.current_version.content_hash == new_hash:
            outcome, synced = "unchanged", article.current_version
        elif article.current_version is not None and _edited_in_console_since(article, synced):
            drift_hold(article=article, page=page, parsed=parsed, source_name=source.name, key=key)
            outcome = "held"
        else:
            article, _ = article_upsert(knowledge_base=knowledge_base, parsed=parsed)
            outcome, synced = "changed", article.current_version
            run.changed_ids.add(article.pk)
        was_gone = page is not None and page.state != PageState.PRESENT
        fields = {
            "article": article, "synced_version": synced, "state": PageState.PRESENT, "etag": etag,
            "last_modified": last_modified, "raw_hash": raw_hash, "source_hash": new_hash, "last_error": "",
            "last_seen_at": timezone.now(),
        }
        page, _ = SourcePage.objects.update_or_create(source=source, key=key, defaults=fields)
        if outcome == "held":
            # The drift item was created before the page row existed on a first sync; link it now.
            article.drift_items.filter(status=DriftStatus.PENDING, page__isnull=True).update(page=page)
        run.pages[key] = page
        if was_gone:
            audit_event_record(action=AuditAction.ARTICLE_BACK, target=article, source=source.name, key=key)
            if article.status == ArticleStatus.DELETED:
                article_restore(article=article, note=f"back in source {source.name}")
            if outcome == "unchanged":
                outcome = "back"
    return outcome


def mark_gone(run: SyncRun) -> None:
    """Pages the source no longer lists: gone at once, or awaiting confirmation, by the source's policy."""
    immediate = run.source.gone_policy == GonePolicy.IMMEDIATE
    for key, page in list(run.pages.items()):
        if key in run.seen_keys or page.state != PageState.PRESENT:
            continue
        with transaction.atomic():
            if immediate:
                page_gone(page=page, actor=None, source_name=run.source.name)
                run.counts["gone"] += 1
            else:
                SourcePage.objects.filter(pk=page.pk).update(state=PageState.GONE_PENDING)
                if page.article_id:
                    audit_event_record(action=AuditAction.ARTICLE_GONE, target=page.article, source=run.source.name,
                                       key=key, awaiting_confirmation=True)
                run.counts["gone_pending"] += 1


def page_gone(*, page: SourcePage, actor, source_name: str) -> None:
    SourcePage.objects.filter(pk=page.pk).update(state=PageState.GONE)
    if page.article_id:
        audit_event_record(action=AuditAction.ARTICLE_GONE, target=page.article, actor=actor, source=source_name,
                           key=page.key)
        article_delete(article=page.article, actor=actor, note=f"gone from source {source_name}")
