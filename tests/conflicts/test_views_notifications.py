"""The notification pages: ops add webhooks (secret shown once), change settings and see the delivery log
(send a failed one again); every member chooses their own e-mail; roles and bad input; the token form
with scopes and expiry."""
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from articles.models import AuditEvent, KnowledgeBase
from conflicts.models import (
    ApiToken,
    DeliveryStatus,
    NotificationDelivery,
    NotificationEvent,
    NotificationPreference,
    Webhook,
)
from conflicts.services.notifications import notify_conflict_sighting, webhook_secret_reveal
from tests.conflicts.console_support import make_conflict, make_user
from tests.factories import make_article
from tests.support.console_urls import notification_objects
from tests.support.webhook_receiver import webhook_receiver  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
ALL_EVENTS = ["conflict.new", "conflict.regressed", "conflict.assigned"]


@pytest.fixture
def ops(kb):
    return make_user("olive", kb, role="ops", email="olive@example.com")


def test_ops_add_a_webhook_and_see_its_secret_once(client, kb, ops):
    client.force_login(ops)
    response = client.post(reverse("ops_webhook_create"), {"url": "https://93.184.215.14/hooks", "events": ALL_EVENTS}, **HTMX)
    assert response.status_code == 201 and response["Cache-Control"] == "no-store"
    secret = re.search(r'<code class="webhook-secret">([^<]+)</code>', response.content.decode()).group(1)
    webhook = Webhook.objects.get(knowledge_base=kb)
    assert webhook_secret_reveal(webhook) == secret and secret not in webhook.secret_encrypted
    page = client.get(reverse("ops_notifications")).content.decode()
    assert secret not in page and f"{webhook.secret_hint}…" in page  # never shown again, only recognised
    assert AuditEvent.objects.filter(action="webhook.created", actor=ops).exists()

    rotated = client.post(reverse("ops_webhook_rotate", args=[webhook.pk]), **HTMX)
    new_secret = re.search(r'<code class="webhook-secret">([^<]+)</code>', rotated.content.decode()).group(1)
    assert new_secret != secret and rotated["Cache-Control"] == "no-store"
    assert client.post(reverse("ops_webhook_toggle", args=[webhook.pk]), **HTMX).status_code == 200
    assert Webhook.objects.get(pk=webhook.pk).active is False


def test_ops_delete_a_webhook_its_queued_messages_fail_and_its_log_stays(client, kb, ops, articles):
    conflict = make_conflict(kb, articles[0], articles[1])
    objects = notification_objects(kb, conflict, "gone")  # a failed delivery: history
    later = NotificationEvent.objects.create(knowledge_base=kb, conflict=conflict, kind="conflict.regressed", key="1")
    queued = NotificationDelivery.objects.create(
        knowledge_base=kb, channel="webhook", event=later, webhook=objects["webhook"],
        target=objects["webhook"].url, body="{}", status=DeliveryStatus.QUEUED, next_attempt_at=timezone.now())
    client.force_login(make_user("rhea", kb, role="reviewer"))
    assert client.post(reverse("ops_webhook_delete", args=[objects["webhook"].pk]), **HTMX).status_code == 403
    client.force_login(ops)
    response = client.post(reverse("ops_webhook_delete", args=[objects["webhook"].pk]), **HTMX)
    assert response.status_code == 200 and "https://93.184.215.14/gone" not in response.content.decode()
    assert not Webhook.objects.filter(knowledge_base=kb).exists()
    queued.refresh_from_db()
    assert (queued.status, queued.last_error, queued.webhook_id) == (DeliveryStatus.FAILED, "the webhook was deleted", None)
    assert NotificationDelivery.objects.filter(pk=objects["delivery"].pk, last_error="HTTP 500 from the receiver").exists()
    audit = AuditEvent.objects.get(action="webhook.deleted")
    assert (audit.actor, audit.detail["url"], audit.detail["pending_failed"]) == (ops, "https://93.184.215.14/gone", 1)
    again = client.post(reverse("ops_webhook_delete", args=[objects["webhook"].pk]), **HTMX)
    assert again.status_code == 404
    # its failed messages stay in the log, without a "Send again" that could only fail again
    log = client.get(reverse("ops_notifications"), {"status": "failed"}).content.decode()
    assert "HTTP 500 from the receiver" in log
    assert reverse("ops_delivery_retry", args=[objects["delivery"].pk]) not in log
    retried = client.post(reverse("ops_delivery_retry", args=[objects["delivery"].pk]), **HTMX)
    assert retried.status_code == 409 and "webhook was deleted" in retried.content.decode()


@pytest.mark.parametrize("data, field, message", [
    ({"url": "not a url", "events": ALL_EVENTS}, "url", "Enter a valid URL."),
    ({"url": "http://127.0.0.1:9/hook", "events": ALL_EVENTS}, "url", "resolves to a loopback address"),
    ({"url": "https://93.184.215.14/hooks"}, "events", "This field is required."),
    ({"url": "https://93.184.215.14/hooks", "events": ["conflict.exploded"]}, "events", "Select a valid choice"),
])
def test_a_bad_webhook_is_a_400_naming_the_field_and_keeps_what_was_typed(client, kb, ops, data, field, message):
    client.force_login(ops)
    response = client.post(reverse("ops_webhook_create"), data, **HTMX)
    assert response.status_code == 400
    assert re.search(f'data-field="{field}">[^<]*{re.escape(message)}', response.content.decode())
    if data["url"] != "not a url":
        assert data["url"] in response.content.decode()
    assert not Webhook.objects.exists()


def test_settings_are_saved_and_bad_ones_refused_with_the_field_named(client, kb, ops):
    client.force_login(ops)
    url = reverse("ops_notification_settings")
    ok = client.post(url, {"min_seen": "2", "min_cited": "1", "email_recipients": "Leads@example.com, inbox@example.com",
                           "email_mode": "digest"}, **HTMX)
    assert ok.status_code == 200 and "Saved." in ok.content.decode()
    row = kb.notification_settings
    assert (row.min_seen, row.email_recipients, row.email_mode) == (2, ["inbox@example.com", "leads@example.com"], "digest")
    bad = client.post(url, {"min_seen": "0", "min_cited": "1", "email_recipients": "leads@example.com, nope",
                            "email_mode": "hourly"}, **HTMX)
    assert bad.status_code == 400
    html = bad.content.decode()
    assert set(re.findall(r'data-field="(\w+)"', html)) == {"min_seen", "email_recipients", "email_mode"}
    assert "&#x27;nope&#x27; is not an e-mail address." in html
    assert "leads@example.com, nope" in html  # what was typed stays
    kb.notification_settings.refresh_from_db()
    assert kb.notification_settings.min_seen == 2


def test_the_delivery_log_shows_failures_and_sends_one_again(
    client, kb, ops, articles, webhook_receiver, settings, django_capture_on_commit_callbacks
):
    settings.NOTIFICATION_RETRY_BASE_S, settings.NOTIFICATION_MAX_ATTEMPTS = 0, 2
    KnowledgeBase.objects.filter(pk=kb.pk).update(allow_private_fetch=True)
    client.force_login(ops)
    created = client.post(reverse("ops_webhook_create"), {"url": webhook_receiver.url(), "events": ALL_EVENTS}, **HTMX)
    webhook_receiver.secret = re.search(r'<code class="webhook-secret">([^<]+)</code>', created.content.decode()).group(1)
    webhook_receiver.default.status = 502
    conflict = make_conflict(kb, articles[0], articles[1], times_seen=3)
    with django_capture_on_commit_callbacks(execute=True):
        notify_conflict_sighting(conflict=conflict)
    delivery = NotificationDelivery.objects.get(channel="webhook")
    assert delivery.status == DeliveryStatus.FAILED

    page = client.get(reverse("ops_notifications"), {"status": "failed"})
    html = page.content.decode()
    assert page.status_code == 200 and [d.pk for d in page.context["deliveries"]] == [delivery.pk]
    assert "HTTP 502 from the receiver" in html and "Send again" in html and "Failed (1)" in html
    assert "1 failed delivery" in client.get(reverse("ops_home")).content.decode()

    webhook_receiver.default.status = 200
    with django_capture_on_commit_callbacks(execute=True):
        again = client.post(reverse("ops_delivery_retry", args=[delivery.pk]), **HTMX)
    assert again.status_code == 200
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED
    assert AuditEvent.objects.filter(action="notifications.retried", actor=ops).count() == 1
    conflict_again = client.post(reverse("ops_delivery_retry", args=[delivery.pk]), **HTMX)
    assert conflict_again.status_code == 409 and "only failed deliveries" in conflict_again.content.decode()


def test_notification_pages_need_the_ops_role_and_another_kbs_ids_are_404(client, kb, other_kb, articles):
    for role in ("viewer", "reviewer"):
        client.force_login(make_user(f"{role}-1", kb, role=role))
        assert client.get(reverse("ops_notifications")).status_code == 403
        assert client.post(reverse("ops_webhook_create"), {"url": "https://93.184.215.14/x", "events": ALL_EVENTS},
                           **HTMX).status_code == 403
    assert not Webhook.objects.exists()
    pair = [make_article(other_kb, f"t-{i}", f"Body {i}.", index=False) for i in range(2)]
    theirs = notification_objects(other_kb, make_conflict(other_kb, *pair), "theirs")
    client.force_login(make_user("ops-1", kb, role="ops"))
    for name, pk in (("ops_webhook_rotate", theirs["webhook"].pk), ("ops_webhook_toggle", theirs["webhook"].pk),
                     ("ops_webhook_delete", theirs["webhook"].pk),
                     ("ops_delivery_retry", theirs["delivery"].pk)):
        assert client.post(reverse(name, args=[pk]), **HTMX).status_code == 404
    assert "theirs" not in client.get(reverse("ops_notifications")).content.decode()


def test_every_member_chooses_their_own_email_a_viewer_too(client, kb):
    viewer = make_user("vera", kb, role="viewer", email="vera@example.com")
    client.force_login(viewer)
    page = client.get(reverse("notification_preferences"))
    assert page.status_code == 200 and page.context["form"]["email_mode"].value() == "off"
    assert client.post(reverse("notification_preferences"), {"email_mode": "digest"}, **HTMX).status_code == 200
    assert NotificationPreference.objects.get(user=viewer, knowledge_base=kb).email_mode == "digest"
    bad = client.post(reverse("notification_preferences"), {"email_mode": "hourly"}, **HTMX)
    assert bad.status_code == 400 and 'data-field="email_mode">Select a valid choice' in bad.content.decode()
    assert NotificationPreference.objects.get(user=viewer).email_mode == "digest"
    assert AuditEvent.objects.filter(action="notifications.preference", actor=viewer).count() == 1

    nomail = make_user("nomail", kb, role="reviewer")
    client.force_login(nomail)
    assert "has no e-mail address" in client.get(reverse("notification_preferences")).content.decode()


def test_the_token_form_sets_scopes_and_expiry(client, kb, ops):
    client.force_login(ops)
    response = client.post(reverse("ops_token_create"), {"name": "reader", "scopes": ["conflicts:read"],
                                                         "expires_days": "30"}, **HTMX)
    assert response.status_code == 201
    token = ApiToken.objects.get(name="reader")
    assert token.scopes == ["conflicts:read"]
    assert 29.9 < (token.expires_at - timezone.now()).total_seconds() / 86400 <= 30
    html = client.get(reverse("ops_home")).content.decode()
    assert "conflicts:read" in html and f"active until {token.expires_at:%Y-%m-%d}" in html

    for data, field in (({"name": "none"}, "scopes"), ({"name": "bad", "scopes": ["admin"]}, "scopes"),
                        ({"name": "old", "scopes": ["answer"], "expires_days": "0"}, "expires_days"),
                        ({"name": "long", "scopes": ["answer"], "expires_days": "99999"}, "expires_days")):
        refused = client.post(reverse("ops_token_create"), data, **HTMX)
        assert refused.status_code == 400 and f'data-field="{field}"' in refused.content.decode(), data
        assert data["name"] in refused.content.decode()  # what was typed stays
    assert ApiToken.objects.count() == 1


def test_the_admin_lists_webhooks_and_deliveries_without_the_secret(client, kb):
    from django.contrib.auth import get_user_model

    from conflicts.services.notifications import webhook_create

    webhook, secret = webhook_create(knowledge_base=kb, url="https://93.184.215.14/hooks", events=ALL_EVENTS)
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "x-long-password"))
    for url in (reverse("admin:conflicts_webhook_changelist"), reverse("admin:conflicts_webhook_change", args=[webhook.pk]),
                reverse("admin:conflicts_notificationdelivery_changelist")):
        html = client.get(url).content.decode()
        assert secret not in html and webhook.secret_encrypted not in html, url
        assert "93.184.215.14" in html or "notificationdelivery" in url


def test_a_member_sets_their_own_email_address_audited_and_validated(client, kb):
    """Issue 29 (10): no administrator needed; a bad address is refused naming it, and the change is audited."""
    nomail = make_user("nomail", kb, role="viewer")
    client.force_login(nomail)
    page = client.get(reverse("notification_preferences")).content.decode()
    assert "has no e-mail address" in page and "ask an administrator" not in page
    assert 'name="email"' in page

    bad = client.post(reverse("notification_email"), {"email": "not an address"}, **HTMX)
    assert bad.status_code == 400 and 'data-field="email">Enter a valid email address.' in bad.content.decode()
    nomail.refresh_from_db()
    assert nomail.email == ""

    saved = client.post(reverse("notification_email"), {"email": "Nora@Example.COM"}, **HTMX)
    assert saved.status_code == 200 and "E-mail address saved: Nora@example.com." in saved.content.decode()
    assert "has no e-mail address" not in saved.content.decode()
    nomail.refresh_from_db()
    assert nomail.email == "Nora@example.com"
    [audit] = AuditEvent.objects.filter(action="notifications.preference", actor=nomail)
    assert audit.detail == {"changed": "email", "before": "", "after": "Nora@example.com"}
    assert audit.knowledge_base_id == kb.pk

    # Without JavaScript: a redirect back with the message.
    plain = client.post(reverse("notification_email"), {"email": ""}, follow=True)
    assert "E-mail address saved." in plain.content.decode()
    nomail.refresh_from_db()
    assert nomail.email == "" and AuditEvent.objects.filter(action="notifications.preference").count() == 2
