"""Triage in a real browser (Playwright driving Debian's chromium against a live server): a conflict
that comes back after a restore (with the confirmation step before it), keyboard triage, a refused bulk
dismiss that keeps its selection, and the console at phone width. Screenshots in test-artifacts/.
"""
import os
import re

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import pytest  # noqa: E402

from articles.models import ArticleVersion  # noqa: E402
from articles.services import knowledge_base_get_or_create  # noqa: E402
from conflicts.models import Conflict  # noqa: E402
from conflicts.services import ArticleFix, conflict_resolve  # noqa: E402
from conflicts.services.turns import RetrievedRef, turn_report  # noqa: E402
from tests.conflicts.console_support import make_conflict, make_user  # noqa: E402
from tests.e2e.test_console_browser import ARTIFACTS, browser, sign_in  # noqa: E402,F401 - the shared fixture
from tests.factories import make_article  # noqa: E402

pytestmark = pytest.mark.e2e


@pytest.fixture
def fares(transactional_db, settings):
    """Two fare articles that disagree, one turn that retrieved both, detected inline by the claim detector."""
    settings.DETECTION_DISPATCH = "inline"
    settings.DETECTION_DETECTOR = "claims"
    kb = knowledge_base_get_or_create(slug="acme", name="Acme Ferries")
    old = make_article(kb, "fares-2025", "A standard car ticket costs €25 one way.", title="Car fares")
    new = make_article(kb, "fares-2026", "A standard car ticket costs €32 one way.", title="Fares for cars")
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
    expect(page.locator(f'.coming-back li[data-conflict="{conflict.pk}"]')).to_contain_text("Car fares")
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


@pytest.fixture
def three_open(transactional_db):
    """Three open conflicts among four fare articles, ordered by impact (cited replies first)."""
    kb = knowledge_base_get_or_create(slug="acme", name="Acme Ferries")
    articles = [make_article(kb, f"fares-{i}", f"A car ticket costs €{20 + i} one way.", title=f"Car fares {2020 + i}",
                             index=False) for i in range(4)]
    conflicts = [make_conflict(kb, articles[i], articles[i + 1], times_cited=3 - i,
                               explanation=f"fares-{i} and fares-{i + 1} disagree on the car fare.") for i in range(3)]
    return kb, conflicts


def test_keyboard_triage_through_three_conflicts(browser, live_server, three_open):  # noqa: F811
    from playwright.sync_api import expect

    kb, conflicts = three_open
    make_user("rita", kb, "reviewer")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, live_server.url, "rita")
    page.keyboard.press("?")
    expect(page.locator("dialog#shortcuts")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "triage-shortcuts-help.png"))
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    expect(page.locator("tr.conflict-row.kb-selected")).to_have_attribute("data-conflict", str(conflicts[0].pk))
    page.keyboard.press("j")
    page.keyboard.press("k")
    expect(page.locator("tr.conflict-row.kb-selected")).to_have_attribute("data-conflict", str(conflicts[0].pk))
    page.keyboard.press("o")
    for i, conflict in enumerate(conflicts):
        page.wait_for_url(re.compile(rf"/conflicts/{conflict.pk}/$"))
        page.keyboard.press("d")
        expect(page.locator(".dismiss-form textarea")).to_be_focused()
        page.keyboard.type(f"Intentional, checked by keyboard ({i + 1}).")
        page.keyboard.press("Control+Enter")
        page.wait_for_url(re.compile(rf"/conflicts/{conflict.pk}/\?done=dismissed$"))
        expect(page.locator(".just-done")).to_contain_text("Dismissed")
        if i == 0:
            page.screenshot(path=str(ARTIFACTS / "triage-after-dismiss.png"), full_page=True)
        if i < 2:
            page.keyboard.press("j")  # the next open conflict, by impact
    expect(page.locator(".next-conflict")).to_have_text("No other open conflict.")
    assert [c.status for c in Conflict.objects.filter(pk__in=[c.pk for c in conflicts]).order_by("-times_cited")] == [
        "dismissed"] * 3


def test_bulk_dismiss_keeps_its_selection_after_a_validation_error(browser, live_server, three_open):  # noqa: F811
    from playwright.sync_api import expect

    kb, conflicts = three_open
    make_user("rita", kb, "reviewer")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, live_server.url, "rita")
    for conflict in conflicts[:2]:
        page.check(f'input[name="ids"][value="{conflict.pk}"]')
    page.click("#bulk button.danger")
    expect(page.locator(".notice.error")).to_contain_text("reason is required")
    for conflict in conflicts[:2]:
        expect(page.locator(f'input[name="ids"][value="{conflict.pk}"]')).to_be_checked()
    expect(page.locator(f'input[name="ids"][value="{conflicts[2].pk}"]')).not_to_be_checked()
    page.screenshot(path=str(ARTIFACTS / "triage-bulk-error-kept.png"), full_page=True)
    page.fill("#bulk input[name=reason]", "Regional fares, on purpose.")
    page.click("#bulk button.danger")
    expect(page.locator(".notice")).to_contain_text("Dismissed 2 conflict(s).")
    expect(page.locator("tr.conflict-row")).to_have_count(1)


def test_phone_width_has_no_horizontal_scroll(browser, live_server, three_open):  # noqa: F811
    from playwright.sync_api import expect

    kb, conflicts = three_open
    make_user("rita", kb, "reviewer")
    page = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True)
    sign_in(page, live_server.url, "rita")
    for name, path in (("queue", "/conflicts/"), ("conflict", f"/conflicts/{conflicts[0].pk}/"), ("dashboard", "/"),
                       ("articles", "/articles/")):
        page.goto(live_server.url + path)
        expect(page.locator("main h1").first).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} scrolls sideways: {width}px wide"
        page.screenshot(path=str(ARTIFACTS / f"phone-{name}.png"), full_page=True)


def test_assign_comment_and_snooze_a_conflict(browser, live_server, three_open):  # noqa: F811
    from playwright.sync_api import expect

    kb, conflicts = three_open
    make_user("rita", kb, "reviewer")
    make_user("otto", kb, "ops")
    conflict = conflicts[0]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, live_server.url, "rita", next_path=f"/conflicts/{conflict.pk}/")
    page.select_option(".assign-form select[name=assignee]", label="otto")
    page.click(".assign-form button[type=submit]")
    expect(page.locator(".triage .assignee")).to_have_text("otto")
    page.fill(".comment-form textarea", "Otto owns the fares page; checking with him.")
    page.click(".comment-form button[type=submit]")
    expect(page.locator(".timeline .activity-commented")).to_contain_text("Otto owns the fares page")
    page.fill(".snooze-form input[name=more_sightings]", "3")
    page.click(".snooze-form button[type=submit]")
    expect(page.locator(".triage .badge.snoozed")).to_contain_text("until seen")
    expect(page.locator(".timeline")).to_contain_text("Snoozed until seen 3 more times")
    page.screenshot(path=str(ARTIFACTS / "triage-assign-comment-snooze.png"), full_page=True)

    # Gone from Open, listed under "snoozed only"; "assigned to me" is empty for rita.
    page.goto(live_server.url + "/conflicts/")
    expect(page.locator(f'tr[data-conflict="{conflict.pk}"]')).to_have_count(0)
    page.check("input[name=snoozed]")
    page.click(".filters button[type=submit]")
    expect(page.locator(f'tr[data-conflict="{conflict.pk}"] .badge.snoozed')).to_be_visible()
    expect(page.locator(f'tr[data-conflict="{conflict.pk}"] .assignee')).to_contain_text("otto")
    page.screenshot(path=str(ARTIFACTS / "triage-snoozed-queue.png"), full_page=True)
    kinds = list(conflict.activity.order_by("pk").values_list("kind", flat=True))
    assert kinds == ["opened", "assigned", "commented", "snoozed"]
