"""Source sync against a real HTTP server on loopback that changes its pages between syncs."""
import datetime as dt
import json
import time

import pytest
from django.utils import timezone

from articles.models import (
    Article,
    ArticleStatus,
    ArticleVersion,
    AuditAction,
    Chunk,
    PageState,
    SourcePage,
    SourceSync,
    SyncStatus,
)
from articles.selectors import search
from articles.sources import (
    SourceInputError,
    source_create,
    source_files_upload,
    source_page_gone_confirm,
    source_sync_request,
    sources_sync_due,
)
from articles.sources_sync import source_sync_run
from kbreview.jobs import jobs_sweep
from tests.articles.conftest import run_sync
from tests.factories import article_audit
from tests.support.page_server import html_page

PAGES = {
    "/help/returns.html": ("Returns", "You can return any item within 30 days of delivery for a full refund."),
    "/help/shipping.html": ("Shipping", "Standard shipping takes three to five working days within the country."),
    "/help/warranty.html": ("Warranty", "Every kettle carries a two-year warranty against manufacturing faults."),
}


def serve(server, pages=PAGES, **options):
    for path, (title, body) in pages.items():
        server.set(path, html_page(title, body), **options)


def url_source(kb, server, paths=PAGES, **kwargs):
    return source_create(
        knowledge_base=kb, name=kwargs.pop("name", "Help centre"), kind="urls",
        location="\n".join(server.url(p) for p in paths), **kwargs,
    )


def body_of(kb, ref):
    return Article.objects.get(knowledge_base=kb, external_ref=ref).current_version.body


@pytest.mark.django_db
def test_first_sync_creates_and_indexes_then_only_changed_pages_are_reversioned(loopback_kb, page_server):
    kb = loopback_kb
    serve(page_server)
    source = url_source(kb, page_server)

    first = run_sync(source)
    assert first.status == SyncStatus.DONE, first.error
    assert first.counts["created"] == 3 and first.counts["errors"] == 0
    assert first.done == first.total == 3
    refs = sorted(Article.objects.filter(knowledge_base=kb).values_list("external_ref", flat=True))
    assert refs == ["help-returns", "help-shipping", "help-warranty"]
    assert Chunk.objects.filter(knowledge_base=kb).values("article").distinct().count() == 3
    assert "30 days" in body_of(kb, "help-returns")

    # Nothing changed: every page answers 304 to its ETag, nothing is written.
    mark = len(page_server.requests)
    second = run_sync(source)
    assert second.counts["not_modified"] == 3 and second.counts["changed"] == 0
    assert page_server.statuses(since=mark) == [304, 304, 304]
    assert all('If-None-Match' in headers for path, _, headers in page_server.requests[mark:] if path != "/robots.txt")
    assert ArticleVersion.objects.filter(article__knowledge_base=kb).count() == 3

    # One page changes: one new version, and only that article's chunks are rewritten.
    chunk_ids = {a: set(Chunk.objects.filter(article__external_ref=a).values_list("pk", flat=True)) for a in refs}
    page_server.set("/help/shipping.html", html_page("Shipping", "Standard shipping now takes two working days."))
    third = run_sync(source)
    assert (third.counts["changed"], third.counts["not_modified"]) == (1, 2)
    shipping = Article.objects.get(knowledge_base=kb, external_ref="help-shipping")
    assert shipping.current_version.number == 2 and shipping.indexed_version_id == shipping.current_version_id
    for ref in refs:
        now_ids = set(Chunk.objects.filter(article__external_ref=ref).values_list("pk", flat=True))
        assert (now_ids == chunk_ids[ref]) == (ref != "help-shipping")
    assert search(knowledge_base=kb, question="how long does shipping take")[0].chunk_text.startswith(
        "Standard shipping now takes two"
    )
    assert source.pages.get(key=page_server.url("/help/shipping.html")).synced_version_id == shipping.current_version_id


@pytest.mark.django_db
def test_last_modified_is_honoured_when_there_is_no_etag(loopback_kb, page_server):
    serve(page_server, etag=False, modified_at=time.time() - 3600)
    source = url_source(loopback_kb, page_server)
    run_sync(source)
    mark = len(page_server.requests)
    again = run_sync(source)
    assert again.counts["not_modified"] == 3
    sent = [headers for path, _, headers in page_server.requests[mark:] if path != "/robots.txt"]
    assert all("If-Modified-Since" in h and "If-None-Match" not in h for h in sent)
    page_server.set("/help/returns.html", html_page("Returns", "Returns are accepted within 60 days."), etag=False)
    assert run_sync(source).counts["changed"] == 1
    assert "60 days" in body_of(loopback_kb, "help-returns")


@pytest.mark.django_db
def test_same_bytes_without_validators_write_nothing(loopback_kb, page_server):
    serve(page_server, etag=False, last_modified=False)
    source = url_source(loopback_kb, page_server)
    run_sync(source)
    again = run_sync(source)
    assert (again.counts["fetched"], again.counts["unchanged"], again.counts["changed"]) == (3, 3, 0)
    assert ArticleVersion.objects.filter(article__knowledge_base=loopback_kb).count() == 3


@pytest.mark.django_db
def test_every_error_case_gives_its_message_and_writes_nothing(loopback_kb, page_server, settings):
    settings.SOURCE_FETCH_TIMEOUT_S = 0.5
    settings.SOURCE_FETCH_MAX_BYTES = 20_000
    good = html_page("Opening hours", "The shop opens at nine every weekday morning.")
    page_server.set("/ok.html", good)
    page_server.set("/moved.html", b"", status=301, location="/elsewhere.html")
    page_server.set("/slow.html", good, delay_s=2.0)
    page_server.set("/missing.html", b"gone", status=404)
    page_server.set("/broken.html", b"oops", status=503)
    page_server.set("/manual.pdf", b"%PDF-1.4 ...", content_type="application/pdf")
    page_server.set("/huge.html", html_page("Huge", "word " * 10_000))
    page_server.set("/private/secret.html", good)
    page_server.set("/robots.txt", "User-agent: *\nDisallow: /private/\n", content_type="text/plain")
    page_server.set("/menu.html", b"<html><head><title>Menu</title></head><body><nav><a href='/'>Home</a></nav></body></html>")
    paths = ["/ok.html", "/moved.html", "/slow.html", "/missing.html", "/broken.html", "/manual.pdf", "/huge.html",
             "/private/secret.html", "/menu.html"]
    source = url_source(loopback_kb, page_server, paths=paths)

    sync = run_sync(source)
    assert sync.status == SyncStatus.DONE
    errors = {entry["key"].removeprefix(page_server.base_url): entry["error"] for entry in sync.page_errors}
    assert set(errors) == set(paths) - {"/ok.html"}
    assert errors["/moved.html"].startswith(f"redirected (HTTP 301) to {page_server.url('/elsewhere.html')}")
    assert "no answer within 0.5 s" in errors["/slow.html"]
    assert errors["/missing.html"].startswith("HTTP 404") and "client error" in errors["/missing.html"]
    assert errors["/broken.html"].startswith("HTTP 503") and "server error" in errors["/broken.html"]
    assert "Content-Type 'application/pdf'" in errors["/manual.pdf"]
    assert errors["/huge.html"].startswith("too large")
    assert "robots.txt" in errors["/private/secret.html"] and "does not allow" in errors["/private/secret.html"]
    assert "no main content" in errors["/menu.html"]
    assert sync.counts["errors"] == 8 and sync.counts["created"] == 1
    # Only the good page was written.
    assert list(Article.objects.filter(knowledge_base=loopback_kb).values_list("external_ref", flat=True)) == ["ok"]
    assert list(SourcePage.objects.filter(source=source).values_list("key", flat=True)) == [page_server.url("/ok.html")]


@pytest.mark.django_db
def test_private_addresses_are_refused_unless_the_knowledge_base_allows_them(kb, page_server):
    serve(page_server)
    source = url_source(kb, page_server)  # kb does not allow private addresses
    sync = run_sync(source)
    assert sync.counts["errors"] == 3 and sync.counts["created"] == 0
    assert all("loopback address (127.0.0.1)" in entry["error"] for entry in sync.page_errors)
    assert all("does not allow requests to private addresses" in entry["error"] for entry in sync.page_errors)
    assert not Article.objects.filter(knowledge_base=kb).exists()
    assert page_server.requests == []  # refused before connecting


@pytest.mark.django_db
def test_source_input_is_validated_with_the_field_named(loopback_kb, tmp_path, settings):
    settings.SOURCE_FOLDER_ROOTS = [tmp_path]
    with pytest.raises(SourceInputError, match=r"location line 2: 'ftp://example.com/a' is not an http\(s\) address"):
        source_create(knowledge_base=loopback_kb, name="Bad", kind="urls",
                      location="https://example.com/a\nftp://example.com/a")
    with pytest.raises(SourceInputError, match="location: no folder"):
        source_create(knowledge_base=loopback_kb, name="Bad", kind="folder", location=str(tmp_path / "nope"))
    with pytest.raises(SourceInputError, match="schedule"):
        source_create(knowledge_base=loopback_kb, name="Bad", kind="urls", location="https://example.com/", schedule="weekly")
    source_create(knowledge_base=loopback_kb, name="Site", kind="sitemap", location="https://example.com/sitemap.xml")
    with pytest.raises(SourceInputError, match="name: .*already has a source called 'Site'"):
        source_create(knowledge_base=loopback_kb, name="Site", kind="urls", location="https://example.com/")


@pytest.mark.django_db
def test_gone_immediately_leaves_retrieval_and_comes_back_when_the_page_returns(loopback_kb, page_server):
    kb = loopback_kb
    serve(page_server)
    source = url_source(kb, page_server, gone_policy="immediate")
    run_sync(source)
    source.location = "\n".join(page_server.url(p) for p in list(PAGES)[:2])
    source.save()

    sync = run_sync(source)
    assert sync.counts["gone"] == 1
    warranty = Article.objects.get(knowledge_base=kb, external_ref="help-warranty")
    assert warranty.status == ArticleStatus.DELETED
    assert source.pages.get(article=warranty).state == PageState.GONE
    assert article_audit(warranty.pk).filter(action=AuditAction.ARTICLE_GONE).exists()
    assert "help-warranty" not in [h.external_ref for h in search(knowledge_base=kb, question="kettle warranty")]

    source.location = "\n".join(page_server.url(p) for p in PAGES)
    source.save()
    back = run_sync(source)
    assert back.counts["back"] == 1
    warranty.refresh_from_db()
    assert warranty.status == ArticleStatus.ACTIVE
    assert search(knowledge_base=kb, question="kettle warranty")[0].external_ref == "help-warranty"


@pytest.mark.django_db
def test_gone_after_confirmation_stays_in_retrieval_until_confirmed(loopback_kb, page_server):
    kb = loopback_kb
    serve(page_server)
    source = url_source(kb, page_server, gone_policy="confirm")
    run_sync(source)
    page_server.remove("/help/warranty.html")
    source.location = "\n".join(page_server.url(p) for p in list(PAGES)[:2])
    source.save()

    assert run_sync(source).counts["gone_pending"] == 1
    page = source.pages.get(key=page_server.url("/help/warranty.html"))
    assert page.state == PageState.GONE_PENDING
    assert search(knowledge_base=kb, question="kettle warranty")[0].external_ref == "help-warranty"

    source_page_gone_confirm(page=page)
    page.refresh_from_db()
    assert page.state == PageState.GONE and page.article.status == ArticleStatus.DELETED
    assert "help-warranty" not in [h.external_ref for h in search(knowledge_base=kb, question="kettle warranty")]
    with pytest.raises(SourceInputError, match="not awaiting confirmation"):
        source_page_gone_confirm(page=page)


@pytest.mark.django_db
def test_a_failing_page_is_not_taken_for_a_removed_one(loopback_kb, page_server):
    serve(page_server)
    source = url_source(loopback_kb, page_server, gone_policy="immediate")
    run_sync(source)
    page_server.set("/help/returns.html", b"down", status=500)
    sync = run_sync(source)
    assert sync.counts["errors"] == 1 and sync.counts["gone"] == 0
    assert Article.objects.get(knowledge_base=loopback_kb, external_ref="help-returns").status == ArticleStatus.ACTIVE


@pytest.mark.django_db
def test_sitemap_source_and_an_unreadable_sitemap_changes_nothing(loopback_kb, page_server):
    serve(page_server)
    locs = "".join(f"<url><loc>{page_server.url(p)}</loc></url>" for p in PAGES)
    sitemap = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
    page_server.set("/sitemap.xml", sitemap, content_type="application/xml")
    source = source_create(knowledge_base=loopback_kb, name="Site", kind="sitemap", location=page_server.url("/sitemap.xml"),
                           gone_policy="immediate")
    assert run_sync(source).counts["created"] == 3

    page_server.set("/sitemap.xml", b"down", status=502)
    failed = run_sync(source)
    assert failed.status == SyncStatus.FAILED
    assert failed.error.startswith(f"sitemap {page_server.url('/sitemap.xml')}: HTTP 502")
    assert not Article.objects.filter(knowledge_base=loopback_kb, status=ArticleStatus.DELETED).exists()


@pytest.mark.django_db
def test_folder_source_versions_only_changed_files(loopback_kb, tmp_path, settings):
    settings.SOURCE_FOLDER_ROOTS = [tmp_path]
    folder = tmp_path / "kb"
    folder.mkdir()
    faq = [{"ref": "faq-pets", "question": "Pets?", "answer": "Dogs travel free on the outer deck."},
           {"ref": "faq-bikes", "question": "Bikes?", "answer": "Bicycles cost four euro each way."}]
    (folder / "faq.json").write_text(json.dumps(faq))
    (folder / "hours.md").write_text("# Opening hours\n\nThe office opens at nine.\n")
    source = source_create(knowledge_base=loopback_kb, name="Shared drive", kind="folder", location=str(folder))
    first = run_sync(source)
    assert first.counts["created"] == 3, first.page_errors
    assert sorted(source.pages.values_list("key", flat=True)) == ["faq.json#faq-bikes", "faq.json#faq-pets", "hours.md#hours"]

    assert run_sync(source).counts["unchanged"] == 3
    faq[1]["answer"] = "Bicycles now cost five euro each way."
    (folder / "faq.json").write_text(json.dumps(faq))
    third = run_sync(source)
    assert (third.counts["changed"], third.counts["unchanged"]) == (1, 1 + 1)
    assert ArticleVersion.objects.filter(article__knowledge_base=loopback_kb).count() == 4


@pytest.mark.django_db
def test_uploaded_files_are_stored_and_synced(loopback_kb):
    source = source_create(knowledge_base=loopback_kb, name="Uploads", kind="upload")
    with pytest.raises(SourceInputError, match=r"files: notes.exe: unsupported file type"):
        source_files_upload(source=source, files=[("notes.exe", b"MZ")])
    source_files_upload(source=source, files=[
        ("hours.md", b"# Opening hours\n\nThe office opens at nine.\n"),
        ("returns.html", html_page("Returns", "Returns are accepted within 30 days.")),
    ])
    sync = run_sync(source, trigger="upload")
    assert sync.counts["created"] == 2 and sync.total == 2
    assert "nine" in body_of(loopback_kb, "hours")


@pytest.mark.django_db
def test_one_sync_at_a_time_and_the_schedule_starts_due_sources(loopback_kb, page_server):
    serve(page_server)
    hourly = url_source(loopback_kb, page_server, name="Hourly", schedule="hourly")
    url_source(loopback_kb, page_server, name="Manual", schedule="off")
    first = source_sync_request(source=hourly)
    assert source_sync_request(source=hourly).pk == first.pk  # still queued: the same sync

    # The schedule fails nothing itself, however old the sync: a long sync of a live worker stays its own.
    long_ago = timezone.now() - dt.timedelta(days=1)
    SourceSync.objects.filter(pk=first.pk).update(created_at=long_ago)
    assert [s.pk for s in sources_sync_due()] == [first.pk]
    first.refresh_from_db()
    assert first.status == SyncStatus.QUEUED
    # A sync whose worker died on its last attempt is the one sweeper's to fail; then the due source gets a
    # fresh one.
    SourceSync.objects.filter(pk=first.pk).update(status=SyncStatus.RUNNING, claimed_at=long_ago, heartbeat_at=long_ago,
                                                  attempts=SourceSync.lease_max_attempts())
    assert jobs_sweep()["failed"] == 1
    first.refresh_from_db()
    assert first.status == SyncStatus.FAILED and "worker stopped" in first.error
    started = sources_sync_due()
    assert [s.source.name for s in started] == ["Hourly"] and started[0].trigger == "schedule"
    assert started[0].pk != first.pk

    run_sync(hourly)  # runs the queued scheduled sync
    assert sources_sync_due() == []  # synced a moment ago: not due
    later = timezone.now() + dt.timedelta(hours=1, minutes=1)
    assert [s.source.name for s in sources_sync_due(now=later)] == ["Hourly"]


@pytest.mark.django_db
def test_a_redelivered_sync_leaves_a_running_one_to_its_worker(loopback_kb, page_server):
    serve(page_server)
    source = url_source(loopback_kb, page_server)
    sync = source_sync_request(source=source)
    now = timezone.now()  # a worker holds it under its lease
    SourceSync.objects.filter(pk=sync.pk).update(status=SyncStatus.RUNNING, started_at=now, claimed_at=now,
                                                 heartbeat_at=now, attempts=1)
    assert source_sync_run(sync_id=sync.pk).status == SyncStatus.RUNNING
    assert page_server.requests == [] and not Article.objects.filter(knowledge_base=loopback_kb).exists()
    # Silent for longer than the time limit: its worker died, so this run does the work.
    SourceSync.objects.filter(pk=sync.pk).update(heartbeat_at=timezone.now() - dt.timedelta(hours=2))
    assert source_sync_run(sync_id=sync.pk).status == SyncStatus.DONE
    assert Article.objects.filter(knowledge_base=loopback_kb).count() == 3
