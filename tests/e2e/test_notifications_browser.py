"""Notifications in a real browser (Playwright driving Debian's chromium against a live server): ops add a
webhook and see its secret once, a new conflict's delivery fails against a broken receiver and is sent again
from the delivery log once it is fixed; a member picks the daily digest; both pages at phone width.
Screenshots in test-artifacts/ (notifications-*.png)."""
import os
import re

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import pytest  # noqa: E402
from django.db import transaction  # noqa: E402

from articles.models import KnowledgeBase  # noqa: E402
from articles.services import knowledge_base_get_or_create  # noqa: E402
from conflicts.models import DeliveryStatus, NotificationDelivery, NotificationPreference  # noqa: E402
from conflicts.services.notifications import notify_conflict_sighting  # noqa: E402
from tests.conflicts.console_support import make_conflict, make_user  # noqa: E402
from tests.e2e.test_console_browser import ARTIFACTS, browser, sign_in  # noqa: E402,F401 - the shared fixture
from tests.factories import make_article  # noqa: E402
from tests.support.webhook_receiver import webhook_receiver  # noqa: E402,F401 - fixture

pytestmark = pytest.mark.e2e


def test_ops_add_a_webhook_see_a_failure_and_send_it_again(browser, live_server, transactional_db, settings,  # noqa: F811
                                                         webhook_receiver):  # noqa: F811
    from playwright.sync_api import expect

    settings.NOTIFICATION_RETRY_BASE_S, settings.NOTIFICATION_MAX_ATTEMPTS = 0, 2
    kb = knowledge_base_get_or_create(slug="acme", name="Acme Ferries")
    KnowledgeBase.objects.filter(pk=kb.pk).update(allow_private_fetch=True)
    make_user("olive", kb, "ops", email="olive@example.com")
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    sign_in(page, live_server.url, "olive", next_path="/ops/notifications/")

    page.fill("#id_url", webhook_receiver.url())
    page.click(".webhook-form button[type=submit]")
    secret = page.locator("code.webhook-secret")
    expect(secret).to_be_visible()
    webhook_receiver.secret = secret.inner_text()
    page.screenshot(path=str(ARTIFACTS / "notifications-webhook-secret.png"), full_page=True)
    page.reload()
    expect(page.locator("code.webhook-secret")).to_have_count(0)  # shown once
    expect(page.locator("table.webhooks")).to_contain_text(webhook_receiver.secret[:10] + "…")

    webhook_receiver.default.status = 500
    a, b = (make_article(kb, f"fare-{i}", f"A ticket costs €{18 + i}.", title=f"Fares {2025 + i}", index=False)
            for i in range(2))
    with transaction.atomic():
        notify_conflict_sighting(conflict=make_conflict(kb, a, b, times_seen=3))
    delivery = NotificationDelivery.objects.get()
    assert delivery.status == DeliveryStatus.FAILED and len(webhook_receiver.received) == 2

    page.reload()
    row = page.locator(f'tr[data-delivery="{delivery.pk}"]')
    expect(row).to_contain_text("HTTP 500 from the receiver")
    page.screenshot(path=str(ARTIFACTS / "notifications-delivery-failed.png"), full_page=True)
    webhook_receiver.default.status = 200
    row.locator("button", has_text="Send again").click()
    expect(page.locator(f'tr[data-delivery="{delivery.pk}"]')).to_contain_text("Delivered")
    assert [r.signature_valid for r in webhook_receiver.received] == [True, True, True]
    page.screenshot(path=str(ARTIFACTS / "notifications-delivery-sent-again.png"), full_page=True)

    phone = browser.new_page(viewport={"width": 390, "height": 844})
    sign_in(phone, live_server.url, "olive", next_path="/ops/notifications/")
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the notifications page scrolls sideways: {width}px wide"
    phone.screenshot(path=str(ARTIFACTS / "notifications-phone.png"), full_page=True)


def test_a_member_chooses_the_daily_digest(browser, live_server, transactional_db):  # noqa: F811
    from playwright.sync_api import expect

    kb = knowledge_base_get_or_create(slug="acme", name="Acme Ferries")
    vera = make_user("vera", kb, "viewer", email="vera@example.com")
    page = browser.new_page(viewport={"width": 390, "height": 844})
    sign_in(page, live_server.url, "vera", next_path="/notifications/")
    page.get_by_label(re.compile("daily digest", re.I)).check()
    page.click(".preference-form button[type=submit]")
    expect(page.locator(".preference-form .ok")).to_have_text("Saved.")
    assert NotificationPreference.objects.get(user=vera, knowledge_base=kb).email_mode == "digest"
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(ARTIFACTS / "notifications-preferences-phone.png"), full_page=True)
