"""Triage in a real browser (Playwright driving Debian's chromium against a live server): a conflict
that comes back after a restore, with the confirmation step before it. Screenshots in test-artifacts/.
"""
import os

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import pytest  # noqa: E402

from articles.models import ArticleVersion  # noqa: E402
from articles.services import knowledge_base_get_or_create  # noqa: E402
from conflicts.models import Conflict  # noqa: E402
from conflicts.services import ArticleFix, conflict_resolve  # noqa: E402
from conflicts.services.turns import RetrievedRef, turn_report  # noqa: E402
from tests.conflicts.console_support import make_user  # noqa: E402
from tests.e2e.test_console_browser import ARTIFACTS, browser, sign_in  # noqa: E402,F401 - the shared fixture
from tests.factories import make_article  # noqa: E402

pytestmark = pytest.mark.e2e


@pytest.fixture
def fares(transactional_db, settings):
    """Two fare articles that disagree, one turn that retrieved both, detected inline by the claim detector."""
    settings.DETECTION_DISPATCH = "inline"
    settings.DETECTION_DETECTOR = "claims"
    kb = knowledge_base_get_or_create(slug="acme", name="Acme Ferries")
    old = make_article(kb, "fares-2025", "A standard car ticket costs €25 one way.", title="Car fares 2025")
    new = make_article(kb, "fares-2026", "A standard car ticket costs €32 one way.", title="Car fares 2026")
    ask(kb, old, new, "turn-1")
    return kb, old, new


def ask(kb, first, second, external_id):
    turn, _ = turn_report(
        knowledge_base=kb, external_id=external_id, question="How much is a car ticket?",
        retrieved=[RetrievedRef(ref=first.external_ref, rank=1), RetrievedRef(ref=second.external_ref, rank=2)],
        reply=f"A car ticket costs €25. [[{first.external_ref}]]",
    )
    return turn


def test_restoring_an_old_version_asks_first_and_the_conflict_comes_back_to_open(browser, live_server, fares):  # noqa: F811
    from playwright.sync_api import expect

    kb, old, new = fares
    rita = make_user("rita", kb, "reviewer")
    conflict = Conflict.objects.get(knowledge_base=kb)
    conflict_resolve(conflict=conflict, actor=rita, note="Old fare corrected.", fixes=[
        ArticleFix(article_id=old.pk, expected_version_id=old.current_version_id, action="edit",
                   body="A standard car ticket costs €32 one way.")])
    v1 = ArticleVersion.objects.get(article=old, number=1)

    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, live_server.url, "rita")
    expect(page.locator(f'tr[data-conflict="{conflict.pk}"]')).to_have_count(0)  # resolved: not in Open

    # Restore v1 from the history: the console says first which reviewed conflict will come back.
    page.goto(f"{live_server.url}/articles/{old.pk}/")
    page.click(f'form[action$="/versions/{v1.pk}/restore/"] button[type=submit]')
    expect(page.locator(".confirm-restore h2")).to_contain_text("1 reviewed conflict will come back to Open")
    expect(page.locator(f'.coming-back li[data-conflict="{conflict.pk}"]')).to_contain_text("Car fares 2025")
    page.screenshot(path=str(ARTIFACTS / "triage-restore-confirm.png"), full_page=True)
    assert old.versions.count() == 2  # nothing restored before confirming
    page.click(".confirm-restore button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("v1 restored")

    # The next turn retrieving both finds the old price again: back in Open, marked regressed.
    ask(kb, old, new, "turn-after-restore")
    page.goto(f"{live_server.url}/conflicts/")
    row = page.locator(f'tr[data-conflict="{conflict.pk}"]')
    expect(row.locator(".badge.regressed")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "triage-regressed-queue.png"), full_page=True)
    row.locator("a.pair").click()
    expect(page.locator("h1 .status")).to_have_text("Open")
    expect(page.locator(".timeline")).to_contain_text("turn-after-restore")
    expect(page.locator(".timeline")).to_contain_text("v3 (reviewed v2)")
    page.goto(f"{live_server.url}/")
    expect(page.locator("#regressed-count")).to_have_text("1")
