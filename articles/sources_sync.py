"""A source sync, as a worker runs it under its lease: list the source's documents (page URLs, a sitemap's
pages, a folder's files, uploaded files), fetch or read each, and apply it (articles/sources_apply.py).

Unchanged documents cost a conditional request (304) or a hash comparison; only documents whose text
changed become new article versions, and only those articles are re-indexed, once, at the end.
"""
from __future__ import annotations

import logging
import tempfile
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone
from lxml import etree

from articles.indexing import articles_reindex
from articles.ingest import IngestError, ParsedArticle, parse_path, slugify
from articles.ingest import _supported_files as supported_files_in
from articles.models import (
    WEB_SOURCE_KINDS,
    KnowledgeBase,
    PageState,
    Source,
    SourceKind,
    SourcePage,
    SourceSync,
    SyncStatus,
)
from articles.services import parsed_article_check
from articles.sources import SourceFolderRefused, source_folder_checked
from articles.sources_apply import PageError, SyncRun, apply_document, document_pages_keep, mark_gone
from articles.sources_fetch import Fetcher, FetchError, FetchLimits
from kbreview.leases import lease_claim, lease_finish

logger = logging.getLogger(__name__)

MAX_CHILD_SITEMAPS = 50


def fetch_limits(*, knowledge_base: KnowledgeBase) -> FetchLimits:
    return FetchLimits(
        max_bytes=settings.SOURCE_FETCH_MAX_BYTES,
        timeout_s=settings.SOURCE_FETCH_TIMEOUT_S,
        user_agent=settings.SOURCE_FETCH_USER_AGENT,
        allow_private=knowledge_base.allow_private_fetch,
    )


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
    run = SyncRun(sync=sync, source=source, pages={p.key: p for p in source.pages.select_related("synced_version")})
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
        mark_gone(run)
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


def _finish(run: SyncRun, *, status: str, error: str = "") -> None:
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
            raise PageError(exc.message) from None
    return replace(
        parsed,
        source_uri=url if parsed.source_uri == path.name else parsed.source_uri,
        location=url,
    )


def _sync_web(run: SyncRun, fetcher: Fetcher) -> None:
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
                apply_document(
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
        raise PageError(f"{relative}: {exc.message}" + (f" ({exc.location})" if exc.location else "")) from None
    return [(_file_key(relative, item.ref), item) for item in parsed]


def _sync_files(run: SyncRun) -> None:
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
                document_pages_keep(run, relative)
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

        apply_document(run, key=relative, raw=raw, etag="", last_modified="", parse=parse, file_pages=True)
        run.done += 1
        run.progress()
