"""Notifications: what is worth telling (a new conflict over the impact threshold, a reviewed conflict
that came back, an assignment), to whom (webhooks, e-mail addresses, members by their preference) and
the daily digest. Every event is recorded once, in the transaction of the change that caused it, with
one delivery row per webhook or address; workers send them after commit (conflicts.services.deliveries).

Webhook secrets: the receiver checks an HMAC-SHA256 of the raw body made with the secret, so the
secret itself must be at hand when sending; it is stored encrypted (Fernet, with a key derived from
DJANGO_SECRET_KEY, and DJANGO_SECRET_KEY_FALLBACKS still decrypt after a key rotation), shown once
when made or replaced, and afterwards only by its first characters.
"""
from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import secrets

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from articles.audit import audit_event_record
from articles.models import Article, AuditAction, KnowledgeBase
from articles.sources_fetch import FetchError, Target, checked_address
from conflicts.models import (
    Conflict,
    ConflictStatus,
    ConflictSubstatus,
    DeliveryChannel,
    DeliveryStatus,
    EmailMode,
    NotificationDelivery,
    NotificationEvent,
    NotificationEventKind,
    NotificationPreference,
    NotificationSettings,
    Webhook,
)
from kbreview.jobs import enqueue

SECRET_PREFIX = "whsec_"
SIGNATURE_HEADER = "X-Kbreview-Signature"
_KEY_CONTEXT = b"kbreview webhook secrets\x00"


class NotificationInputError(ValueError):
    """Input a notification setting cannot take; the message names the field. Nothing was written."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


# --- webhook secrets and signatures ---------------------------------------------------------------


def _secret_box() -> MultiFernet:
    keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet(
        [Fernet(base64.urlsafe_b64encode(hashlib.sha256(_KEY_CONTEXT + key.encode()).digest())) for key in keys]
    )


def webhook_secret_reveal(webhook: Webhook) -> str:
    """The secret to sign with; InvalidToken when DJANGO_SECRET_KEY changed without a fallback."""
    return _secret_box().decrypt(webhook.secret_encrypted.encode()).decode()


def webhook_signature(secret: str, body: bytes) -> str:
    """The value of the X-Kbreview-Signature header: sha256=<hex HMAC-SHA256 of the raw body>."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _new_secret() -> tuple[str, str, str]:
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    return secret, _secret_box().encrypt(secret.encode()).decode(), secret[: len(SECRET_PREFIX) + 4]


InvalidSecret = InvalidToken


# --- configuration: webhooks, settings, preferences (each audited) --------------------------------


def _clean_url(*, knowledge_base: KnowledgeBase, url: str) -> str:
    url = url.strip()
    try:
        target = Target.parse(url)
        # The same check every delivery makes again (the name may resolve elsewhere by then).
        checked_address(target.host, target.port, allow_private=knowledge_base.allow_private_fetch)
    except FetchError as exc:
        raise NotificationInputError("url", str(exc)) from None
    return url


def _clean_events(events) -> list[str]:
    events = sorted(set(events))
    unknown = sorted(set(events) - set(NotificationEventKind.values))
    if unknown or not events:
        problem = f"unknown event(s) {', '.join(unknown)}" if unknown else "choose at least one event"
        raise NotificationInputError("events", f"{problem} (choose from {', '.join(NotificationEventKind.values)})")
    return events


def webhook_create(*, knowledge_base: KnowledgeBase, url: str, events, actor=None) -> tuple[Webhook, str]:
    """Returns the webhook and its signing secret, which is shown this once."""
    url, events = _clean_url(knowledge_base=knowledge_base, url=url), _clean_events(events)
    secret, encrypted, hint = _new_secret()
    with transaction.atomic():
        webhook = Webhook.objects.create(
            knowledge_base=knowledge_base, url=url, events=events, secret_encrypted=encrypted, secret_hint=hint,
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
        )
        audit_event_record(action=AuditAction.WEBHOOK_CREATED, target=webhook, knowledge_base=knowledge_base,
                           actor=actor, url=url, events=events)
    return webhook, secret


def webhook_rotate_secret(*, webhook: Webhook, actor=None) -> tuple[Webhook, str]:
    """A new secret (shown this once); deliveries not yet sent are signed with it."""
    secret, encrypted, hint = _new_secret()
    with transaction.atomic():
        locked = Webhook.objects.select_for_update().get(pk=webhook.pk)
        locked.secret_encrypted, locked.secret_hint, locked.secret_rotated_at = encrypted, hint, timezone.now()
        locked.save(update_fields=["secret_encrypted", "secret_hint", "secret_rotated_at"])
        audit_event_record(action=AuditAction.WEBHOOK_SECRET_ROTATED, target=locked,
                           knowledge_base=locked.knowledge_base, actor=actor)
    return locked, secret


def webhook_set_active(*, webhook: Webhook, active: bool, actor=None) -> Webhook:
    with transaction.atomic():
        locked = Webhook.objects.select_for_update().get(pk=webhook.pk)
        if locked.active != active:
            locked.active = active
            locked.save(update_fields=["active"])
            audit_event_record(action=AuditAction.WEBHOOK_ENABLED if active else AuditAction.WEBHOOK_DISABLED,
                               target=locked, knowledge_base=locked.knowledge_base, actor=actor)
    return locked


def webhook_delete(*, webhook: Webhook, actor=None) -> int:
    """Delete a webhook. Its delivery log stays (the rows lose their link, not their history); deliveries
    still queued are failed in the same transaction, so none is posted after the receiver was removed (one
    being sent right now finishes). Returns how many queued deliveries were failed."""
    with transaction.atomic():
        locked = Webhook.objects.select_for_update().filter(pk=webhook.pk).first()
        if locked is None:
            return 0
        cancelled = NotificationDelivery.objects.filter(
            webhook=locked, status=DeliveryStatus.QUEUED
        ).update(status=DeliveryStatus.FAILED, last_error="the webhook was deleted")
        audit_event_record(action=AuditAction.WEBHOOK_DELETED, target=locked, knowledge_base=locked.knowledge_base,
                           actor=actor, url=locked.url, pending_failed=cancelled)
        locked.delete()
    return cancelled


def notification_settings_update(
    *, knowledge_base: KnowledgeBase, min_seen: int, min_cited: int, email_recipients: list[str], email_mode: str,
    actor=None,
) -> NotificationSettings:
    if min_seen < 1:
        raise NotificationInputError("min_seen", "must be at least 1")
    if min_cited < 1:
        raise NotificationInputError("min_cited", "must be at least 1")
    if email_mode not in EmailMode.values:
        raise NotificationInputError("email_mode", f"choose from {', '.join(EmailMode.values)}")
    recipients = sorted({address.strip().lower() for address in email_recipients if address.strip()})
    with transaction.atomic():
        row, _ = NotificationSettings.objects.select_for_update().get_or_create(knowledge_base=knowledge_base)
        before = {"min_seen": row.min_seen, "min_cited": row.min_cited, "email_recipients": row.email_recipients,
                  "email_mode": row.email_mode}
        row.min_seen, row.min_cited, row.email_recipients, row.email_mode = min_seen, min_cited, recipients, email_mode
        row.updated_by = actor if getattr(actor, "is_authenticated", False) else None
        row.full_clean()
        row.save()
        after = {"min_seen": min_seen, "min_cited": min_cited, "email_recipients": recipients, "email_mode": email_mode}
        if after != before:
            audit_event_record(action=AuditAction.NOTIFICATION_SETTINGS_CHANGED, target=row,
                               knowledge_base=knowledge_base, actor=actor, before=before, after=after)
    return row


def notification_preference_set(*, user, knowledge_base: KnowledgeBase, email_mode: str) -> NotificationPreference:
    """A member's own choice: no e-mail, one per event, or the daily digest."""
    if email_mode not in EmailMode.values:
        raise NotificationInputError("email_mode", f"choose from {', '.join(EmailMode.values)}")
    with transaction.atomic():
        row, _ = NotificationPreference.objects.select_for_update().get_or_create(user=user, knowledge_base=knowledge_base)
        if row.email_mode != email_mode:
            previous, row.email_mode = row.email_mode, email_mode
            row.save(update_fields=["email_mode", "updated_at"])
            audit_event_record(action=AuditAction.NOTIFICATION_PREFERENCE_CHANGED, target=row,
                               knowledge_base=knowledge_base, actor=user, before=previous, after=email_mode)
    return row


def notification_email_set(*, user, knowledge_base: KnowledgeBase, email: str):
    """A member's own e-mail address (every message to them goes there; empty: none). Audited in the knowledge
    base where it was changed, with the address before and after."""

    email = get_user_model().objects.normalize_email(email.strip())
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise NotificationInputError("email", f"{email!r} is not an e-mail address.") from None
    with transaction.atomic():
        locked = get_user_model().objects.select_for_update().get(pk=user.pk)
        if locked.email != email:
            previous, locked.email = locked.email, email
            locked.save(update_fields=["email"])
            audit_event_record(action=AuditAction.NOTIFICATION_PREFERENCE_CHANGED, target=locked,
                               knowledge_base=knowledge_base, actor=locked, changed="email", before=previous,
                               after=email)
    user.email = locked.email
    return locked


def notification_delivery_retry(*, delivery: NotificationDelivery, actor=None) -> NotificationDelivery:
    """Send a failed delivery again, with a fresh round of attempts (ops, after fixing the receiver)."""
    with transaction.atomic():
        locked = NotificationDelivery.objects.select_for_update().get(pk=delivery.pk)
        if locked.status != DeliveryStatus.FAILED:
            raise NotificationInputError("delivery", f"only failed deliveries are sent again (this one is {locked.status})")
        if not locked.sendable_again:  # its webhook was deleted: queued again it could only fail again
            raise NotificationInputError("delivery", "its webhook was deleted; it cannot be sent again")
        locked.status, locked.attempts, locked.next_attempt_at = DeliveryStatus.QUEUED, 0, timezone.now()
        locked.save(update_fields=["status", "attempts", "next_attempt_at"])
        audit_event_record(action=AuditAction.NOTIFICATION_RETRIED, target=locked, knowledge_base=locked.knowledge_base,
                           actor=actor, target_address=locked.target, last_error=locked.last_error)
        enqueue(locked)
    return locked


# --- events: recorded once, with their deliveries, by the service that saw them --------------------


def notification_settings_for(knowledge_base_id: int) -> NotificationSettings:
    """The knowledge base's settings, or the defaults (unsaved) when it has none."""
    return NotificationSettings.objects.filter(knowledge_base_id=knowledge_base_id).first() or NotificationSettings(
        knowledge_base_id=knowledge_base_id
    )


def conflict_url(conflict: Conflict, slug: str) -> str:
    return f"{settings.CONSOLE_BASE_URL}{reverse('conflict_detail', args=[conflict.pk])}?kb={slug}"


def _payload(event: NotificationEvent, conflict: Conflict, kb: KnowledgeBase, detail: dict) -> dict:
    articles = {pk: (ref, title) for pk, ref, title in Article.objects.filter(
        pk__in=(conflict.article_low_id, conflict.article_high_id)).values_list("pk", "external_ref", "title")}
    return {
        "id": event.pk,
        "event": event.kind,
        "occurred_at": event.created_at.isoformat(),
        "knowledge_base": {"slug": kb.slug, "name": kb.name},
        "conflict": {
            "id": conflict.pk,
            "url": conflict_url(conflict, kb.slug),
            "status": conflict.status,
            "regressed": conflict.substatus == ConflictSubstatus.REGRESSED,
            "type": conflict.type,
            "explanation": conflict.explanation,
            "articles": [{"ref": articles[pk][0], "title": articles[pk][1]}
                         for pk in (conflict.article_low_id, conflict.article_high_id) if pk is not None],
            "times_seen": conflict.times_seen,
            "times_cited": conflict.times_cited,
            "assignee": conflict.assignee.get_username() if conflict.assignee_id else None,
        },
        "detail": detail,
    }


def _email_subject(kb: KnowledgeBase, text: str) -> str:
    return " ".join(f"[kbreview] {kb.name}: {text}".split())[:300]  # one line: no header injection


_EVENT_HEADLINES = {
    NotificationEventKind.NEW_CONFLICT: "new conflict",
    NotificationEventKind.REGRESSED: "a reviewed conflict came back",
    NotificationEventKind.ASSIGNED: "conflict assigned to you",
}


def _member_addresses(*, knowledge_base_id: int, mode: str) -> dict[str, object]:
    """address -> user, for members of the knowledge base whose preference is `mode` and who have an address."""
    prefs = NotificationPreference.objects.filter(
        knowledge_base_id=knowledge_base_id, email_mode=mode, user__is_active=True,
        user__memberships__knowledge_base_id=knowledge_base_id,
    ).exclude(user__email="").select_related("user")
    return {pref.user.email.lower(): pref.user for pref in prefs}


def _immediate_addresses(*, event: NotificationEvent, config: NotificationSettings) -> list[str]:
    if event.kind == NotificationEventKind.ASSIGNED:
        members = _member_addresses(knowledge_base_id=event.knowledge_base_id, mode=EmailMode.IMMEDIATE)
        return [address for address, user in members.items() if user.pk == event.assignee_id]
    addresses = set(config.email_recipients) if config.email_mode == EmailMode.IMMEDIATE else set()
    addresses |= set(_member_addresses(knowledge_base_id=event.knowledge_base_id, mode=EmailMode.IMMEDIATE))
    return sorted(addresses)


def _event_record(*, conflict: Conflict, kind: str, key: str = "", assignee=None, detail: dict | None = None):
    """Record the event once (a repeat does nothing) and one delivery per webhook and address, each sent
    by a worker after commit. Returns the event, or None when it was already recorded."""
    kb = KnowledgeBase.objects.get(pk=conflict.knowledge_base_id)
    try:
        with transaction.atomic():
            event = NotificationEvent.objects.create(knowledge_base=kb, conflict=conflict, kind=kind, key=key,
                                                     assignee=assignee)
    except IntegrityError:
        return None
    with transaction.atomic():
        event.payload = _payload(event, conflict, kb, detail or {})
        event.save(update_fields=["payload"])
        body = json.dumps(event.payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        now = timezone.now()
        # Locked until this transaction ends: a webhook deleted meanwhile would leave its deliveries pointing at
        # nothing (a foreign-key error at commit, failing the review action that announced the event). A delete
        # waits instead, then fails these deliveries with the rest of the webhook's queue.
        webhooks = Webhook.objects.select_for_update(no_key=True).filter(knowledge_base=kb, active=True,
                                                                        events__contains=[kind])
        rows = [
            NotificationDelivery(knowledge_base=kb, channel=DeliveryChannel.WEBHOOK, event=event, webhook=webhook,
                                 target=webhook.url, body=body, next_attempt_at=now)
            for webhook in webhooks
        ]
        config = notification_settings_for(kb.pk)
        addresses = _immediate_addresses(event=event, config=config)
        if addresses:
            text = render_to_string("notifications/event_email.txt", {
                "kb": kb, "event": event, "payload": event.payload, "headline": _EVENT_HEADLINES[kind], "detail": detail or {},
            })
            subject = _email_subject(kb, f"{_EVENT_HEADLINES[kind]} — " + " vs ".join(
                a["title"] for a in event.payload["conflict"]["articles"]))
            rows += [NotificationDelivery(knowledge_base=kb, channel=DeliveryChannel.EMAIL, event=event, target=address,
                                          subject=subject, body=text, next_attempt_at=now) for address in addresses]
        for delivery in NotificationDelivery.objects.bulk_create(rows):
            enqueue(delivery)
    return event


def notify_conflict_sighting(*, conflict: Conflict) -> NotificationEvent | None:
    """Called by detection after counting a sighting: a conflict never reviewed that has now reached the
    knowledge base's threshold (seen in N turns or cited by M replies) is announced, once. A snoozed
    conflict is not announced while it sleeps; the service that wakes it calls this again."""
    events = notify_conflict_sightings(conflicts=[conflict])
    return events[0] if events else None


def notify_conflict_sightings(*, conflicts: list[Conflict]) -> list[NotificationEvent]:
    """notify_conflict_sighting for the conflicts one check counted (of one knowledge base), in a
    settings read and one look-up of the announcements already made, whatever their number."""
    now = timezone.now()
    unreviewed = [c for c in conflicts
                  if c.status == ConflictStatus.OPEN and c.reviewed_at is None and not c.snoozed_at(now)]
    if not unreviewed:
        return []
    configs: dict[int, NotificationSettings] = {}
    due = []
    for conflict in unreviewed:
        if conflict.knowledge_base_id not in configs:
            configs[conflict.knowledge_base_id] = notification_settings_for(conflict.knowledge_base_id)
        config = configs[conflict.knowledge_base_id]
        if conflict.times_seen >= config.min_seen or conflict.times_cited >= config.min_cited:
            due.append(conflict)
    if not due:
        return []
    announced = set(NotificationEvent.objects.filter(
        conflict__in=due, kind=NotificationEventKind.NEW_CONFLICT, key="").values_list("conflict_id", flat=True))
    events = []
    for conflict in due:
        if conflict.pk in announced:
            continue
        config = configs[conflict.knowledge_base_id]
        event = _event_record(conflict=conflict, kind=NotificationEventKind.NEW_CONFLICT, detail={
            "threshold": {"min_seen": config.min_seen, "min_cited": config.min_cited},
        })
        if event is not None:
            events.append(event)
    return events


def notify_regression(*, conflict: Conflict, activity) -> NotificationEvent | None:
    return _event_record(conflict=conflict, kind=NotificationEventKind.REGRESSED, key=str(activity.pk),
                         detail={"note": activity.note, **activity.detail})


def notify_assignment(*, conflict: Conflict, activity, assignee) -> NotificationEvent | None:
    return _event_record(conflict=conflict, kind=NotificationEventKind.ASSIGNED, key=str(activity.pk),
                         assignee=assignee, detail={"note": activity.note,
                                                    "by": activity.actor.get_username() if activity.actor_id else None})


# --- the daily digest -----------------------------------------------------------------------------


def _day_bounds(day: dt.date) -> tuple[dt.datetime, dt.datetime]:
    start = timezone.make_aware(dt.datetime.combine(day, dt.time.min))
    return start, timezone.make_aware(dt.datetime.combine(day + dt.timedelta(days=1), dt.time.min))


def digest_send(*, day: dt.date, knowledge_base: KnowledgeBase | None = None) -> int:
    """One digest per address that chose it (members by preference, the knowledge base's own addresses
    by its setting) listing `day`'s events; an address gets one digest per day however often this runs,
    and none for a day with nothing to tell. Returns how many digests were queued."""
    start, end = _day_bounds(day)
    bases = [knowledge_base] if knowledge_base else KnowledgeBase.objects.order_by("pk")
    queued = 0
    for kb in bases:
        events = list(NotificationEvent.objects.filter(knowledge_base=kb, created_at__gte=start, created_at__lt=end)
                      .select_related("conflict").order_by("created_at", "pk"))
        if not events:
            continue
        config = notification_settings_for(kb.pk)
        recipients: dict[str, object] = {a: None for a in config.email_recipients} if config.email_mode == EmailMode.DIGEST else {}
        recipients.update(_member_addresses(knowledge_base_id=kb.pk, mode=EmailMode.DIGEST))
        open_now = Conflict.objects.filter(knowledge_base=kb, status=ConflictStatus.OPEN)
        counts = {"open": open_now.count(), "regressed": open_now.filter(substatus=ConflictSubstatus.REGRESSED).count(),
                  "unassigned": open_now.filter(assignee__isnull=True).count()}
        for address, user in sorted(recipients.items()):
            mine = [e for e in events if e.kind != NotificationEventKind.ASSIGNED or (user and e.assignee_id == user.pk)]
            if not mine:
                continue
            by_kind = {kind: _once_per_conflict([e for e in mine if e.kind == kind])
                       for kind in NotificationEventKind.values}
            summary = ", ".join(f"{len(v)} {_DIGEST_WORDS[k]}" for k, v in by_kind.items() if v)
            body = render_to_string("notifications/digest_email.txt", {
                "kb": kb, "day": day, "by_kind": [(_DIGEST_WORDS[k], v) for k, v in by_kind.items() if v],
                "counts": counts, "queue_url": f"{settings.CONSOLE_BASE_URL}{reverse('conflict_queue')}?kb={kb.slug}",
            })
            with transaction.atomic():
                try:
                    with transaction.atomic():
                        delivery = NotificationDelivery.objects.create(
                            knowledge_base=kb, channel=DeliveryChannel.DIGEST, target=address, digest_date=day,
                            subject=_email_subject(kb, f"daily digest for {day.isoformat()} — {summary}"), body=body,
                            next_attempt_at=timezone.now(),
                        )
                except IntegrityError:
                    continue  # this address already has its digest for the day
                enqueue(delivery)
            queued += 1
    return queued


def _once_per_conflict(events: list[NotificationEvent]) -> list[dict]:
    """A digest line per conflict, not per event: a conflict that came back twice in the day is one line saying
    so, described as it was last (the events are in time order)."""
    lines: dict[int, dict] = {}
    for event in events:
        line = lines.setdefault(event.conflict_id, {"times": 0})
        line["times"] += 1
        line["payload"] = event.payload
    return list(lines.values())


_DIGEST_WORDS = {
    NotificationEventKind.NEW_CONFLICT: "new conflict(s)",
    NotificationEventKind.REGRESSED: "regressed",
    NotificationEventKind.ASSIGNED: "assigned to you",
}
