"""Each screen's main action that issue 29 found broken or misleading, walked in a real browser (Playwright
driving Debian's chromium against a live server) as the role allowed to do it: after the action the page has
one navigation bar, the success message and the changed data; as a viewer the action is absent and a forced
post (valid CSRF token) is refused with 403. The README's test section lists the screens covered."""
import os
import re

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop runs in this thread

import pytest  # noqa: E402

from articles.models import Article, ArticleStatus, ArticleVersion  # noqa: E402
from articles.services import knowledge_base_get_or_create  # noqa: E402
from articles.sources import source_create  # noqa: E402
from conflicts.models import Conflict  # noqa: E402
from conflicts.services import conflict_dismiss  # noqa: E402
from tests.conflicts.console_support import make_conflict, make_user  # noqa: E402
from tests.e2e.test_console_browser import ARTIFACTS, browser, sign_in  # noqa: E402,F401  (fixture)
from tests.factories import make_article  # noqa: E402

pytestmark = pytest.mark.e2e


@pytest.fixture
def kb(transactional_db):
    return knowledge_base_get_or_create(slug="acme", name="Acme Ferries")


def one_navigation_bar(page):
    from playwright.sync_api import expect

    expect(page.locator("header.topbar")).to_have_count(1)
    expect(page.locator("header.topbar nav")).to_have_count(1)


def forced_post(page, url: str, body: str = "") -> int:
    """The post a button would send, with the page's valid CSRF token: what a viewer gets for it."""
    return page.evaluate(
        """async ([url, body]) => {
            const token = document.cookie.split('; ').find(c => c.startsWith('csrftoken=')).split('=')[1];
            const response = await fetch(url, {method: 'POST', headers: {'X-CSRFToken': token, 'HX-Request': 'true',
                'Content-Type': 'application/x-www-form-urlencoded'}, body});
            return response.status;
        }""",
        [url, body],
    )


def test_article_page_save_restore_by_get_and_long_title(browser, live_server, kb):  # noqa: F811
    """Articles → an article: "Save as new version" (reviewer), the restore URL opened by GET, a long title."""
    from playwright.sync_api import expect

    article = make_article(kb, "faq-hours", "The office opens at 9:00.", title="Office hours", index=False)
    make_user("rita", kb, "reviewer")
    make_user("vera", kb, "viewer")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, live_server.url, "rita", next_path=f"/articles/{article.pk}/")

    page.fill("#edit-form textarea[name=body]", "The office opens at 8:30 on weekdays.")
    page.click("#edit-form button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Saved as a new version and re-indexed.")
    one_navigation_bar(page)
    expect(page.locator(".card .body.markdown").first).to_contain_text("8:30 on weekdays")
    expect(page.locator("#edit-form")).to_have_count(1)
    expect(page.locator("#edit-form .messages, #edit-form h1")).to_have_count(0)  # nothing nested in the card
    assert Article.objects.get(pk=article.pk).current_version.number == 2

    # A long title: the form says so as you type, and the server names the length; nothing is cut.
    page.fill("#edit-form input[name=title]", "Timetable " * 60)
    expect(page.locator('[data-count-for="id_title"]')).to_contain_text("at most 500 fit")
    page.click("#edit-form button[type=submit]")
    expect(page.locator("#edit-form .error")).to_contain_text("The title is 599 characters long; at most 500 fit.")
    assert Article.objects.get(pk=article.pk).current_version.number == 2

    # The restore URL of v1 opened by GET (a reload, a shared link): back on the article, nothing restored.
    v1 = ArticleVersion.objects.get(article=article, number=1)
    page.goto(f"{live_server.url}/articles/{article.pk}/versions/{v1.pk}/restore/")
    page.wait_for_url(re.compile(rf"/articles/{article.pk}/$"))
    expect(page.locator(".messages")).to_contain_text("Nothing was restored yet")
    one_navigation_bar(page)
    # The restore itself, from the history table.
    page.click(f'form[action$="/versions/{v1.pk}/restore/"] button[type=submit]')
    expect(page.locator(".messages")).to_contain_text("v1 restored as a new version")
    one_navigation_bar(page)
    expect(page.locator(".card .body.markdown").first).to_contain_text("opens at 9:00")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "main-actions-article.png"), full_page=True)
    page.close()

    viewer = browser.new_page()
    sign_in(viewer, live_server.url, "vera", next_path=f"/articles/{article.pk}/")
    expect(viewer.locator("#edit-form")).to_have_count(0)
    expect(viewer.locator("text=Restore this version")).to_have_count(0)
    current = Article.objects.get(pk=article.pk).current_version_id
    assert forced_post(viewer, f"/articles/{article.pk}/edit/",
                       f"title=X&body=Forced&expected_version_id={current}") == 403
    assert forced_post(viewer, f"/articles/{article.pk}/versions/{v1.pk}/restore/",
                       f"expected_version_id={current}&confirm=1") == 403
    viewer.goto(f"{live_server.url}/articles/{article.pk}/versions/{v1.pk}/restore/")
    expect(viewer.locator(".messages")).to_contain_text("needs the reviewer role")
    assert Article.objects.get(pk=article.pk).current_version.number == 3
    viewer.close()


def test_deleted_article_restore_by_get_shows_the_confirm_page(browser, live_server, kb):  # noqa: F811
    """Restoring a deleted article whose deletion resolved a conflict: the confirm page, also by GET."""
    from playwright.sync_api import expect

    old = make_article(kb, "fares-old", "A car ticket costs €25.", title="Old fares", index=False)
    new = make_article(kb, "fares-new", "A car ticket costs €32.", title="New fares", index=False)
    conflict = make_conflict(kb, old, new)
    from conflicts.services import ArticleFix, conflict_resolve

    conflict_resolve(conflict=conflict, fixes=[ArticleFix(article_id=old.pk, expected_version_id=old.current_version_id,
                                                          action="delete")])
    make_user("rita", kb, "reviewer")
    page = browser.new_page()
    sign_in(page, live_server.url, "rita", next_path=f"/articles/{old.pk}/")
    # Opened by GET (a shared link): the confirm page (its first claim check loads the detector: be patient).
    page.goto(f"{live_server.url}/articles/{old.pk}/restore/", timeout=180_000)
    expect(page.locator(".confirm-restore h2")).to_contain_text("1 reviewed conflict will come back to Open")
    one_navigation_bar(page)
    page.click(".confirm-restore button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Restored and re-indexed.")
    assert Article.objects.get(pk=old.pk).status == ArticleStatus.ACTIVE
    page.close()


def test_queue_search_and_the_reviewed_tabs(browser, live_server, kb):  # noqa: F811
    """Conflicts: search with an exclusion, an over-long search, and the Resolved / Dismissed tabs saying
    who, when and why (a viewer reads them too; dismissing is refused)."""
    from playwright.sync_api import expect

    islander = make_article(kb, "faq-islander", "Residents pay less.", title="Islander discount", index=False)
    other = make_article(kb, "faq-other", "Residents pay the standard fare.", title="Fares", index=False)
    third = make_article(kb, "faq-third", "Everyone pays the same.", title="Islander cards", index=False)
    fourth = make_article(kb, "faq-fourth", "Cards are free.", title="Cards", index=False)
    with_terms = make_conflict(kb, islander, other, explanation="The discounts differ.",
                               snippets=("see the terms of the card", "no discount"))
    plain = make_conflict(kb, third, other, explanation="The fares differ.")
    done = make_conflict(kb, third, fourth, explanation="Card prices differ.")
    rita = make_user("rita", kb, "reviewer")
    make_user("vera", kb, "viewer")
    conflict_dismiss(conflict=done, actor=rita, reason="Different cards, both right.")

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, live_server.url, "vera")
    page.fill('form.filters input[name="q"]', "islander -terms")
    page.click("form.filters button[type=submit]")
    expect(page.locator(f'tr[data-conflict="{with_terms.pk}"]')).to_have_count(0)
    expect(page.locator(f'tr[data-conflict="{plain.pk}"]')).to_be_visible()
    one_navigation_bar(page)

    page.goto(f"{live_server.url}/conflicts/?q=" + "fares+" * 120)
    expect(page.locator(".notice.error")).to_contain_text("at most 200 are searched")
    expect(page.locator("tr.conflict-row")).to_have_count(0)
    one_navigation_bar(page)

    page.goto(f"{live_server.url}/conflicts/")
    page.click('a.tab[data-status="dismissed"]')
    row = page.locator(f'tr[data-conflict="{done.pk}"]')
    expect(row.locator(".reviewer")).to_have_text("rita")
    expect(row.locator(".review-note")).to_contain_text("Different cards, both right.")
    expect(row.locator("time.reviewed-at")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "main-actions-dismissed-tab.png"), full_page=True)
    assert forced_post(page, f"/conflicts/{plain.pk}/dismiss/", "reason=forced") == 403
    assert Conflict.objects.get(pk=plain.pk).status == "open"
    page.close()


def test_upload_source_remove_a_file_and_recent_syncs_follow(browser, live_server, kb, tmp_path):  # noqa: F811
    """Sources → an uploaded-files source (ops): upload with a broken file, remove it; the next syncs report
    no error, "Recent syncs" follows each sync without a reload. A viewer has no Remove button and is refused."""
    from playwright.sync_api import expect

    make_user("otto", kb, "ops")
    make_user("vera", kb, "viewer")
    source = source_create(knowledge_base=kb, name="Policies", kind="upload")
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "hours.md").write_text("# Hours\n\nThe office opens at nine.\n")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, live_server.url, "otto", next_path=f"/sources/{source.pk}/")
    expect(page.locator("#recent-syncs td.empty")).to_have_text("None yet.")
    page.set_input_files("#upload-files", [str(tmp_path / "broken.json"), str(tmp_path / "hours.md")])
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector(".sync-job[data-status=done]", timeout=60_000)
    expect(page.locator(".sync-counts")).to_contain_text("1 error")
    expect(page.locator("#recent-syncs tr[data-sync]")).to_have_count(1)  # no reload needed

    page.reload()
    expect(page.locator('.source-files li[data-file="broken.json"] .error')).to_contain_text("failed at the last sync")
    page.click('.source-files li[data-file="broken.json"] button[type=submit]')
    expect(page.locator(".messages")).to_contain_text("Removed broken.json")
    one_navigation_bar(page)
    expect(page.locator('.source-files li[data-file="broken.json"]')).to_have_count(0)
    page.wait_for_selector(".sync-job[data-status=done]", timeout=60_000)
    expect(page.locator(".sync-counts")).to_contain_text("0 errors")
    assert list(source.files.values_list("name", flat=True)) == ["hours.md"]
    page.close()

    viewer = browser.new_page()
    sign_in(viewer, live_server.url, "vera", next_path=f"/sources/{source.pk}/")
    expect(viewer.locator(".source-files button")).to_have_count(0)
    hours = source.files.get(name="hours.md")
    assert forced_post(viewer, f"/sources/{source.pk}/files/{hours.pk}/remove/") == 403
    assert source.files.filter(pk=hours.pk).exists()
    viewer.close()
