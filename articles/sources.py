"""Sources and their sync: every write about where articles live. Each state change writes its audit row.

A sync walks a source's documents (page URLs, a sitemap's pages, a folder's files, uploaded files).
Unchanged documents cost a conditional request (304) or a hash comparison; only documents whose text
changed become new article versions, and only those articles are re-indexed. Each document is applied
in its own transaction, so a failing page leaves nothing of itself written and the others still land.
A change to an article staff edited in the console since the last sync is held as a drift item
(articles/sources_drift.py) instead of overwriting their text.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import logging
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone
from lxml import etree

from articles.audit import audit_event_record
from articles.indexing import articles_reindex
from articles.ingest import SUPPORTED_SUFFIXES, IngestError, ParsedArticle, parse_path, slugify
from articles.ingest import _supported_files as supported_files_in
from articles.models import (
    ACTIVE_SYNC_STATUSES,
    CONSOLE_REASONS,
    WEB_SOURCE_KINDS,
    Article,
    ArticleStatus,
    ArticleVersion,
    AuditAction,
    DriftStatus,
    GonePolicy,
    KnowledgeBase,
    PageState,
    Source,
    SourceFile,
    SourceKind,
    SourcePage,
    SourceSchedule,
    SourceSync,
    SyncStatus,
    SyncTrigger,
)
from articles.services import (
    ArticleInputError,
    article_delete,
    article_locked_by_ref,
    article_restore,
    article_upsert,
    content_hash,
    parsed_article_check,
)
from articles.sources_drift import drift_hold
from articles.sources_fetch import Fetcher, FetchError, FetchLimits
from kbreview.jobs import enqueue
from kbreview.leases import lease_claim, lease_finish, lease_heartbeat

logger = logging.getLogger(__name__)

SCHEDULE_INTERVALS = {SourceSchedule.HOURLY: dt.timedelta(hours=1), SourceSchedule.DAILY: dt.timedelta(days=1)}
MAX_CHILD_SITEMAPS = 50
PROGRESS_EVERY_S = 0.3
COUNT_KEYS = (
    "created", "changed", "unchanged", "not_modified", "held", "back", "gone", "gone_pending", "errors", "fetched",
)


class SourceInputError(ValueError):
    """A source that cannot be saved as given; the message names the field."""


class _PageError(Exception):
    """One page that cannot be applied; its message goes in the sync report."""


def fetch_limits(*, knowledge_base: KnowledgeBase) -> FetchLimits:
    return FetchLimits(
        max_bytes=settings.SOURCE_FETCH_MAX_BYTES,
        timeout_s=settings.SOURCE_FETCH_TIMEOUT_S,
        user_agent=settings.SOURCE_FETCH_USER_AGENT,
        allow_private=knowledge_base.allow_private_fetch,
    )


# --- sources -----------------------------------------------------------------------------------


_url_validator = URLValidator(schemes=["http", "https"])


def _check_urls(lines: list[str], *, field_name: str) -> None:
    for number, line in enumerate(lines, start=1):
        try:
            _url_validator(line)
        except ValidationError:
            raise SourceInputError(f"{field_name} line {number}: {line!r} is not an http(s) address") from None


def _clean_location(*, kind: str, location: str) -> str:
    lines = [line.strip() for line in location.replace("\r\n", "\n").split("\n") if line.strip()]
    if kind == SourceKind.URLS:
        if not lines:
            raise SourceInputError("location: list at least one page URL, one per line")
        if len(lines) > settings.SOURCE_MAX_PAGES:
            raise SourceInputError(f"location: {len(lines)} URLs; the limit is {settings.SOURCE_MAX_PAGES}")
        _check_urls(lines, field_name="location")
        return "\n".join(dict.fromkeys(lines))  # duplicates dropped, order kept
    if kind == SourceKind.SITEMAP:
        if len(lines) != 1:
            raise SourceInputError("location: give the sitemap's URL (one line)")
        _check_urls(lines, field_name="location")
        return lines[0]
    if kind == SourceKind.FOLDER:
        if len(lines) != 1:
            raise SourceInputError("location: give one folder path on the server")
        folder = Path(lines[0])
        if not folder.is_absolute():
            raise SourceInputError(f"location: {lines[0]!r} is not an absolute path")
        return str(folder)
    if lines:
        raise SourceInputError("location: uploaded-file sources have no location; upload files instead")
    return ""


class SourceFolderRefused(SourceInputError):
    """A folder outside every allowed root, or one another knowledge base reads: refused and audited."""


def _overlaps(one: Path, other: Path) -> bool:
    return one == other or one.is_relative_to(other) or other.is_relative_to(one)


def source_folder_checked(*, knowledge_base: KnowledgeBase, location: str, exclude_id: int | None = None) -> Path:
    """The folder a folder source may read, resolved (symlinks and '..' followed), or SourceFolderRefused
    naming why. Allowed: an existing folder inside one of SOURCE_FOLDER_ROOTS that no folder source of
    another knowledge base reads, contains or sits inside. Checked when a source is saved and again at
    every sync, so a symlink swapped in later is caught too."""
    roots = [Path(root).resolve() for root in settings.SOURCE_FOLDER_ROOTS]
    if not roots:
        raise SourceFolderRefused(
            "location: folder sources are switched off on this server (no SOURCE_FOLDER_ROOTS configured); "
            "upload the files instead"
        )
    folder = Path(location).resolve()
    if not any(folder.is_relative_to(root) for root in roots):
        allowed = ", ".join(str(root) for root in roots)
        raise SourceFolderRefused(f"location: {location!r} is outside the folders this server allows ({allowed})")
    if not folder.is_dir():
        raise SourceFolderRefused(f"location: no folder at {location!r} on the server")
    others = (
        Source.objects.filter(kind=SourceKind.FOLDER).exclude(knowledge_base=knowledge_base).exclude(pk=exclude_id)
        .values_list("location", flat=True)
    )
    for other in others:
        if _overlaps(folder, Path(other).resolve()):
            raise SourceFolderRefused(f"location: {location!r} is (or overlaps) a folder another knowledge base reads")
    return folder


def _source_fields(
    *, knowledge_base: KnowledgeBase, name: str, kind: str, location: str, schedule: str, gone_policy: str,
    exclude_id: int | None = None, actor=None,
) -> dict:
    """Checked and normalised fields of a source; a SourceInputError names the field that is wrong."""
    name = " ".join(name.split())
    if not name:
        raise SourceInputError("name: a source needs a name")
    if kind not in SourceKind.values:
        raise SourceInputError(f"kind: {kind!r} is not one of {', '.join(SourceKind.values)}")
    if schedule not in SourceSchedule.values:
        raise SourceInputError(f"schedule: {schedule!r} is not one of {', '.join(SourceSchedule.values)}")
    if gone_policy not in GonePolicy.values:
        raise SourceInputError(f"gone_policy: {gone_policy!r} is not one of {', '.join(GonePolicy.values)}")
    if kind == SourceKind.UPLOAD and schedule != SourceSchedule.OFF:
        raise SourceInputError("schedule: uploaded files change only when uploaded; leave the schedule off")
    location = _clean_location(kind=kind, location=location)
    if kind == SourceKind.FOLDER:
        try:
            source_folder_checked(knowledge_base=knowledge_base, location=location, exclude_id=exclude_id)
        except SourceFolderRefused as exc:
            # Recorded before refusing: a refused attempt at another folder is worth knowing about (the views
            # call this outside a transaction, so the row stays).
            audit_event_record(action=AuditAction.SOURCE_REFUSED, target=knowledge_base,
                               knowledge_base=knowledge_base, actor=actor, location=location[:500], reason=str(exc))
            raise
    if Source.objects.filter(knowledge_base=knowledge_base, name=name).exclude(pk=exclude_id).exists():
        raise SourceInputError(f"name: this knowledge base already has a source called {name!r}")
    return {"name": name, "kind": kind, "location": location, "schedule": schedule, "gone_policy": gone_policy}


def source_create(
    *,
    knowledge_base: KnowledgeBase,
    name: str,
    kind: str,
    location: str = "",
    schedule: str = SourceSchedule.OFF,
    gone_policy: str = GonePolicy.CONFIRM,
    actor=None,
) -> Source:
    fields = _source_fields(knowledge_base=knowledge_base, name=name, kind=kind, location=location, schedule=schedule,
                            gone_policy=gone_policy, actor=actor)
    with transaction.atomic():
        source = Source.objects.create(knowledge_base=knowledge_base, created_by=actor, **fields)
        audit_event_record(action=AuditAction.SOURCE_CREATED, target=source, knowledge_base=knowledge_base,
                           actor=actor, **fields)
    return source


def source_update(
    *, source: Source, name: str, location: str, schedule: str, gone_policy: str, actor=None
) -> Source:
    """Change a source's settings (not its kind). Pages it no longer lists are handled by the next sync."""
    fields = _source_fields(knowledge_base=source.knowledge_base, name=name, kind=source.kind, location=location,
                            schedule=schedule, gone_policy=gone_policy, exclude_id=source.pk, actor=actor)
    before = {name: getattr(source, name) for name in fields}
    with transaction.atomic():
        Source.objects.filter(pk=source.pk).update(**fields)
        changed = {name: [before[name], value] for name, value in fields.items() if before[name] != value}
        if changed:
            audit_event_record(action=AuditAction.SOURCE_CHANGED, target=source, knowledge_base=source.knowledge_base,
                               actor=actor, changed=changed)
    source.refresh_from_db()
    return source


def source_files_upload(*, source: Source, files: list[tuple[str, bytes]], actor=None) -> list[SourceFile]:
    """Store uploaded files (all or none); a file with the name of an earlier one replaces it."""
    if source.kind != SourceKind.UPLOAD:
        raise SourceInputError(f"files: {source.name} is not an uploaded-files source")
    if not files:
        raise SourceInputError("files: choose at least one file")
    cleaned: list[tuple[str, bytes]] = []
    for raw_name, content in files:
        name = Path(raw_name.replace("\\", "/")).name.strip()
        if not name or name.startswith("."):
            raise SourceInputError(f"files: {raw_name!r} is not a usable file name")
        if Path(name).suffix.lower() not in SUPPORTED_SUFFIXES:
            raise SourceInputError(
                f"files: {name}: unsupported file type (supported: {', '.join(SUPPORTED_SUFFIXES)})"
            )
        if len(content) > settings.SOURCE_UPLOAD_MAX_BYTES:
            raise SourceInputError(
                f"files: {name} is {len(content):,} bytes; the limit is {settings.SOURCE_UPLOAD_MAX_BYTES:,}"
            )
        if not content:
            raise SourceInputError(f"files: {name} is empty")
        cleaned.append((name, content))
    stored = []
    with transaction.atomic():
        for name, content in cleaned:
            stored_file, _ = SourceFile.objects.update_or_create(
                source=source,
                name=name,
                defaults={"content": content, "size": len(content), "sha256": hashlib.sha256(content).hexdigest(),
                          "uploaded_by": actor},
            )
            stored.append(stored_file)
    return stored


def source_file_remove(*, source: Source, file_id: int, actor=None) -> str:
    """Remove an uploaded file (audited); the next sync treats its articles as gone from the source (by the
    source's policy) and no longer reports the file's errors. Returns the file's name."""
    if source.kind != SourceKind.UPLOAD:
        raise SourceInputError(f"files: {source.name} is not an uploaded-files source")
    with transaction.atomic():
        stored = SourceFile.objects.select_for_update().filter(source=source, pk=file_id).only("pk", "name", "size", "sha256").first()
        if stored is None:
            raise SourceInputError("files: no such file in this source (already removed?)")
        name = stored.name
        audit_event_record(action=AuditAction.SOURCE_CHANGED, target=source, knowledge_base=source.knowledge_base,
                           actor=actor, removed_file={"name": name, "size": stored.size, "sha256": stored.sha256})
        stored.delete()
    return name


# --- sync jobs -----------------------------------------------------------------------------------


def source_sync_request(*, source: Source, trigger: str = SyncTrigger.MANUAL, actor=None) -> SourceSync:
    """Record a sync (the work row) and have a worker run it once the transaction commits; a sync already
    queued or running is returned instead. A broker outage leaves the row queued for the sweeper."""
    try:
        with transaction.atomic():
            active = SourceSync.objects.filter(source=source, status__in=ACTIVE_SYNC_STATUSES).first()
            if active is not None:
                return active
            return enqueue(SourceSync(knowledge_base_id=source.knowledge_base_id, source=source, trigger=trigger,
                                      requested_by=actor))
    except IntegrityError:  # another request created one between our check and insert
        return SourceSync.objects.get(source=source, status__in=ACTIVE_SYNC_STATUSES)


def sources_sync_due(*, now: dt.datetime | None = None) -> list[SourceSync]:
    """Start the scheduled syncs that are due, after failing those a dead worker left behind."""
    now = now or timezone.now()
    stale_before = now - dt.timedelta(seconds=2 * settings.SOURCE_SYNC_TIME_LIMIT_S)
    SourceSync.objects.filter(status__in=ACTIVE_SYNC_STATUSES, created_at__lt=stale_before).update(
        status=SyncStatus.FAILED, error="No worker finished this sync in time (the worker may have died).",
        finished_at=now,
    )
    started = []
    for source in Source.objects.exclude(schedule=SourceSchedule.OFF).select_related("last_sync"):
        last = source.last_sync
        if last is not None and last.created_at > now - SCHEDULE_INTERVALS[source.schedule]:
            continue
        started.append(source_sync_request(source=source, trigger=SyncTrigger.SCHEDULE))
    return started


@dataclass
class _Run:
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


def source_sync_run(*, sync_id: int) -> SourceSync:
    """Run a queued sync under its lease (kbreview.leases). A finished one is left alone, and so is one another
    worker holds: a redelivered message (the broker's visibility timeout is shorter than a long sync) while
    the first worker is still at it. One a dead worker left (silent for longer than the sync's time limit)
    is run again (unchanged text writes nothing)."""
    claim = lease_claim(SourceSync, pk=sync_id)
    sync = SourceSync.objects.select_related("source__knowledge_base").get(pk=sync_id)
    if claim is None:
        return sync
    Source.objects.filter(pk=sync.source_id).update(last_sync=sync)
    source = sync.source
    run = _Run(sync=sync, source=source, pages={p.key: p for p in source.pages.select_related("synced_version")})
    fetcher = Fetcher(fetch_limits(knowledge_base=source.knowledge_base))
    try:
        try:
            if source.kind in WEB_SOURCE_KINDS:
                _sync_web(run, fetcher)
            else:
                _sync_files(run)
        except _ListingError as exc:
            _finish(run, status=SyncStatus.FAILED, error=str(exc))
            return SourceSync.objects.get(pk=sync_id)
        SourcePage.objects.filter(pk__in=run.confirmed_ids).update(last_seen_at=timezone.now(), last_error="")
        _mark_gone(run)
        run.progress(force=True)
        run.counts["reindexed_chunks"] = articles_reindex(article_ids=sorted(run.changed_ids))
        _finish(run, status=SyncStatus.DONE)
    except Exception as exc:
        logger.exception("sync %s of source %s failed", sync_id, source.pk)
        _finish(run, status=SyncStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        fetcher.close()
    return SourceSync.objects.get(pk=sync_id)


def _finish(run: _Run, *, status: str, error: str = "") -> None:
    lease_finish(run.sync, status=status, error=error[:2000], done=run.done, counts=run.counts,
                 page_errors=run.page_errors, finished_at=timezone.now())


class _ListingError(Exception):
    """The source's list of documents could not be read: nothing is synced and nothing marked gone."""


# --- web sources -----------------------------------------------------------------------------------


def _sitemap_urls(fetcher: Fetcher, url: str) -> list[str]:
    def locs(document_url: str) -> tuple[str, list[str]]:
        try:
            body = fetcher.document(document_url)
        except FetchError as exc:
            raise _ListingError(f"sitemap {document_url}: {exc}") from None
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
        try:
            root = etree.fromstring(body, parser=parser)
        except etree.XMLSyntaxError as exc:
            raise _ListingError(f"sitemap {document_url}: not valid XML ({exc})") from None
        kind = etree.QName(root).localname
        found = [(element.text or "").strip() for element in root.iter("{*}loc")]
        return kind, [loc for loc in found if loc]

    kind, found = locs(url)
    if kind == "sitemapindex":
        if len(found) > MAX_CHILD_SITEMAPS:
            raise _ListingError(f"sitemap {url}: {len(found)} child sitemaps; at most {MAX_CHILD_SITEMAPS} are read")
        pages: list[str] = []
        for child in found:
            child_kind, child_found = locs(child)
            if child_kind != "urlset":
                raise _ListingError(f"sitemap {child}: expected a <urlset>, found <{child_kind}>")
            pages.extend(child_found)
        found = pages
    elif kind != "urlset":
        raise _ListingError(f"sitemap {url}: expected <urlset> or <sitemapindex>, found <{kind}>")
    return list(dict.fromkeys(found))


def _ref_for_url(url: str) -> str:
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    stem = path.rsplit(".", 1)[0] if path.rsplit("/", 1)[-1].count(".") else path
    return slugify(stem) or slugify(parts.hostname or "") or "page"


def _parse_page(url: str, body: bytes) -> ParsedArticle:
    """The article in a fetched HTML page, parsed exactly as an imported page would be."""
    ref = _ref_for_url(url)
    with tempfile.TemporaryDirectory(prefix="kbreview-page-") as folder:
        path = Path(folder) / f"{ref}.html"
        path.write_bytes(body)
        try:
            (parsed,) = parse_path(path)
        except IngestError as exc:
            raise _PageError(exc.message) from None
    return replace(
        parsed,
        source_uri=url if parsed.source_uri == path.name else parsed.source_uri,
        location=url,
    )


def _sync_web(run: _Run, fetcher: Fetcher) -> None:
    source = run.source
    if source.kind == SourceKind.SITEMAP:
        urls = _sitemap_urls(fetcher, source.location)
    else:
        urls = [line for line in source.location.split("\n") if line.strip()]
    if len(urls) > settings.SOURCE_MAX_PAGES:
        raise _ListingError(f"{len(urls)} pages listed; the limit is {settings.SOURCE_MAX_PAGES} (SOURCE_MAX_PAGES)")
    SourceSync.objects.filter(pk=run.sync.pk).update(total=len(urls))
    for url in urls:
        run.seen_keys.add(url)
        page = run.pages.get(url)
        try:
            fetched = fetcher.page(
                url,
                etag=page.etag if page and page.state == PageState.PRESENT else "",
                last_modified=page.last_modified if page and page.state == PageState.PRESENT else "",
            )
        except FetchError as exc:
            run.error(url, str(exc))
        else:
            if fetched.not_modified and page is None:
                run.error(url, "HTTP 304 (not modified) to a request that was not conditional")
            elif fetched.not_modified:
                run.counts["not_modified"] += 1
                run.confirmed_ids.append(page.pk)
            else:
                run.counts["fetched"] += 1
                _apply_document(
                    run, key=url, raw=fetched.body, etag=fetched.etag, last_modified=fetched.last_modified,
                    parse=lambda body, url=url: [(url, _parse_page(url, body))],
                )
        run.done += 1
        run.progress()


# --- file sources ----------------------------------------------------------------------------------


def _file_key(relative: str, ref: str) -> str:
    return f"{relative}#{ref}"


def _parse_file(relative: str, path: Path) -> list[tuple[str, ParsedArticle]]:
    """A file's articles, checked as `import_kb` checks them (one code path): a file that cannot be
    stored whole is refused whole, with the reason naming it."""
    try:
        parsed = parse_path(path)
        for item in parsed:
            parsed_article_check(item)
    except IngestError as exc:
        raise _PageError(f"{relative}: {exc.message}" + (f" ({exc.location})" if exc.location else "")) from None
    return [(_file_key(relative, item.ref), item) for item in parsed]


def _sync_files(run: _Run) -> None:
    source = run.source
    if source.kind == SourceKind.FOLDER:
        try:
            root = source_folder_checked(knowledge_base=source.knowledge_base, location=source.location,
                                         exclude_id=source.pk)
        except SourceFolderRefused as exc:
            raise _ListingError(str(exc).removeprefix("location: ")) from None
        documents = [(path.relative_to(root).as_posix(), path) for path in supported_files_in(root)]
    else:
        documents = [(stored.name, stored) for stored in source.files.order_by("name")]
    if len(documents) > settings.SOURCE_MAX_PAGES:
        raise _ListingError(f"{len(documents)} files; the limit is {settings.SOURCE_MAX_PAGES} (SOURCE_MAX_PAGES)")
    SourceSync.objects.filter(pk=run.sync.pk).update(total=len(documents))
    for relative, origin in documents:
        if isinstance(origin, Path):
            try:
                raw = origin.read_bytes()
            except OSError as exc:
                run.error(relative, f"cannot read file: {exc.strerror or exc}")
                _keep_document_pages(run, relative)
                run.done += 1
                continue

            def parse(body: bytes, relative=relative, path=origin):
                return _parse_file(relative, path)
        else:
            raw = bytes(origin.content)

            def parse(body: bytes, relative=relative):
                with tempfile.TemporaryDirectory(prefix="kbreview-upload-") as folder:
                    path = Path(folder) / relative
                    path.write_bytes(body)
                    return _parse_file(relative, path)

        _apply_document(run, key=relative, raw=raw, etag="", last_modified="", parse=parse, file_pages=True)
        run.done += 1
        run.progress()


def _document_pages(run: _Run, key: str, *, file_pages: bool) -> list[SourcePage]:
    if not file_pages:
        return [run.pages[key]] if key in run.pages else []
    prefix = key + "#"
    return [page for page_key, page in run.pages.items() if page_key.startswith(prefix)]


def _keep_document_pages(run: _Run, key: str) -> None:
    """A document that failed keeps its pages as they are (an error is not a removal)."""
    for page in _document_pages(run, key, file_pages=True):
        run.seen_keys.add(page.key)


# --- applying one document ---------------------------------------------------------------------------


def _apply_document(run: _Run, *, key: str, raw: bytes, etag: str, last_modified: str, parse, file_pages: bool = False):
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
    except _PageError as exc:
        if file_pages:
            _keep_document_pages(run, key)
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
    except (_PageError, ArticleInputError, DatabaseError) as exc:
        run.pages, run.changed_ids = pages, changed_ids
        if file_pages:
            _keep_document_pages(run, key)
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


def _apply_page(run: _Run, *, key: str, parsed: ParsedArticle, raw_hash: str, etag: str, last_modified: str) -> str:
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
                raise _PageError(f"ref {parsed.ref!r} already comes from source {owner.source.name!r} ({owner.key})")
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


def _mark_gone(run: _Run) -> None:
    """Pages the source no longer lists: gone at once, or awaiting confirmation, by the source's policy."""
    immediate = run.source.gone_policy == GonePolicy.IMMEDIATE
    for key, page in list(run.pages.items()):
        if key in run.seen_keys or page.state != PageState.PRESENT:
            continue
        with transaction.atomic():
            if immediate:
                _page_gone(page=page, actor=None, source_name=run.source.name)
                run.counts["gone"] += 1
            else:
                SourcePage.objects.filter(pk=page.pk).update(state=PageState.GONE_PENDING)
                if page.article_id:
                    audit_event_record(action=AuditAction.ARTICLE_GONE, target=page.article, source=run.source.name,
                                       key=key, awaiting_confirmation=True)
                run.counts["gone_pending"] += 1


def _page_gone(*, page: SourcePage, actor, source_name: str) -> None:
    SourcePage.objects.filter(pk=page.pk).update(state=PageState.GONE)
    if page.article_id:
        audit_event_record(action=AuditAction.ARTICLE_GONE, target=page.article, actor=actor, source=source_name,
                           key=page.key)
        article_delete(article=page.article, actor=actor, note=f"gone from source {source_name}")


def source_page_gone_confirm(*, page: SourcePage, actor=None) -> SourcePage:
    """Ops confirm a page is gone from its source: its article leaves retrieval (restorable)."""
    with transaction.atomic():
        locked = SourcePage.objects.select_for_update(of=("self",)).select_related("source", "article").get(pk=page.pk)
        if locked.state != PageState.GONE_PENDING:
            raise SourceInputError(f"{locked.key} is not awaiting confirmation (it is {locked.get_state_display().lower()})")
        _page_gone(page=locked, actor=actor, source_name=locked.source.name)
    locked.refresh_from_db()
    return locked
