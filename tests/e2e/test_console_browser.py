"""The review loop in a real browser: Playwright driving Debian's chromium against a live server.

A reviewer signs in, switches tabs, opens a conflict found in the demo data, fixes it by editing one
article, sees it under Resolved, and retrieval returns the new text and never the old; another
conflict is dismissed with a reason. A viewer sees no action buttons and a forced post is refused.
Screenshots of the queue and a conflict land in test-artifacts/.
"""
import datetime as dt
import os
import re
from pathlib import Path
from urllib.parse import urlencode

# Playwright's sync API runs an event loop in this thread; the ORM calls below are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import pytest  # noqa: E402

from articles.demo import DEMO_NAME, DEMO_SLUG, demo_paths, demo_questions  # noqa: E402
from articles.selectors import search  # noqa: E402
from articles.services import articles_import_paths, knowledge_base_get_or_create  # noqa: E402
from conflicts.models import Conflict  # noqa: E402
from conflicts.services.turns import RetrievedRef, turn_report  # noqa: E402
from tests.conflicts.console_support import PASSWORD, make_conflict, make_user  # noqa: E402
from tests.factories import make_article  # noqa: E402

pytestmark = pytest.mark.e2e
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
FIX_MARKER = "Checked by the review team."
DATE_MIN = dt.date.min


@pytest.fixture
def browser():
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        yield browser
        browser.close()
        # While Playwright's loop runs, Django keeps this thread's connections per context rather than per
        # thread: close the ones opened meanwhile, or the test database cannot be dropped at the end.
        from django.db import connections

        connections.close_all()


@pytest.fixture
def demo(transactional_db, settings):
    """The demo knowledge base, with the demo questions reported as turns whose replies cite the top article."""
    settings.DETECTION_DISPATCH = "inline"
    settings.DETECTION_DETECTOR = "claims"
    kb = knowledge_base_get_or_create(slug=DEMO_SLUG, name=DEMO_NAME)
    articles_import_paths(knowledge_base=kb, paths=demo_paths())
    for question in demo_questions():
        refs = question.get("expect_refs") or []
        if len(refs) < 2:
            continue
        turn_report(
            knowledge_base=kb,
            external_id=question["id"],
            question=question["question"],
            retrieved=[RetrievedRef(ref=ref, rank=i + 1) for i, ref in enumerate(refs)],
            reply=f"Here is what I found. [[{refs[0]}]]",
        )
    return kb


def sign_in(page, base_url: str, username: str, next_path: str = "/conflicts/"):
    page.goto(base_url + next_path)
    assert "/accounts/login/" in page.url  # anonymous: sent to sign in
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(re.escape(next_path) + "$"))


def open_pairs(kb) -> list[Conflict]:
    return list(
        Conflict.objects.filter(knowledge_base=kb, status="open")
        .select_related("article_low__current_version", "article_high__current_version")
        .order_by("-times_cited", "-impact", "-last_seen", "-pk")
    )


def test_reviewer_fixes_a_demo_conflict_and_retrieval_shows_the_fix(browser, live_server, demo):
    from playwright.sync_api import expect

    kb = demo
    make_user("rita", kb, "reviewer")
    conflicts = open_pairs(kb)
    assert len(conflicts) >= 2, "the demo questions should surface at least two conflicts"
    # The planted monthly-pass price conflict when the detector finds it, else the most impactful one.
    monthly = next((c for c in conflicts if {c.article_low.external_ref, c.article_high.external_ref}
                    == {"faq-commuter-monthly", "faq-legacy-monthly-pass"}), conflicts[0])
    other = next(c for c in conflicts if c.pk != monthly.pk)
    # Fix the side with the older content date: its passage becomes the other side's, plus a marker.
    low, high = monthly.article_low, monthly.article_high
    side = "low" if (low.current_version.updated_at or DATE_MIN) <= (high.current_version.updated_at or DATE_MIN) else "high"
    fixed, kept = (low, high) if side == "low" else (high, low)
    old_passage = monthly.snippet_for(fixed.pk)
    assert old_passage and old_passage in fixed.current_version.body
    new_body = fixed.current_version.body.replace(old_passage, f"{monthly.snippet_for(kept.pk)} {FIX_MARKER}")
    question = monthly.occurrences.select_related("turn").first().turn.question

    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    sign_in(page, live_server.url, "rita")

    # The queue, ordered by impact; tabs switch without a full reload and the URL follows.
    expect(page.locator(".tab.active")).to_contain_text("Open")
    rows = page.locator("tr.conflict-row")
    assert rows.count() == len(conflicts)
    assert rows.first.get_attribute("data-conflict") == str(conflicts[0].pk)
    expect(page.locator(f'tr[data-conflict="{monthly.pk}"] .cited-count')).to_contain_text("cited in")
    page.screenshot(path=str(ARTIFACTS / "console-queue.png"), full_page=True)
    page.evaluate("window.__noReload = true")
    page.click('a.tab[data-status="processed"]')
    page.wait_for_url(re.compile(r"status=processed"))
    expect(page.locator(".tab.active")).to_contain_text("Resolved")
    expect(page.locator("td.empty")).to_be_visible()
    assert page.evaluate("window.__noReload") is True  # swapped by HTMX, not reloaded
    page.go_back()
    expect(page.locator(f'tr[data-conflict="{monthly.pk}"]')).to_be_visible()

    # Open the conflict: both articles, the highlighted passages, the replies it affected.
    page.click(f'tr[data-conflict="{monthly.pk}"] a.pair')
    page.wait_for_url(re.compile(rf"/conflicts/{monthly.pk}/$"))
    expect(page.locator(".side mark").first).to_be_visible()
    expect(page.locator(".occurrence").first).to_contain_text("Reply sent")
    page.screenshot(path=str(ARTIFACTS / "console-conflict-detail.png"), full_page=True)

    # Fix one article; the preview shows the change as a diff before anything is saved.
    page.locator(f'textarea[name="{side}_body"]').fill(new_body)
    expect(page.locator(f"#preview-{side} ins").first).to_be_visible()
    expect(page.locator(f'input[name="{side}_action"][value="edit"]')).to_be_checked()
    page.fill("#id_note", "The older article still had last year's figure.")
    page.click("#resolve-form button[type=submit]")
    expect(page.locator("h1 .status")).to_have_text("Resolved")

    # Listed under Resolved now.
    page.click("text=Conflicts")
    page.click('a.tab[data-status="processed"]')
    expect(page.locator(f'tr[data-conflict="{monthly.pk}"]')).to_be_visible()

    # Retrieval right after: the new text is found, the old passage is gone.
    hits = search(knowledge_base=kb, question=question)
    texts = " ".join(chunk for hit in hits for chunk in hit.chunks)
    assert FIX_MARKER in texts
    assert old_passage not in texts
    page.goto(live_server.url + "/articles/?" + urlencode({"mode": "retrieval", "q": question}))
    expect(page.locator("ol.hits")).to_contain_text(FIX_MARKER)

    # Dismiss another conflict with a reason.
    page.goto(f"{live_server.url}/conflicts/{other.pk}/")
    assert page.locator(".dismiss-form textarea[name=reason][required]").count() == 1  # the server checks too
    page.fill(".dismiss-form textarea[name=reason]", "Both are right in their own context.")
    page.click(".dismiss-form button[type=submit]")
    expect(page.locator("h1 .status")).to_have_text("Dismissed")
    page.goto(live_server.url + "/conflicts/?status=dismissed")
    expect(page.locator(f'tr[data-conflict="{other.pk}"]')).to_be_visible()
    other.refresh_from_db()
    monthly.refresh_from_db()
    assert other.status == "dismissed" and monthly.status == "processed"


def test_viewer_sees_no_actions_and_a_forced_post_is_refused(browser, live_server, transactional_db):
    kb = knowledge_base_get_or_create(slug="acme", name="Acme Ferries")
    a = make_article(kb, "fare-a", "A car ticket costs €25.", title="Car fares 2025", index=False)
    b = make_article(kb, "fare-b", "A car ticket costs €32.", title="Car fares 2026", index=False)
    conflict = make_conflict(kb, a, b, snippets=("A car ticket costs €25.", "A car ticket costs €32."))
    make_user("vic", kb, "viewer")
    page = browser.new_page()
    sign_in(page, live_server.url, "vic")
    from playwright.sync_api import expect

    expect(page.locator(f'tr[data-conflict="{conflict.pk}"]')).to_be_visible()
    assert page.locator('input[name="ids"]').count() == 0
    assert page.locator("text=Dismiss selected").count() == 0
    page.click(f'tr[data-conflict="{conflict.pk}"] a.pair')
    expect(page.locator(".side mark").first).to_be_visible()
    assert page.locator("#resolve-form").count() == 0 and page.locator(".dismiss-form").count() == 0
    assert page.locator("form[action*='/conflicts/'] button").count() == 0
    # Forge the post a reviewer's button would send, with a valid CSRF token: the server refuses it.
    status = page.evaluate(
        """async (url) => {
            const token = document.cookie.split('; ').find(c => c.startsWith('csrftoken=')).split('=')[1];
            const response = await fetch(url, {method: 'POST', headers: {'X-CSRFToken': token, 'HX-Request': 'true',
                'Content-Type': 'application/x-www-form-urlencoded'}, body: 'reason=forced'});
            return response.status;
        }""",
        f"/conflicts/{conflict.pk}/dismiss/",
    )
    assert status == 403
    conflict.refresh_from_db()
    assert conflict.status == "open"
