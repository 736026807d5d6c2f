"""Every write to the knowledge base. Each state change writes its audit row in the same transaction."""
from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from articles.audit import audit_event_record
from articles.indexing import article_reindex, article_unindex, index_resync
from articles.ingest import IngestError, ParsedArticle, parse_path
from articles.models import (
    Article,
    ArticleStatus,
    ArticleVersion,
    AuditAction,
    KnowledgeBase,
    VersionReason,
)
from kbreview.input_limits import text_problem

logger = logging.getLogger(__name__)


class StaleVersionError(Exception):
    """The article changed since the version the caller edited from; nothing was written."""

    def __init__(self, article: Article, expected_version_id: int | None):
        self.article = article
        self.expected_version_id = expected_version_id
        super().__init__(
            f"Article {article.external_ref} was changed by someone else since you opened it "
            f"(you edited version id {expected_version_id}, the current one is {article.current_version_id}). "
            "Reload it and apply your change again."
        )


class ArticleInputError(ValueError):
    """Input for an article write that cannot be stored (e.g. an empty body)."""


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    chunks_indexed: int = 0


def content_hash(*, title: str, body: str, updated_at: dt.date | None) -> str:
    payload = "\x1f".join([title.strip(), body.strip(), updated_at.isoformat() if updated_at else ""])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def knowledge_base_get_or_create(*, slug: str, name: str | None = None, description: str = "") -> KnowledgeBase:
    kb, _ = KnowledgeBase.objects.get_or_create(
        slug=slug, defaults={"name": name or slug.replace("-", " ").title(), "description": description}
    )
    return kb


def _version_write(
    *,
    article: Article,
    title: str,
    body: str,
    updated_at: dt.date | None,
    reason: str,
    actor=None,
    note: str = "",
) -> ArticleVersion:
    """Append a version and make it current. Caller holds the article's row lock (or just created it)."""
    body = body.strip()
    title = title.strip()
    if not body:
        raise ArticleInputError(f"Article {article.external_ref}: the body is empty.")
    if not title:
        raise ArticleInputError(f"Article {article.external_ref}: the title is empty.")
    last_number = article.versions.order_by("-number").values_list("number", flat=True).first() or 0
    version = ArticleVersion.objects.create(
        article=article,
        number=last_number + 1,
        title=title,
        body=body,
        content_hash=content_hash(title=title, body=body, updated_at=updated_at),
        updated_at=updated_at,
        reason=reason,
        author=actor,
        note=note,
    )
    article.current_version = version
    article.title = title
    article.save(update_fields=["current_version", "title", "modified_at"])
    audit_event_record(action=AuditAction.ARTICLE_VERSION_ADDED, target=article, actor=actor, version=version.pk,
                       reason=reason, note=note)
    return version


def article_locked_by_ref(*, knowledge_base: KnowledgeBase, ref: str) -> Article | None:
    """The article with this ref, row-locked for the rest of the caller's transaction (or None)."""
    return (
        Article.objects.select_for_update(of=("self",))
        .select_related("current_version")
        .filter(knowledge_base=knowledge_base, external_ref=ref)
        .first()
    )


def article_upsert(
    *,
    knowledge_base: KnowledgeBase,
    parsed: ParsedArticle,
    actor=None,
) -> tuple[Article, str]:
    """Create or update one article from parsed input. Returns (article, "created" | "updated" | "unchanged")."""
    with transaction.atomic():
        article = article_locked_by_ref(knowledge_base=knowledge_base, ref=parsed.ref)
        if article is None:
            article = Article.objects.create(
                knowledge_base=knowledge_base,
                external_ref=parsed.ref,
                title=parsed.title,
                source_type=parsed.source,
                source_uri=parsed.source_uri,
            )
            audit_event_record(action=AuditAction.ARTICLE_CREATED, target=article, actor=actor, location=parsed.location)
            outcome = "created"
        else:
            new_hash = content_hash(title=parsed.title, body=parsed.body, updated_at=parsed.updated_at)
            metadata_changed = (article.source_type, article.source_uri) != (parsed.source, parsed.source_uri)
            if metadata_changed:
                article.source_type, article.source_uri = parsed.source, parsed.source_uri
                article.save(update_fields=["source_type", "source_uri", "modified_at"])
            if article.current_version and article.current_version.content_hash == new_hash:
                return article, "updated" if metadata_changed else "unchanged"
            outcome = "updated"
        _version_write(
            article=article,
            title=parsed.title,
            body=parsed.body,
            updated_at=parsed.updated_at,
            reason=VersionReason.IMPORT,
            actor=actor,
        )
        return article, outcome


def parsed_article_check(item: ParsedArticle) -> None:
    """Refuse (IngestError naming the file, row and field) what the article columns cannot hold: the one
    check imports and source syncs share."""
    path = Path(item.location.split(" ")[0])
    location = item.location.removeprefix(path.name).strip() or None
    checks = (
        ("ref", item.ref, Article, False),
        ("title", item.title, Article, False),
        ("source_uri", item.source_uri, Article, False),
        ("body", item.body, ArticleVersion, True),
    )
    columns = {"ref": "external_ref"}
    for field_name, value, model, multiline in checks:
        reason = text_problem(value, multiline=multiline, required=field_name != "source_uri")
        max_length = model._meta.get_field(columns.get(field_name, field_name)).max_length
        if reason is None and max_length is not None and len(value) > max_length:
            reason = f"is {len(value)} characters long; at most {max_length} fit"
        if reason:
            raise IngestError(path, location, f"field {field_name!r} {reason}")


def articles_import(
    *, knowledge_base: KnowledgeBase, parsed: list[ParsedArticle], actor=None, reindex: bool = True
) -> ImportReport:
    """Import parsed articles all-or-nothing, then bring the index up to date for what changed."""
    if not parsed:
        raise IngestError(None, None, "nothing to import: the files hold no articles")
    seen: dict[str, ParsedArticle] = {}
    for item in parsed:
        parsed_article_check(item)
        if item.ref in seen:
            raise IngestError(
                Path(item.location.split(" ")[0]),
                item.location,
                f"duplicate ref {item.ref!r} (also at {seen[item.ref].location})",
            )
        seen[item.ref] = item
    report = ImportReport()
    with transaction.atomic():
        for item in parsed:
            try:
                _, outcome = article_upsert(knowledge_base=knowledge_base, parsed=item, actor=actor)
            except ArticleInputError as exc:
                raise IngestError(Path(item.location.split(" ")[0]), item.location, str(exc)) from exc
            getattr(report, outcome).append(item.ref)
    if reindex:
        report.chunks_indexed = index_resync(knowledge_base=knowledge_base)
    return report


def articles_import_paths(
    *, knowledge_base: KnowledgeBase, paths: Iterable[Path], actor=None, reindex: bool = True
) -> ImportReport:
    """Parse every file first (any error aborts before a write), then import in one transaction."""
    parsed: list[ParsedArticle] = []
    for path in paths:
        parsed.extend(parse_path(Path(path)))
    return articles_import(knowledge_base=knowledge_base, parsed=parsed, actor=actor, reindex=reindex)


def _lock_current(*, article_id: int, expected_version_id: int | None) -> Article:
    article = Article.objects.select_for_update().get(pk=article_id)
    if expected_version_id is not None and article.current_version_id != expected_version_id:
        raise StaleVersionError(article, expected_version_id)
    return article


def article_edit(
    *,
    article: Article,
    expected_version_id: int | None,
    body: str,
    title: str | None = None,
    updated_at: dt.date | None = None,
    actor=None,
    reason: str = VersionReason.EDIT,
    note: str = "",
) -> ArticleVersion:
    """Write a new version from `expected_version_id`; refuses (StaleVersionError) if that is no longer current.

    The content date becomes today's unless given: an edit is a statement made now.
    """
    with transaction.atomic():
        locked = _lock_current(article_id=article.pk, expected_version_id=expected_version_id)
        if locked.status == ArticleStatus.DELETED:
            raise ArticleInputError(f"Article {locked.external_ref} is deleted; restore it before editing.")
        current = locked.current_version
        new_title = (title or current.title).strip()
        new_date = updated_at or timezone.localdate()
        if current and content_hash(title=new_title, body=body, updated_at=current.updated_at) == current.content_hash:
            return current  # nothing changed; no empty version
        return _version_write(
            article=locked, title=new_title, body=body, updated_at=new_date, reason=reason, actor=actor, note=note
        )


def article_delete(*, article: Article, expected_version_id: int | None = None, actor=None, note: str = "") -> Article:
    """Soft delete: the article leaves retrieval at once and can be restored with its history."""
    with transaction.atomic():
        locked = _lock_current(article_id=article.pk, expected_version_id=expected_version_id)
        if locked.status == ArticleStatus.DELETED:
            return locked
        locked.status = ArticleStatus.DELETED
        locked.save(update_fields=["status", "modified_at"])
        audit_event_record(action=AuditAction.ARTICLE_DELETED, target=locked, actor=actor, note=note)
        article_unindex(article=locked)
    return locked


def article_restore(*, article: Article, actor=None, note: str = "") -> Article:
    """Bring a soft-deleted article back into retrieval."""
    with transaction.atomic():
        locked = Article.objects.select_for_update().get(pk=article.pk)
        if locked.status == ArticleStatus.ACTIVE:
            return locked
        locked.status = ArticleStatus.ACTIVE
        locked.save(update_fields=["status", "modified_at"])
        audit_event_record(action=AuditAction.ARTICLE_RESTORED, target=locked, actor=actor, note=note)
    article_reindex(article_id=locked.pk)
    return locked


def article_version_restore(
    *, article: Article, version: ArticleVersion, expected_version_id: int | None, actor=None
) -> ArticleVersion:
    """Make an old version's text current again, as a new version (history is never rewritten)."""
    if version.article_id != article.pk:
        raise ArticleInputError("That version belongs to another article.")
    with transaction.atomic():
        locked = _lock_current(article_id=article.pk, expected_version_id=expected_version_id)
        new_version = _version_write(
            article=locked,
            title=version.title,
            body=version.body,
            updated_at=version.updated_at,
            reason=VersionReason.RESTORE,
            actor=actor,
            note=f"restored from v{version.number}",
        )
    article_reindex(article_id=article.pk)
    return new_version
