"""Sending one notification delivery: claim the row, make one attempt, record what happened.

A worker claims a queued row that is due (or one whose claim outlived the task time limit: its worker
died) with one conditional update, so a duplicate message sends nothing. A failed attempt is retried
with exponential backoff (NOTIFICATION_RETRY_BASE_S, doubling, at most NOTIFICATION_RETRY_MAX_S) up
to NOTIFICATION_MAX_ATTEMPTS, then the row is failed and stays in the ops log, where it can be sent
again. Delivery is at least once: a worker killed after the receiver answered but before the row was
marked sends it again, so receivers should skip an X-Kbreview-Delivery id they have seen.

Webhooks go only to the address that was checked (articles.sources_fetch: public addresses unless the
knowledge base allows private ones), never follow redirects, and give up after
NOTIFICATION_WEBHOOK_TIMEOUT_S.
"""
from __future__ import annotations

import datetime as dt
import logging
import smtplib
import time

import urllib3
from django.conf import settings
from django.core.mail import EmailMessage
from django.utils import timezone

from articles.sources_fetch import FetchError, Target, checked_address, pinned_pool, request_failure
from conflicts.models import DeliveryChannel, DeliveryStatus, NotificationDelivery
from conflicts.services.notifications import SIGNATURE_HEADER, InvalidSecret, webhook_secret_reveal, webhook_signature
from kbreview.leases import lease_claim, lease_finish

logger = logging.getLogger(__name__)

USER_AGENT = "kbreview-webhook/1.0"
_RETRYABLE_STATUSES = {408, 425, 429}
_RESPONSE_READ_LIMIT = 4096


class DeliveryFailure(Exception):
    """One attempt failed; `permanent` ones are not tried again (the message says why)."""

    def __init__(self, message: str, *, permanent: bool = False, response_status: int | None = None) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.response_status = response_status


def retry_delay_s(attempts: int) -> float:
    """Seconds to wait after the `attempts`-th failed attempt."""
    return min(settings.NOTIFICATION_RETRY_BASE_S * 2 ** (attempts - 1), settings.NOTIFICATION_RETRY_MAX_S)


def _post_webhook(delivery: NotificationDelivery) -> int:
    webhook = delivery.webhook
    if webhook is None:
        raise DeliveryFailure("the webhook was deleted", permanent=True)
    if not webhook.active:
        raise DeliveryFailure("the webhook is switched off", permanent=True)
    try:
        secret = webhook_secret_reveal(webhook)
    except InvalidSecret:
        raise DeliveryFailure("the signing secret cannot be decrypted (DJANGO_SECRET_KEY changed?): replace the secret",
                              permanent=True) from None
    timeout_s = settings.NOTIFICATION_WEBHOOK_TIMEOUT_S
    try:
        target = Target.parse(delivery.target)
        address = checked_address(target.host, target.port, allow_private=delivery.knowledge_base.allow_private_fetch)
    except FetchError as exc:
        # A refused address stays refused; a name that does not resolve now may resolve later.
        raise DeliveryFailure(str(exc), permanent=not str(exc).startswith("cannot resolve")) from None
    body = delivery.body.encode()
    headers = {
        "Host": target.host_header,
        "User-Agent": USER_AGENT,
        "Content-Type": "application/json",
        "X-Kbreview-Event": delivery.event.kind,
        "X-Kbreview-Delivery": str(delivery.pk),
        SIGNATURE_HEADER: webhook_signature(secret, body),
    }
    pool = pinned_pool(target.scheme, target.host, target.port, address, timeout_s=timeout_s)
    deadline = time.monotonic() + timeout_s
    try:
        response = pool.urlopen("POST", target.path, body=body, headers=headers, redirect=False,
                                assert_same_host=False, preload_content=False)
        try:
            read = 0
            for piece in response.stream(1024):  # a little of the answer, then hang up
                read += len(piece)
                if read >= _RESPONSE_READ_LIMIT or time.monotonic() > deadline:
                    break
        finally:
            response.release_conn()
    except urllib3.exceptions.HTTPError as exc:
        raise DeliveryFailure(request_failure(exc, timeout_s=timeout_s)) from None
    finally:
        pool.close()
    status = response.status
    if 200 <= status < 300:
        return status
    if 300 <= status < 400:
        raise DeliveryFailure(f"HTTP {status}: redirects are not followed; put the final address in the webhook",
                              permanent=True, response_status=status)
    if status >= 500 or status in _RETRYABLE_STATUSES:
        raise DeliveryFailure(f"HTTP {status} from the receiver", response_status=status)
    raise DeliveryFailure(f"HTTP {status}: the receiver refused the message; not retried", permanent=True,
                          response_status=status)


def _send_email(delivery: NotificationDelivery) -> None:
    message = EmailMessage(subject=delivery.subject, body=delivery.body, to=[delivery.target],
                           headers={"X-Kbreview-Delivery": str(delivery.pk)})
    try:
        message.send()
    except smtplib.SMTPRecipientsRefused as exc:
        raise DeliveryFailure(f"the mail server refused the address: {exc}", permanent=True) from None
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryFailure(f"could not send the e-mail: {type(exc).__name__}: {exc}") from None


def notification_delivery_attempt(*, delivery_id: int) -> tuple[NotificationDelivery | None, float | None]:
    """Make the delivery's next attempt if it is due and nobody else holds it. Returns the row as it
    now stands and, when another attempt is scheduled, the seconds until it is due."""
    claim = lease_claim(NotificationDelivery, pk=delivery_id)
    delivery = (NotificationDelivery.objects.select_related("webhook", "event", "knowledge_base")
                .filter(pk=delivery_id).first())
    if delivery is None or claim is None:
        return delivery, None
    fields: dict = {"claimed_at": None}
    retry_in = None
    try:
        try:
            if delivery.channel == DeliveryChannel.WEBHOOK:
                fields["response_status"] = _post_webhook(delivery)
            else:
                _send_email(delivery)
        except DeliveryFailure:
            raise
        except Exception as exc:  # a fault of ours: counted as a failed attempt, never a stuck row
            logger.exception("delivery %s failed unexpectedly", delivery.pk)
            raise DeliveryFailure(f"{type(exc).__name__}: {exc}") from exc
    except DeliveryFailure as failure:
        fields.update(last_error=str(failure)[:2000], response_status=failure.response_status)
        if failure.permanent or delivery.attempts >= settings.NOTIFICATION_MAX_ATTEMPTS:
            fields["status"] = DeliveryStatus.FAILED
        else:
            retry_in = retry_delay_s(delivery.attempts)
            fields.update(status=DeliveryStatus.QUEUED, next_attempt_at=timezone.now() + dt.timedelta(seconds=retry_in))
    else:
        fields.update(status=DeliveryStatus.DELIVERED, delivered_at=timezone.now(), last_error="")
    lease_finish(delivery, **fields)  # only while our claim stands (one that outlived it leaves the row to whoever took it over)
    delivery.refresh_from_db()
    return delivery, retry_in
