"""Sources and drift review in the console: roles, create with field errors, sync and upload with progress,
confirm gone, and each drift decision through the views."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from articles.models import Article, DriftItem, DriftStatus, PageState, Source, SourceSync
from articles.services import article_edit
from articles.sources import source_create
from tests.articles.conftest import run_sync
from tests.conflicts.console_support import make_user
from tests.factories import article_audit
from tests.support.page_server import html_page, page_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def ops(kb):
    kb.allow_private_fetch = True  # the test pages live on loopback
    kb.save()
    return make_user("otto", kb, "ops")


def test_viewer_sees_sources_but_cannot_add_or_sync(client, kb, viewer):
    source = source_create(knowledge_base=kb, name="Uploads", kind="upload")
    client.force_login(viewer)
    html = client.get(reverse("source_list")).content.decode()
    assert "Uploads" in html and "Add a source" not in html
    assert client.post(reverse("source_list"), {"name": "X", "kind": "upload"}).status_code == 403
    assert client.post(reverse("source_sync_start", args=[source.pk]), **HTMX).status_code == 403
    assert "Sync now" not in client.get(reverse("source_detail", args=[source.pk])).content.decode()


def test_ops_adds_a_source_and_bad_input_names_the_field(client, kb, ops):
    client.force_login(ops)
    response = client.post(reverse("source_list"), {"name": "Help", "kind": "urls", "location": "ftp://x.example/a",
                                                    "schedule": "daily", "gone_policy": "confirm"}, **HTMX)
    assert response.status_code == 400
    html = response.content.decode()
    assert "line 1: &#x27;ftp://x.example/a&#x27; is not an http(s) address" in html and "<html" not in html
    assert not Source.objects.exists()
    response = client.post(reverse("source_list"), {"name": "Help", "kind": "urls", "location": "https://help.example.com/a",
                                                    "schedule": "daily", "gone_policy": "confirm"}, **HTMX)
    source = Source.objects.get(knowledge_base=kb, name="Help")
    assert response.status_code == 200 and response["HX-Redirect"] == reverse("source_detail", args=[source.pk])
    assert source.schedule == "daily" and source.created_by == ops


def test_another_knowledge_base_source_is_404(client, kb, other_kb, ops):
    foreign = source_create(knowledge_base=other_kb, name="Theirs", kind="upload")
    client.force_login(ops)
    assert client.get(reverse("source_detail", args=[foreign.pk])).status_code == 404
    assert client.post(reverse("source_sync_start", args=[foreign.pk])).status_code == 404


def test_sync_button_runs_the_sync_and_progress_stops_polling_when_done(
    client, kb, ops, page_server, django_capture_on_commit_callbacks
):
    page_server.set("/hours.html", html_page("Opening hours", "The shop opens at nine every weekday."))
    page_server.set("/gone.html", b"", status=410)
    source = source_create(knowledge_base=kb, name="Site", kind="urls",
                           location=f"{page_server.url('/hours.html')}\n{page_server.url('/gone.html')}")
    client.force_login(ops)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("source_sync_start", args=[source.pk]), **HTMX)
    assert response.status_code == 200 and 'hx-trigger="every 1s"' in response.content.decode()  # queued: polls
    sync = SourceSync.objects.get(source=source)
    html = client.get(reverse("source_sync_progress", args=[sync.pk]), **HTMX).content.decode()
    assert "Done" in html and "2 / 2 pages" in html and "every 1s" not in html
    assert "1 new" in html and "HTTP 410" in html
    listing = client.get(reverse("source_list")).content.decode()
    assert "1 new, 0 changed, 0 held, 1 error" in listing


def test_upload_of_several_files_stores_them_and_syncs(client, kb, ops, django_capture_on_commit_callbacks):
    source = source_create(knowledge_base=kb, name="Uploads", kind="upload")
    client.force_login(ops)
    files = [
        SimpleUploadedFile("hours.md", b"# Opening hours\n\nThe office opens at nine.\n"),
        SimpleUploadedFile("returns.html", html_page("Returns", "Returns are accepted within 30 days.")),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("source_upload", args=[source.pk]), {"files": files}, **HTMX)
    assert response.status_code == 200
    assert sorted(source.files.values_list("name", flat=True)) == ["hours.md", "returns.html"]
    assert sorted(Article.objects.filter(knowledge_base=kb).values_list("external_ref", flat=True)) == ["hours", "returns"]

    bad = client.post(reverse("source_upload", args=[source.pk]), {"files": [SimpleUploadedFile("x.exe", b"MZ")]}, **HTMX)
    assert bad.status_code == 400 and "x.exe: unsupported file type" in bad.content.decode()


def test_confirm_gone_takes_the_article_out(client, kb, ops, page_server):
    page_server.set("/a.html", html_page("Alpha", "Alpha ferries leave at noon."))
    page_server.set("/b.html", html_page("Beta", "Beta ferries leave at dawn."))
    source = source_create(knowledge_base=kb, name="Site", kind="urls",
                           location=f"{page_server.url('/a.html')}\n{page_server.url('/b.html')}")
    run_sync(source)
    Source.objects.filter(pk=source.pk).update(location=page_server.url("/a.html"))
    source.refresh_from_db()
    run_sync(source)
    page = source.pages.get(state=PageState.GONE_PENDING)
    client.force_login(ops)
    assert "Confirm gone" in client.get(reverse("source_detail", args=[source.pk])).content.decode()
    response = client.post(reverse("source_page_confirm_gone", args=[page.pk]))
    assert response.status_code == 302
    page.refresh_from_db()
    assert page.state == PageState.GONE and page.article.status == "deleted"


@pytest.fixture
def drift(kb, ops, reviewer, page_server):
    page_server.set("/fares.html", html_page("Fares", "An adult ticket costs 18 euro."))
    source = source_create(knowledge_base=kb, name="Website", kind="urls", location=page_server.url("/fares.html"))
    run_sync(source)
    article = Article.objects.get(knowledge_base=kb, external_ref="fares")
    article_edit(article=article, expected_version_id=article.current_version_id, body="An adult ticket costs 22 euro.",
                 reason="resolve", actor=reviewer)
    page_server.set("/fares.html", html_page("Fares", "An adult ticket costs 18 euro. Children travel free."))
    run_sync(source)
    return DriftItem.objects.get(article=article)


def test_drift_item_shows_both_texts_the_diff_and_the_reintroduced_statement(client, drift, viewer):
    client.force_login(viewer)
    assert "Fares" in client.get(reverse("drift_list")).content.decode()
    html = client.get(reverse("drift_detail", args=[drift.pk])).content.decode()
    assert "An adult ticket costs 22 euro." in html and "Children travel free." in html
    assert "<del>" in html and "<ins>" in html
    assert "brings back what a conflict fix removed" in html and "<li>An adult ticket costs 18 euro.</li>" in html
    assert "Take the source text" not in html  # a viewer cannot decide
    assert client.post(reverse("drift_decide", args=[drift.pk, "take"])).status_code == 403


@pytest.mark.parametrize("decision, status, body", [
    ("keep", DriftStatus.KEPT, "An adult ticket costs 22 euro."),
    ("take", DriftStatus.TAKEN, "An adult ticket costs 18 euro. Children travel free."),
    ("merge", DriftStatus.MERGED, "An adult ticket costs 22 euro. Children travel free."),
])
def test_each_decision_through_the_view(client, drift, reviewer, decision, status, body):
    client.force_login(reviewer)
    data = {"title": "Fares", "body": body} if decision == "merge" else {}
    response = client.post(reverse("drift_decide", args=[drift.pk, decision]), data)
    assert response.status_code == 302
    drift.refresh_from_db()
    assert drift.status == status and drift.decided_by == reviewer
    assert Article.objects.get(pk=drift.article_id).current_version.body == body
    assert article_audit(drift.article_id).filter(action=f"article.drift_{status}", actor=reviewer).exists()
    again = client.post(reverse("drift_decide", args=[drift.pk, decision]), data)
    assert again.status_code == 409 and "already decided" in again.content.decode()


def test_ops_change_a_sources_schedule_and_bad_input_names_the_field(client, kb, ops, viewer):
    source = source_create(knowledge_base=kb, name="Help", kind="urls", location="https://help.example.com/a")
    client.force_login(ops)
    data = {"name": "Help centre", "location": "https://help.example.com/a\nhttps://help.example.com/b",
            "schedule": "hourly", "gone_policy": "immediate"}
    assert client.post(reverse("source_detail", args=[source.pk]), data).status_code == 302
    source.refresh_from_db()
    assert (source.name, source.schedule, source.gone_policy, source.kind) == ("Help centre", "hourly", "immediate", "urls")
    assert source.location.endswith("/b")
    bad = client.post(reverse("source_detail", args=[source.pk]), {**data, "location": "file:///etc/passwd"})
    assert bad.status_code == 400 and "is not an http(s) address" in bad.content.decode()
    client.force_login(viewer)
    assert client.post(reverse("source_detail", args=[source.pk]), data).status_code == 403


def _upload(client, source, files, capture):
    with capture(execute=True):
        return client.post(reverse("source_upload", args=[source.pk]),
                           {"files": [SimpleUploadedFile(name, body) for name, body in files]}, **HTMX)


def test_an_uploaded_file_can_be_removed_and_later_syncs_stop_reporting_its_errors(
    client, kb, ops, django_capture_on_commit_callbacks
):
    """Issue 29 (5): a broken JSON, a bad CSV and a garbage PDF kept "3 errors" in every later sync, with no
    way to remove an uploaded file; a replaced file's error goes with it too."""
    from articles.models import AuditEvent

    source = source_create(knowledge_base=kb, name="Uploads", kind="upload")
    client.force_login(ops)
    _upload(client, source, [("broken.json", b"{not json"), ("bad.csv", b"\x00\x01,\x02"),
                             ("garbage.pdf", b"%PDF-1.4 nonsense"), ("hours.md", b"# Hours\n\nWe open at nine.\n")],
            django_capture_on_commit_callbacks)
    assert SourceSync.objects.filter(source=source).latest("created_at").counts["errors"] == 3
    page = client.get(reverse("source_detail", args=[source.pk])).content.decode()
    assert page.count("failed at the last sync") == 3 and page.count(">Remove</button>") == 4
    # Replace one broken file by a good one of the same name, remove the two others.
    _upload(client, source, [("broken.json", b'[{"ref": "faq-fixed", "title": "Fixed", "body": "Fixed text."}]')],
            django_capture_on_commit_callbacks)
    for name in ("bad.csv", "garbage.pdf"):
        stored = source.files.get(name=name)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(reverse("source_file_remove", args=[source.pk, stored.pk]), follow=True)
        assert response.status_code == 200 and f"Removed {name}" in response.content.decode()
    assert sorted(source.files.values_list("name", flat=True)) == ["broken.json", "hours.md"]
    latest = SourceSync.objects.filter(source=source).latest("created_at")
    assert latest.status == "done" and latest.counts.get("errors", 0) == 0 and latest.page_errors == []
    assert "faq-fixed" in Article.objects.filter(knowledge_base=kb).values_list("external_ref", flat=True)
    assert AuditEvent.objects.filter(action="source.changed", detail__removed_file__name="bad.csv", actor=ops).exists()
    # Viewers and reviewers cannot remove files.
    hours = source.files.get(name="hours.md")
    client.force_login(make_user("vera2", kb, "reviewer"))
    assert client.post(reverse("source_file_remove", args=[source.pk, hours.pk])).status_code == 403
    assert source.files.filter(pk=hours.pk).exists()


def test_recent_syncs_follow_a_sync_and_a_sync_url_shows_that_sync(client, kb, ops, django_capture_on_commit_callbacks):
    """Issue 29 (5): "Recent syncs" stayed "None yet" until a reload; /sources/syncs/<n>/ showed the latest sync."""
    source = source_create(knowledge_base=kb, name="Uploads", kind="upload")
    client.force_login(ops)
    response = _upload(client, source, [("hours.md", b"# Hours\n\nWe open at nine.\n")], django_capture_on_commit_callbacks)
    first = SourceSync.objects.filter(source=source).latest("created_at")
    html = response.content.decode()
    assert 'id="recent-syncs" hx-swap-oob="true"' in html and f'data-sync="{first.pk}"' in html
    _upload(client, source, [("hours.md", b"# Hours\n\nWe open at ten.\n")], django_capture_on_commit_callbacks)
    second = SourceSync.objects.filter(source=source).latest("created_at")
    assert second.pk != first.pk
    page = client.get(reverse("source_sync_progress", args=[first.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and f"Sync #{first.pk} " in html and f"Sync #{second.pk} " not in html
    assert "An earlier sync of this source" in html


def test_the_location_placeholder_follows_the_kind(client, kb, ops):
    """Issue 29 (5): the upload kind's location showed URLs as its example."""
    upload = source_create(knowledge_base=kb, name="Uploads", kind="upload")
    client.force_login(ops)
    html = client.get(reverse("source_detail", args=[upload.pk])).content.decode()
    assert "Leave empty: upload the files" in html.split('name="location"')[1].split(">")[0]
    listing = client.get(reverse("source_list")).content.decode()
    assert "data-placeholders" in listing and "sitemap.xml" in listing


def test_drift_review_renders_markdown_instead_of_showing_its_marks(client, drift, viewer):
    """Issue 29 (11): a heading's '#' and emphasis marks are rendered, not shown raw, in both texts and the diff."""
    DriftItem.objects.filter(pk=drift.pk).update(source_body="# Fares\n\nAn adult ticket costs **18 euro**.")
    client.force_login(viewer)
    html = client.get(reverse("drift_detail", args=[drift.pk])).content.decode()
    assert "<h1>Fares</h1>" in html and "<strong>18 euro</strong>" in html
    assert "# Fares" not in html and "**" not in html
