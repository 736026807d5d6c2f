"""Sending notifications: signed webhooks to a real loopback receiver that checks the signature, e-mail
through Django's locmem backend; claims, bounded retries with backoff, timeouts, refusals, the sweeper."""
import datetime as dt
import json

import pytest
from django.utils import timezone

from articles.models import KnowledgeBase
from conflicts.models import DeliveryStatus, NotificationDelivery, NotificationEventKind
from conflicts.services.deliveries import notification_delivery_attempt, retry_delay_s
from conflicts.services.notifications import (
    notification_delivery_retry,
    notification_preference_set,
    notify_conflict_sighting,
    webhook_create,
    webhook_set_active,
)
from kbreview.celery import app
from kbreview.jobs import jobs_sweep
from tests.conflicts.console_support import make_conflict, make_user
from tests.support.webhook_receiver import webhook_receiver  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def fast_retries(settings):
    """Retries at once (eager tasks run their retry immediately), a short timeout, 3 attempts."""
    settings.NOTIFICATION_RETRY_BASE_S = 0
    settings.NOTIFICATION_MAX_ATTEMPTS = 3
    settings.NOTIFICATION_WEBHOOK_TIMEOUT_S = 0.5
    return settings


@pytest.fixture
def hook(kb, webhook_receiver):
    """A webhook to the loopback receiver (the knowledge base allows private addresses, as an intranet
    receiver needs), with the receiver holding the secret the console showed once."""
    KnowledgeBase.objects.filter(pk=kb.pk).update(allow_private_fetch=True)
    kb.refresh_from_db()
    webhook, secret = webhook_create(knowledge_base=kb, url=webhook_receiver.url(), events=NotificationEventKind.values)
    webhook_receiver.secret = secret
    return webhook


def announce(kb, articles, *, capture, seen=3):
    """A new conflict that has reached the threshold, announced; the deliveries run at commit."""
    conflict = make_conflict(kb, articles[0], articles[1], times_seen=seen)
    with capture(execute=True):
        event = notify_conflict_sighting(conflict=conflict)
    return conflict, event


def test_a_new_conflict_reaches_the_receiver_signed_over_the_raw_body(
    kb, articles, hook, webhook_receiver, django_capture_on_commit_callbacks
):
    conflict, event = announce(kb, articles, capture=django_capture_on_commit_callbacks)
    delivery = NotificationDelivery.objects.get(event=event, webhook=hook)
    assert (delivery.status, delivery.attempts, delivery.response_status) == (DeliveryStatus.DELIVERED, 1, 200)
    [request] = webhook_receiver.received
    assert request.signature_valid and request.answered == 200
    assert request.headers["X-Kbreview-Event"] == "conflict.new"
    assert request.headers["X-Kbreview-Delivery"] == str(delivery.pk)
    assert request.headers["Content-Type"] == "application/json"
    body = json.loads(request.body)
    assert body["event"] == "conflict.new" and body["conflict"]["id"] == conflict.pk
    assert [a["title"] for a in body["conflict"]["articles"]] == ["Article 0", "Article 1"]
    assert body["conflict"]["url"].endswith(f"/conflicts/{conflict.pk}/?kb=acme")
    assert request.body == delivery.body.encode()  # the bytes signed are the bytes stored and sent


def test_a_wrong_secret_is_caught_by_the_receiver_and_not_retried(
    kb, articles, hook, webhook_receiver, fast_retries, django_capture_on_commit_callbacks
):
    webhook_receiver.secret = "whsec_not-the-one"
    _, event = announce(kb, articles, capture=django_capture_on_commit_callbacks)
    delivery = NotificationDelivery.objects.get(event=event)
    assert [r.signature_valid for r in webhook_receiver.received] == [False]
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 1 and delivery.response_status == 401
    assert "refused the message; not retried" in delivery.last_error


def test_receiver_500_is_retried_with_the_same_signed_body_then_failed_and_kept(
    kb, articles, hook, webhook_receiver, fast_retries, django_capture_on_commit_callbacks
):
    webhook_receiver.default.status = 500
    _, event = announce(kb, articles, capture=django_capture_on_commit_callbacks)
    delivery = NotificationDelivery.objects.get(event=event)
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 3
    assert delivery.last_error == "HTTP 500 from the receiver" and delivery.response_status == 500
    assert len(webhook_receiver.received) == 3
    assert all(r.signature_valid for r in webhook_receiver.received)
    assert len({r.body for r in webhook_receiver.received}) == 1  # every attempt sends the same bytes

    # Nothing is lost: once the receiver is fixed, ops send it again and it arrives.
    webhook_receiver.default.status = 204
    with django_capture_on_commit_callbacks(execute=True):
        notification_delivery_retry(delivery=delivery)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == (DeliveryStatus.DELIVERED, 1, 204)
    assert len(webhook_receiver.received) == 4 and webhook_receiver.received[-1].signature_valid


def test_receiver_down_fails_after_the_attempts_and_arrives_once_it_is_back(
    kb, articles, hook, webhook_receiver, fast_retries, django_capture_on_commit_callbacks
):
    webhook_receiver.stop()
    assert webhook_receiver.port_closed()
    _, event = announce(kb, articles, capture=django_capture_on_commit_callbacks)
    delivery = NotificationDelivery.objects.get(event=event)
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 3
    assert delivery.last_error.startswith("could not connect") and delivery.response_status is None

    webhook_receiver.restart()
    with django_capture_on_commit_callbacks(execute=True):
        notification_delivery_retry(delivery=delivery)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED
    assert [r.signature_valid for r in webhook_receiver.received] == [True]


def test_a_receiver_that_does_not_answer_in_time_times_out_and_is_retried(
    kb, articles, hook, webhook_receiver, fast_retries, django_capture_on_commit_callbacks
):
    from tests.support.webhook_receiver import Answer

    webhook_receiver.script = [Answer(status=200, delay_s=2.0)]  # the first attempt hangs; the second is answered
    _, event = announce(kb, articles, capture=django_capture_on_commit_callbacks)
    delivery = NotificationDelivery.objects.get(event=event)
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.DELIVERED, 2)


def test_a_timeout_on_every_attempt_ends_failed_with_the_reason(
    kb, articles, hook, webhook_receiver, fast_retries, django_capture_on_commit_callbacks
):
    fast_retries.NOTIFICATION_MAX_ATTEMPTS = 2
    webhook_receiver.default.delay_s = 2.0
    _, event = announce(kb, articles, capture=django_capture_on_commit_callbacks)
    delivery = NotificationDelivery.objects.get(event=event)
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.FAILED, 2)
    assert delivery.last_error == "no answer within 0.5 s"


def test_private_addresses_are_refused_unless_the_knowledge_base_allows_them(
    kb, articles, hook, webhook_receiver, django_capture_on_commit_callbacks
):
    KnowledgeBase.objects.filter(pk=kb.pk).update(allow_private_fetch=False)
    _, event = announce(kb, articles, capture=django_capture_on_commit_callbacks)
    delivery = NotificationDelivery.objects.get(event=event)
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 1  # a refusal is not retried
    assert "resolves to a loopback address" in delivery.last_error
    assert webhook_receiver.received == []  # nothing reached it


def test_a_switched_off_webhook_gets_nothing_new_and_its_pending_deliveries_fail(
    kb, articles, hook, webhook_receiver, django_capture_on_commit_callbacks
):
    webhook_set_active(webhook=hook, active=False)
    _, event = announce(kb, articles, capture=django_capture_on_commit_callbacks)
    assert not NotificationDelivery.objects.filter(event=event).exists()
    webhook_set_active(webhook=hook, active=True)
    conflict = make_conflict(kb, articles[2], articles[3], times_seen=5)
    notify_conflict_sighting(conflict=conflict)  # not committed: the delivery waits
    webhook_set_active(webhook=hook, active=False)
    delivery = NotificationDelivery.objects.get(event__conflict=conflict)
    assert notification_delivery_attempt(delivery_id=delivery.pk)[0].last_error == "the webhook is switched off"


def test_backoff_doubles_up_to_its_ceiling_and_each_attempt_waits_for_its_moment(
    kb, articles, hook, webhook_receiver, settings
):
    settings.NOTIFICATION_RETRY_BASE_S, settings.NOTIFICATION_RETRY_MAX_S, settings.NOTIFICATION_MAX_ATTEMPTS = 30, 100, 4
    assert [retry_delay_s(n) for n in (1, 2, 3, 4)] == [30, 60, 100, 100]
    webhook_receiver.default.status = 503
    conflict = make_conflict(kb, articles[0], articles[1], times_seen=3)
    notify_conflict_sighting(conflict=conflict)  # no commit: the test makes each attempt itself
    delivery = NotificationDelivery.objects.get(event__conflict=conflict)

    before = timezone.now()
    row, retry_in = notification_delivery_attempt(delivery_id=delivery.pk)
    assert (row.status, row.attempts, retry_in) == (DeliveryStatus.QUEUED, 1, 30)
    assert before + dt.timedelta(seconds=29) < row.next_attempt_at < timezone.now() + dt.timedelta(seconds=31)
    # A duplicate message before the moment does nothing.
    assert notification_delivery_attempt(delivery_id=delivery.pk) == (row, None)
    assert len(webhook_receiver.received) == 1

    for attempts, wait in ((2, 60), (3, 100)):
        NotificationDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
        row, retry_in = notification_delivery_attempt(delivery_id=delivery.pk)
        assert (row.status, row.attempts, retry_in) == (DeliveryStatus.QUEUED, attempts, wait)
    NotificationDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    row, retry_in = notification_delivery_attempt(delivery_id=delivery.pk)
    assert (row.status, row.attempts, retry_in) == (DeliveryStatus.FAILED, 4, None)
    assert len(webhook_receiver.received) == 4
    # A failed row is never picked up again by a stray message.
    assert notification_delivery_attempt(delivery_id=delivery.pk)[1] is None and len(webhook_receiver.received) == 4


def test_the_sweeper_resends_a_lost_message_and_a_dead_workers_claim(
    kb, articles, hook, webhook_receiver, settings
):
    conflict = make_conflict(kb, articles[0], articles[1], times_seen=3)
    notify_conflict_sighting(conflict=conflict)  # committed never: as if the message was lost
    delivery = NotificationDelivery.objects.get(event__conflict=conflict)
    assert jobs_sweep()["notification"] == 0  # due just now: not yet overdue
    assert jobs_sweep(older_than_s=-1)["notification"] == 1  # eager: the worker delivers it here
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED and len(webhook_receiver.received) == 1

    # A worker claimed another and died mid-send: after the task time limit it is taken over.
    other = make_conflict(kb, articles[2], articles[3], times_seen=3)
    notify_conflict_sighting(conflict=other)
    stuck = NotificationDelivery.objects.get(event__conflict=other)
    dead_since = timezone.now() - dt.timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 5)
    NotificationDelivery.objects.filter(pk=stuck.pk).update(status=DeliveryStatus.SENDING, claimed_at=dead_since, attempts=1)
    assert notification_delivery_attempt(delivery_id=stuck.pk)[0].status == DeliveryStatus.DELIVERED
    assert NotificationDelivery.objects.get(pk=stuck.pk).attempts == 2


def test_each_message_is_sent_once_however_often_its_task_runs(
    kb, articles, hook, webhook_receiver, django_capture_on_commit_callbacks
):
    _, event = announce(kb, articles, capture=django_capture_on_commit_callbacks)
    delivery = NotificationDelivery.objects.get(event=event)
    for _ in range(3):
        assert app.tasks["conflicts.tasks.deliver_notification"].apply(args=[delivery.pk]).get() == "delivered"
    assert len(webhook_receiver.received) == 1


def test_email_goes_through_djangos_mail_backend_and_is_retried_on_an_smtp_failure(
    kb, articles, mailoutbox, fast_retries, monkeypatch, django_capture_on_commit_callbacks
):
    import smtplib

    from django.core.mail.backends.locmem import EmailBackend

    member = make_user("rita", kb, email="rita@example.com")
    notification_preference_set(user=member, knowledge_base=kb, email_mode="immediate")
    failures = iter([smtplib.SMTPServerDisconnected("connection lost")])
    real_send = EmailBackend.send_messages

    def flaky(self, messages):  # the locmem backend, failing once the way an SMTP server can
        for exc in failures:
            raise exc
        return real_send(self, messages)

    monkeypatch.setattr(EmailBackend, "send_messages", flaky)
    _, event = announce(kb, articles, capture=django_capture_on_commit_callbacks)
    delivery = NotificationDelivery.objects.get(event=event, channel="email")
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.DELIVERED, 2)
    [mail] = mailoutbox
    assert mail.to == ["rita@example.com"] and "new conflict" in mail.subject
    assert mail.extra_headers["X-Kbreview-Delivery"] == str(delivery.pk)
