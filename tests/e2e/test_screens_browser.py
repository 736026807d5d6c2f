"""The screens the other browser tests did not walk (issue 29), each main action in a real browser (Playwright
driving Debian's chromium against the live server) as the role allowed to do it, checking the page after it
(one navigation bar, the message saying what was done, the changed data), then as a viewer: the control
absent and a forced post (valid CSRF token) refused with 403. One knowledge base and one signed-in page per
role serve the whole walk, so it stays fast. The README's test section lists the screens covered."""
import os
import re

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop runs in this thread

import pytest  # noqa: E402

from articles.models import DriftItem, Membership  # noqa: E402
from articles.services import knowledge_base_get_or_create  # noqa: E402
from conflicts.models import AnswerSettings, ApiToken, Conflict, ConflictActivity, ResolutionRule  # noqa: E402
from conflicts.services.suggestions import rule_base_ensure  # noqa: E402
from tests.conflicts.console_support import make_conflict, make_user  # noqa: E402
from tests.e2e.test_console_browser import ARTIFACTS, browser, sign_in  # noqa: E402,F401  (fixture)
from tests.e2e.test_main_actions_browser import forced_post, one_navigation_bar  # noqa: E402
from tests.factories import make_article  # noqa: E402

pytestmark = pytest.mark.e2e


@pytest.fixture
def walk(transactional_db, settings):
    settings.IGD_BACKEND, settings.LOCAL_LM_PATH = "local", ""  # the bundled Gemma 3 270M (never loaded here)
    kb = knowledge_base_get_or_create(slug="acme", name="Acme Ferries")
    rule_base_ensure(knowledge_base=kb)
    old = make_article(kb, "fares-old", "# Fares\n\nA car ticket costs €25.", title="Old fares", index=False)
    new = make_article(kb, "fares-new", "A car ticket costs €32.", title="New fares", index=False)
    pets = make_article(kb, "faq-pets", "Dogs travel free.", title="Pets", index=False)
    first = make_conflict(kb, old, new, times_seen=5)
    second = make_conflict(kb, new, pets, times_seen=2, explanation="The pet fares differ.")
    drift = DriftItem.objects.create(knowledge_base=kb, article=pets, console_version=pets.current_version,
                                     source_title="Pets", source_body="## Pets\n\nDogs travel **free** on deck.")
    users = {role: make_user(name, kb, role) for role, name in
             (("reviewer", "rita"), ("ops", "otto"), ("viewer", "vera"))}
    return {"kb": kb, "first": first, "second": second, "drift": drift, "users": users}


def expect_message(page, text):
    from playwright.sync_api import expect

    expect(page.locator(".messages, .notice, .ok, [role=status]").filter(has_text=text).first).to_be_visible()
    one_navigation_bar(page)


def test_every_remaining_screen_walked_by_its_role_and_refused_to_a_viewer(browser, live_server, walk):  # noqa: F811
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    first, second, drift = walk["first"], walk["second"], walk["drift"]
    warnings: list[str] = []

    # --- reviewer: the conflict page's triage, the queue's memory, a failed request, own e-mail, drift review
    rita = browser.new_page(viewport={"width": 1280, "height": 900})
    rita.on("console", lambda message: warnings.append(message.text) if message.type in ("warning", "error") else None)
    sign_in(rita, live_server.url, "rita", next_path=f"/conflicts/{first.pk}/")
    rita.fill("#resolve-form textarea >> nth=0", "A car ticket costs €32 from May.")  # the live preview's request
    expect(rita.locator("#preview-low, #preview-high").filter(has_text="€32 from May").first).to_be_visible()
    rita.select_option(".assign-form select", label="rita")
    rita.click(".assign-form button[type=submit]")
    expect(rita.locator(".triage .assignee")).to_have_text("rita")
    rita.fill(".comment-form textarea", "Checking with the ticket office.")
    rita.click(".comment-form button[type=submit]")
    expect(rita.locator(".timeline")).to_contain_text("Checking with the ticket office.")
    rita.fill(".snooze-form input[name=more_sightings]", "3")
    rita.click(".snooze-form button[type=submit]")
    expect(rita.locator(".just-snoozed")).to_contain_text("Snoozed: it leaves the Open queue")
    one_navigation_bar(rita)
    assert Conflict.objects.get(pk=first.pk).snoozed_until_seen == 8
    assert ConflictActivity.objects.filter(conflict=first, kind__in=["assigned", "commented", "snoozed"]).count() == 3
    rita.click(".just-snoozed a.button")  # the next open conflict
    rita.wait_for_url(re.compile(rf"/conflicts/{second.pk}/$"))
    expect(rita).to_have_title(re.compile(r"^Conflict #\d+: New fares vs Pets · kbreview$"))
    assert not [w for w in warnings if "no matches" in w], warnings  # hx-disabled-elt found what it names

    # The queue keeps its filters and sort when left by the menu and by a conflict's back link.
    rita.goto(f"{live_server.url}/conflicts/?sort=seen&type=price")
    rita.click("header.topbar nav a:text('Conflicts')")
    rita.wait_for_url(re.compile(r"/conflicts/\?.*sort=seen"))
    expect(rita.locator("form.filters select[name=sort]")).to_have_value("seen")
    expect(rita).to_have_title("Conflicts · Open · kbreview")
    rita.click('a.tab[data-status="dismissed"]')  # swapped by htmx: the title follows the tab
    expect(rita).to_have_title("Conflicts · Dismissed · kbreview")

    # A request that fails says so (a toast), never nothing: rita loses her role while the page is open.
    rita.goto(f"{live_server.url}/conflicts/{second.pk}/")
    Membership.objects.filter(user=walk["users"]["reviewer"]).update(role="viewer")
    rita.fill(".comment-form textarea", "Too late.")
    rita.click(".comment-form button[type=submit]")
    expect(rita.locator("#toast")).to_contain_text("You do not have the role this needs.")
    expect(rita.locator(".comment-form button[type=submit]")).to_be_enabled()  # usable again after the failure
    Membership.objects.filter(user=walk["users"]["reviewer"]).update(role="reviewer")

    # Notifications: a member sets their own address (no administrator).
    rita.goto(f"{live_server.url}/notifications/")
    expect(rita.locator("#my-email .error")).to_contain_text("no e-mail address")
    rita.fill("#my-email input[name=email]", "rita@example.com")
    rita.click("#my-email button[type=submit]")
    expect_message(rita, "E-mail address saved: rita@example.com.")
    expect(rita.locator("#my-email .error")).to_have_count(0)
    walk["users"]["reviewer"].refresh_from_db()
    assert walk["users"]["reviewer"].email == "rita@example.com"

    # Drift review: Markdown rendered in both texts, then "Keep the console text".
    rita.goto(f"{live_server.url}/source-changes/{drift.pk}/")
    expect(rita.locator(".source-text h2")).to_have_text("Pets")
    expect(rita.locator(".source-text strong")).to_have_text("free")
    rita.click("button[value=keep]")
    expect_message(rita, "Kept the console text")
    assert DriftItem.objects.get(pk=drift.pk).status == "kept"

    # The playground says the local model is too small to trust before anyone asks.
    rita.goto(f"{live_server.url}/answer/playground/")
    expect(rita.locator(".model-too-small")).to_contain_text("Gemma 3 270M")
    rita.screenshot(path=str(ARTIFACTS / "screens-playground.png"), full_page=True)
    rita.close()

    # --- ops: rules, API tokens, notification settings, answer policy, the dashboard's chart
    otto = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(otto, live_server.url, "otto", next_path="/rules/")
    rule = ResolutionRule.objects.filter(knowledge_base=walk["kb"], enabled=True).order_by("pk").first()
    otto.click(f'form[action$="/rules/{rule.pk}/toggle/"] button[type=submit]')
    expect_message(otto, f"Rule {rule.rule_id} switched off.")
    rule.refresh_from_db()
    assert rule.enabled is False

    otto.goto(f"{live_server.url}/ops/")
    otto.fill(".token-form input[name=name]", "chatbot")
    otto.click(".token-form button[type=submit]")
    expect(otto.locator("code.token-secret")).to_be_visible()
    one_navigation_bar(otto)
    token = ApiToken.objects.get(name="chatbot")
    otto.once("dialog", lambda dialog: dialog.accept())
    otto.click(f'form[action$="/ops/tokens/{token.pk}/revoke/"] button[type=submit]')
    expect(otto.locator("table.tokens")).to_contain_text("revoked")
    token.refresh_from_db()
    assert token.revoked_at is not None

    otto.goto(f"{live_server.url}/ops/notifications/")
    otto.fill(".notification-settings-form input[name=min_seen]", "4")
    otto.click(".notification-settings-form button[type=submit]")
    expect_message(otto, "Saved.")

    otto.goto(f"{live_server.url}/answer/policy/")
    otto.check("input[name=policy][value=caveat]")
    otto.click(".answer-policy-form button[type=submit]")
    expect_message(otto, "Answer policy saved")
    assert AnswerSettings.objects.get(knowledge_base=walk["kb"]).policy == "caveat"

    otto.goto(f"{live_server.url}/")
    boxes = otto.eval_on_selector_all(
        "svg.chart text.label, svg.chart text.today-label",
        "els => els.map(e => { const b = e.getBoundingClientRect(); return [e.textContent, b.left, b.right]; })")
    assert boxes[-1][0] == "today" and len(boxes) >= 4
    for (text, _, right), (following, left, _) in zip(boxes, boxes[1:]):
        assert right <= left, f"{text!r} overlaps {following!r}: {boxes}"
    otto.screenshot(path=str(ARTIFACTS / "screens-dashboard.png"), full_page=True)
    otto.close()

    # --- viewer: the controls are absent and forced posts are refused
    vera = browser.new_page()
    sign_in(vera, live_server.url, "vera", next_path=f"/conflicts/{second.pk}/")
    expect(vera.locator(".triage-forms")).to_have_count(0)
    for url, body in ((f"/conflicts/{second.pk}/assign/", "assignee="), (f"/conflicts/{second.pk}/comment/", "text=x"),
                      (f"/conflicts/{second.pk}/snooze/", "more_sightings=2"), (f"/rules/{rule.pk}/toggle/", "enabled=1"),
                      ("/ops/tokens/", "name=forced&scopes=answer"), ("/answer/policy/", "policy=off"),
                      ("/ops/notifications/settings/", "min_seen=1&min_cited=1&email_mode=off"),
                      (f"/source-changes/{drift.pk}/take/", "")):
        assert forced_post(vera, url, body) == 403, url
    vera.goto(f"{live_server.url}/rules/")
    expect(vera.locator(f'form[action$="/rules/{rule.pk}/toggle/"]')).to_have_count(0)
    vera.goto(f"{live_server.url}/ops/")
    expect(vera.locator("h1")).to_contain_text("Not allowed")
    one_navigation_bar(vera)
    assert not ApiToken.objects.filter(name="forced").exists()
    vera.close()
