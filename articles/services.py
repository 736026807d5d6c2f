"""Every write to the knowledge base. Each state change writes its audit row in the same transaction."""
from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from articles.chunking import chunk_body
from articles.claim_texts import claim_text_vectors, claim_texts, matrix_to_bytes, texts_key
from kbreview.foreground import yield_to_foreground
from kbreview.input_limits import text_problem
from articles.embeddings import embed_texts, encoder_identity
from articles.ingest import IngestError, ParsedArticle, parse_path
from articles.models import (
    Article,
    ArticleAudit,
    ArticleAuditAction,
    ArticleStatus,
    ArticleVersion,
    Chunk,
    IndexSyncJob,
    KnowledgeBase,
    SyncStatus,
    VersionClaimVectors,
    VersionReason,
)

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


def _audit(*, article: Article, action: str, actor=None, version: ArticleVersion | None = None, **detail) -> None:
    ArticleAudit.objects.create(
        knowledge_base_id=article.knowledge_base_id,
        article=article,
        version=version,
        action=action,
        actor=actor,
        detail=detail,
    )


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
    _audit(article=article, action=ArticleAuditAction.NEW_VERSION, actor=actor, version=version, reason=reason, note=note)
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
            _audit(article=article, action=ArticleAuditAction.CREATE, actor=actor, location=parsed.location)
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
        _audit(article=locked, action=ArticleAuditAction.DELETE, actor=actor, note=note)
        _unindex(article=locked)
    return locked


def article_restore(*, article: Article, actor=None, note: str = "") -> Article:
    """Bring a soft-deleted article back into retrieval."""
    with transaction.atomic():
        locked = Article.objects.select_for_update().get(pk=article.pk)
        if locked.status == ArticleStatus.ACTIVE:
            return locked
        locked.status = ArticleStatus.ACTIVE
        locked.save(update_fields=["status", "modified_at"])
        _audit(article=locked, action=ArticleAuditAction.RESTORE, actor=actor, note=note)
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


# --- index sync ---------------------------------------------------------------------------------


def _unindex(*, article: Article) -> None:
    Chunk.objects.filter(article_id=article.pk).delete()
    Article.objects.filter(pk=article.pk).update(indexed_version=None)


@dataclass
class _Planned:
    """One article's index work: its current version's chunks and, when the conflict checker registered
    its function and the version has no vectors for those texts yet, its claim texts, with the vectors this
    process computed already for some of them (`known`: claim_text_vectors)."""

    article: Article
    pieces: list[str]
    claims: list[str] = field(default_factory=list)
    known: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def chunk_texts(self) -> list[str]:
        title = self.article.current_version.title
        return [f"{title}\n{t}" for t in self.pieces]

    @property
    def to_embed(self) -> list[str]:
        return self.chunk_texts + [t for t in self.claims if t not in self.known]


def _index_plan(article_ids: list[int], *, claims: bool = True) -> list[_Planned]:
    """The chunks (and, with `claims`, the claim texts) to embed for these articles' current versions;
    deleted ones leave the index here."""
    articles = list(
        Article.objects.filter(pk__in=article_ids).select_related("current_version").order_by("pk")
    )
    stored = dict(VersionClaimVectors.objects.filter(
        version_id__in=[a.current_version_id for a in articles if a.current_version_id and claims]
    ).values_list("version_id", "key"))
    planned: list[_Planned] = []
    for article in articles:
        if article.status != ArticleStatus.ACTIVE or article.current_version is None:
            with transaction.atomic():
                _unindex(article=article)
            continue
        version = article.current_version
        texts = (claim_texts(title=version.title, body=version.body) or []) if claims else []
        if stored.get(version.id) == texts_key(texts):
            texts = []  # stored already for these very texts (a full re-sync of an unchanged version)
        planned.append(_Planned(article, chunk_body(version.body), texts, claim_text_vectors.known(texts)))
    return planned


def _index_texts(planned: list[_Planned]) -> list[str]:
    """What the encoder embeds for these articles, in one call: their chunks and the claim texts without a
    vector, each text once (two articles may share a chunk or a sentence)."""
    return list(dict.fromkeys(text for item in planned for text in item.to_embed))


def _index_embed(texts: list[str]) -> dict[str, np.ndarray]:
    return dict(zip(texts, embed_texts(texts)))


def _index_write(planned: list[_Planned], embedded: dict[str, np.ndarray]) -> int:
    """Swap each article's chunks (and store its claim vectors) in one transaction. An article changed since
    it was planned is skipped, because the change that made it stale will index it itself. `embedded`: the
    vectors of _index_texts(planned), by text."""
    written = 0
    if planned:
        claim_text_vectors.keep({text: embedded[text] for item in planned for text in item.claims
                                 if text not in item.known}, encoder=encoder_identity())
    for item in planned:
        article, pieces, version = item.article, item.pieces, item.article.current_version
        article_vectors = [embedded[text] for text in item.chunk_texts]
        with transaction.atomic():
            locked = Article.objects.select_for_update().filter(pk=article.pk).first()
            if locked is None or locked.current_version_id != version.id or locked.status != ArticleStatus.ACTIVE:
                continue
            Chunk.objects.filter(article_id=article.pk).delete()
            Chunk.objects.bulk_create(
                Chunk(
                    knowledge_base_id=article.knowledge_base_id,
                    article_id=article.pk,
                    version=version,
                    ordinal=i,
                    title=version.title,
                    text=text,
                    embedding=vector,
                )
                for i, (text, vector) in enumerate(zip(pieces, article_vectors))
            )
            if item.claims:
                claim_vectors = np.stack([item.known[t] if t in item.known else embedded[t] for t in item.claims])
                VersionClaimVectors.objects.update_or_create(version=version, defaults={
                    "key": texts_key(item.claims), "count": len(item.claims), "dimensions": claim_vectors.shape[1],
                    "vectors": matrix_to_bytes(claim_vectors)})
            Article.objects.filter(pk=article.pk).update(indexed_version=version)
            written += len(pieces)
    return written


def _index_batch(article_ids: list[int], *, claims: bool = True) -> int:
    """Embed the current versions of these articles (outside any lock), then swap their chunks."""
    planned = _index_plan(article_ids, claims=claims)
    return _index_write(planned, _index_embed(_index_texts(planned)))


def _index_pipelined(
    article_ids: list[int], *, batch_size: int, on_progress: Callable[[int, int], None] | None = None,
    before_batch: Callable[[], object] | None = None,
) -> int:
    """Index in batches, embedding the next batch in a worker thread while this one writes the last:
    the encoder (which releases the GIL) never waits for the database. Only this thread touches the database.
    `before_batch` is called before each batch after the first is handed to the encoder (a worker yields
    to replies there)."""
    total, written = len(article_ids), 0
    batches = [article_ids[start : start + batch_size] for start in range(0, total, batch_size)]
    if on_progress:
        on_progress(0, total)
    if not batches:
        return 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="encoder") as encoder:
        planned = _index_plan(batches[0])
        pending = encoder.submit(_index_embed, _index_texts(planned))
        for number in range(len(batches)):
            following = _index_plan(batches[number + 1]) if number + 1 < len(batches) else None
            vectors = pending.result()
            if following is not None:
                if before_batch is not None:
                    before_batch()  # the encoder is idle and this thread waits: nothing of the re-sync runs
                pending = encoder.submit(_index_embed, _index_texts(following))
            written += _index_write(planned, vectors)
            planned = following
            if on_progress:
                on_progress(min((number + 1) * batch_size, total), total)
    return written


def article_reindex(*, article_id: int) -> int:
    """Synchronously bring one article's chunks in line with its current version (or remove them).

    This is what makes a reviewer's fix reach retrieval before their request returns.
    """
    # Chunks only: a fix must reach retrieval within its request, and embedding the claims about doubles
    # the encoder's work. A turn's check embeds this version's claims on first sight instead (and a full
    # re-sync stores them).
    return _index_batch([article_id], claims=False)


def articles_reindex(*, article_ids: list[int], batch_size: int = 64) -> int:
    """Bring just these articles' chunks in line with their current versions (a source sync's changes)."""
    return _index_pipelined(article_ids, batch_size=batch_size)


def stale_article_ids(*, knowledge_base: KnowledgeBase) -> list[int]:
    from articles.selectors import stale_articles

    return list(stale_articles(knowledge_base=knowledge_base).values_list("pk", flat=True))


def index_resync(
    *,
    knowledge_base: KnowledgeBase,
    full: bool = False,
    batch_size: int = 64,
    on_progress: Callable[[int, int], None] | None = None,
    before_batch: Callable[[], object] | None = None,
) -> int:
    """Re-embed what is stale (or everything with `full`). Returns the number of chunks written."""
    if full:
        ids = list(
            Article.objects.filter(knowledge_base=knowledge_base).order_by("pk").values_list("pk", flat=True)
        )
    else:
        ids = stale_article_ids(knowledge_base=knowledge_base)
    return _index_pipelined(ids, batch_size=batch_size, on_progress=on_progress, before_batch=before_batch)


def index_sync_job_create(*, knowledge_base: KnowledgeBase, full: bool = False, actor=None) -> IndexSyncJob:
    """Record a re-sync request (the work row). Starting it is articles.jobs.index_sync_start's part,
    which enqueues in the same transaction; a row nobody enqueued is picked up by the sweeper."""
    return IndexSyncJob.objects.create(knowledge_base=knowledge_base, full=full, requested_by=actor)


def index_sync_job_run(*, job_id: int) -> IndexSyncJob:
    """Claim a queued job (one conditional update) and run it, reporting progress (and so a heartbeat)
    after every batch. A finished job, or one another live worker holds, is left alone (idempotent);
    one whose worker died (no heartbeat within CELERY_TASK_TIME_LIMIT) is taken over and restarted."""
    from kbreview.celery import claim_expiry

    now = timezone.now()
    taken = (
        IndexSyncJob.objects.filter(pk=job_id)
        .filter(Q(status=SyncStatus.QUEUED) | Q(status=SyncStatus.RUNNING, heartbeat_at__lt=claim_expiry()))
        .update(status=SyncStatus.RUNNING, started_at=now, heartbeat_at=now, done=0, attempts=F("attempts") + 1)
    )
    job = IndexSyncJob.objects.select_related("knowledge_base").get(pk=job_id)
    if not taken:
        return job

    def report(done: int, total: int) -> None:
        IndexSyncJob.objects.filter(pk=job_id, started_at=now).update(done=done, total=total, heartbeat_at=timezone.now())

    try:
        # Between batches of a long re-sync a worker yields to replies, as before each task.
        index_resync(knowledge_base=job.knowledge_base, full=job.full, on_progress=report,
                     before_batch=yield_to_foreground)
    except Exception as exc:
        IndexSyncJob.objects.filter(pk=job_id, started_at=now).update(
            status=SyncStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], finished_at=timezone.now()
        )
        raise
    IndexSyncJob.objects.filter(pk=job_id, started_at=now).update(status=SyncStatus.DONE, finished_at=timezone.now())
    job.refresh_from_db()
    return job
