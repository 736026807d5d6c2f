"""What is notified, once, to whom: a new conflict when it reaches the knowledge base's threshold (through
real detection), a regression, an assignment; e-mail by the members' own preference and the knowledge
base's addresses; the daily digest (command and beat task); webhook secrets; the snooze expiry row."""
import datetime as dt

import pytest
from django.core.management import call_command
from django.utils import timezone

from articles.models import ArticleVersion, AuditEvent, KnowledgeBase
from articles.services import article_version_restore
from conflicts.models import (
    ActivityKind,
    Conflict,
    ConflictActivity,
    DeliveryStatus,
    NotificationDelivery,
    NotificationEvent,
    NotificationEventKind,
    Webhook,
)
from conflicts.services import conflict_assign, conflict_snooze
from conflicts.services.notifications import (
    NotificationInputError,
    digest_send,
    notification_preference_set,
    notification_settings_update,
    webhook_create,
    webhook_rotate_secret,
    webhook_secret_reveal,
    webhook_signature,
)
from conflicts.services.review import conflict_unsnooze, conflicts_snooze_expire
from kbreview.celery import app
from tests.conflicts.console_support import detected_pair, make_conflict, make_user
from tests.conflicts.test_review import ask_again, resolve_by_editing
from tests.support.webhook_receiver import webhook_receiver  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def hook(kb, webhook_receiver):
    KnowledgeBase.objects.filter(pk=kb.pk).update(allow_private_fetch=True)
    kb.refresh_from_db()
    webhook, secret = webhook_create(knowledge_base=kb, url=webhook_receiver.url(), events=NotificationEventKind.values)
    webhook_receiver.secret = secret
    return webhook


def events(kb, kind=None):
    rows = NotificationEvent.objects.filter(knowledge_base=kb).order_by("pk")
    return list(rows.filter(kind=kind) if kind else rows)


def test_a_detected_conflict_is_announced_once_when_it_reaches_the_threshold(
    kb, inline_detection, hook, webhook_receiver, django_capture_on_commit_callbacks
):
    notification_settings_update(knowledge_base=kb, min_seen=2, min_cited=5, email_recipients=[], email_mode="off")
    with django_capture_on_commit_callbacks(execute=True):
        a, b, _ = detected_pair(kb)  # seen once (its reply cited one side: 1 cited < 5)
    conflict = Conflict.objects.get(knowledge_base=kb)
    assert events(kb) == [] and webhook_receiver.received == []

    ask_again(kb, a, b, "second", django_capture_on_commit_callbacks)  # seen twice: over the threshold
    ask_again(kb, a, b, "third", django_capture_on_commit_callbacks)  # still over it: no second announcement
    [event] = events(kb)
    assert (event.kind, event.conflict_id, event.payload["conflict"]["times_seen"]) == ("conflict.new", conflict.pk, 2)
    assert [r.signature_valid for r in webhook_receiver.received] == [True]
    assert NotificationDelivery.objects.get(event=event).status == DeliveryStatus.DELIVERED


def test_a_snoozed_conflict_is_announced_when_it_wakes_not_while_it_sleeps(
    kb, inline_detection, hook, webhook_receiver, django_capture_on_commit_callbacks
):
    notification_settings_update(knowledge_base=kb, min_seen=2, min_cited=5, email_recipients=[], email_mode="off")
    with django_capture_on_commit_callbacks(execute=True):
        a, b, _ = detected_pair(kb)
    conflict = Conflict.objects.get(knowledge_base=kb)
    conflict_snooze(conflict=conflict, actor=make_user("rita", kb), until=timezone.now() + dt.timedelta(hours=1))
    ask_again(kb, a, b, "second", django_capture_on_commit_callbacks)  # over the threshold, but asleep
    assert events(kb) == [] and webhook_receiver.received == []

    with django_capture_on_commit_callbacks(execute=True):
        assert conflicts_snooze_expire(now=timezone.now() + dt.timedelta(hours=2)) == 1
    [event] = events(kb)
    assert (event.kind, event.payload["conflict"]["times_seen"]) == ("conflict.new", 2)
    assert [r.signature_valid for r in webhook_receiver.received] == [True]


def test_a_conflict_woken_by_hand_is_announced_once(kb, inline_detection, hook, django_capture_on_commit_callbacks):
    notification_settings_update(knowledge_base=kb, min_seen=1, min_cited=5, email_recipients=[], email_mode="off")
    rita = make_user("rita", kb)
    with django_capture_on_commit_callbacks(execute=True):
        a, b, _ = detected_pair(kb)
    conflict = Conflict.objects.get(knowledge_base=kb)
    NotificationEvent.objects.filter(conflict=conflict).delete()  # as if it had been snoozed before the threshold
    conflict_snooze(conflict=conflict, actor=rita, until=timezone.now() + dt.timedelta(days=1))
    conflict_unsnooze(conflict=conflict, actor=rita)
    conflict_unsnooze(conflict=conflict, actor=rita)  # already awake: nothing more
    assert [e.kind for e in events(kb)] == ["conflict.new"]


def test_a_cited_reply_reaches_the_cited_threshold_first(kb, inline_detection, hook, django_capture_on_commit_callbacks):
    notification_settings_update(knowledge_base=kb, min_seen=10, min_cited=1, email_recipients=[], email_mode="off")
    with django_capture_on_commit_callbacks(execute=True):
        detected_pair(kb)  # its reply cites one of the two
    assert [e.kind for e in events(kb)] == ["conflict.new"]


def test_a_regression_is_notified_with_what_came_back(
    kb, inline_detection, hook, webhook_receiver, django_capture_on_commit_callbacks
):
    import json

    with django_capture_on_commit_callbacks(execute=True):
        old, new, _ = detected_pair(kb)
    conflict = Conflict.objects.get(knowledge_base=kb)
    rita = make_user("rita", kb)
    resolve_by_editing(conflict, old, "A standard car ticket costs €32 one way.", rita)
    old.refresh_from_db()
    article_version_restore(article=old, version=ArticleVersion.objects.get(article=old, number=1),
                            expected_version_id=old.current_version_id, actor=rita)
    ask_again(kb, old, new, "after-restore", django_capture_on_commit_callbacks)

    [event] = events(kb, NotificationEventKind.REGRESSED)
    activity = ConflictActivity.objects.get(conflict=conflict, kind=ActivityKind.REGRESSED)
    assert event.key == str(activity.pk)
    body = json.loads(webhook_receiver.received[-1].body)
    assert body["event"] == "conflict.regressed" and body["conflict"]["regressed"] is True
    assert body["detail"]["turn"] == "after-restore" and "v3 (reviewed v2)" in body["detail"]["note"]
    assert webhook_receiver.received[-1].signature_valid
    # Announced as new once, at its first (cited) sighting; a reviewed conflict is never "new" again.
    assert [e.payload["conflict"]["times_seen"] for e in events(kb, NotificationEventKind.NEW_CONFLICT)] == [1]


def test_email_goes_to_members_by_their_own_choice_and_to_the_knowledge_bases_addresses(
    kb, other_kb, articles, mailoutbox, django_capture_on_commit_callbacks
):
    now_user = make_user("nora", kb, email="nora@example.com")
    digest_user = make_user("dan", kb, email="dan@example.com")
    make_user("quiet", kb, email="quiet@example.com")  # no preference: no e-mail
    outsider = make_user("olga", other_kb, email="olga@example.com")  # a member of another knowledge base only
    notification_preference_set(user=now_user, knowledge_base=kb, email_mode="immediate")
    notification_preference_set(user=digest_user, knowledge_base=kb, email_mode="digest")
    notification_preference_set(user=outsider, knowledge_base=kb, email_mode="immediate")  # not a member: ignored
    notification_settings_update(knowledge_base=kb, min_seen=1, min_cited=1,
                                 email_recipients=["Support-Leads@example.com", " "], email_mode="immediate")
    conflict = make_conflict(kb, articles[0], articles[1], explanation="Article 0 says €18, Article 1 says €22.")
    from conflicts.services.notifications import notify_conflict_sighting

    with django_capture_on_commit_callbacks(execute=True):
        notify_conflict_sighting(conflict=conflict)
    assert sorted(m.to[0] for m in mailoutbox) == ["nora@example.com", "support-leads@example.com"]
    mail = mailoutbox[0]
    assert mail.subject == "[kbreview] Acme Ferries: new conflict — Article 0 vs Article 1"
    assert "Article 0 says €18, Article 1 says €22." in mail.body
    assert f"/conflicts/{conflict.pk}/?kb=acme" in mail.body and "&amp;" not in mail.body


def test_an_assignment_mails_the_assignee_who_asked_for_it(kb, articles, mailoutbox, django_capture_on_commit_callbacks):
    rita = make_user("rita", kb, email="rita@example.com")
    boss = make_user("boss", kb, role="ops")
    notification_preference_set(user=rita, knowledge_base=kb, email_mode="immediate")
    conflict = make_conflict(kb, articles[0], articles[1])
    with django_capture_on_commit_callbacks(execute=True):
        conflict_assign(conflict=conflict, assignee=rita, actor=boss)
        conflict_assign(conflict=conflict, assignee=None, actor=boss)  # unassigning tells no one
    [mail] = mailoutbox
    assert mail.to == ["rita@example.com"] and "conflict assigned to you" in mail.subject
    assert "Assigned to rita." in mail.body
    [event] = events(kb)
    assert event.assignee == rita and event.payload["detail"]["by"] == "boss"


def test_the_daily_digest_lists_the_days_events_once_per_address(
    kb, articles, mailoutbox, django_capture_on_commit_callbacks
):
    dan = make_user("dan", kb, email="dan@example.com")
    rita = make_user("rita", kb, email="rita@example.com")
    for user in (dan, rita):
        notification_preference_set(user=user, knowledge_base=kb, email_mode="digest")
    notification_settings_update(knowledge_base=kb, min_seen=1, min_cited=1, email_recipients=["inbox@example.com"],
                                 email_mode="digest")
    from conflicts.services.notifications import notify_conflict_sighting

    first = make_conflict(kb, articles[0], articles[1], explanation="Prices differ.")
    with django_capture_on_commit_callbacks(execute=True):
        notify_conflict_sighting(conflict=first)
        conflict_assign(conflict=first, assignee=rita, actor=dan)
    assert mailoutbox == []  # digest readers get no e-mail per event

    today = timezone.localdate()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("send_digest", "--date", today.isoformat())
    by_address = {m.to[0]: m for m in mailoutbox}
    assert sorted(by_address) == ["dan@example.com", "inbox@example.com", "rita@example.com"]
    assert "1 new conflict(s), 1 assigned to you" in by_address["rita@example.com"].subject
    assert "assigned to you" not in by_address["dan@example.com"].subject  # only one's own assignments
    assert "Article 0 vs Article 1: Prices differ." in by_address["dan@example.com"].body
    assert "Now: 1 open conflict, 0 regressed, 0 unassigned." in by_address["dan@example.com"].body

    with django_capture_on_commit_callbacks(execute=True):
        call_command("send_digest", "--date", today.isoformat())  # run again: nobody gets it twice
        assert digest_send(day=today - dt.timedelta(days=1)) == 0  # a day with nothing to tell sends nothing
    assert len(mailoutbox) == 3
    assert NotificationDelivery.objects.filter(channel="digest", status=DeliveryStatus.DELIVERED).count() == 3


def test_the_beat_task_sends_yesterdays_digest(kb, articles, mailoutbox, django_capture_on_commit_callbacks):
    dan = make_user("dan", kb, email="dan@example.com")
    notification_preference_set(user=dan, knowledge_base=kb, email_mode="digest")
    conflict = make_conflict(kb, articles[0], articles[1])
    NotificationEvent.objects.create(knowledge_base=kb, conflict=conflict, kind="conflict.new", payload={
        "conflict": {"articles": [{"title": "A"}, {"title": "B"}], "explanation": "Differs.", "url": "http://x/"}})
    NotificationEvent.objects.update(created_at=timezone.now() - dt.timedelta(days=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert app.tasks["conflicts.tasks.send_daily_digests"].apply().get() == 1
    assert [m.to for m in mailoutbox] == [["dan@example.com"]] and "A vs B: Differs." in mailoutbox[0].body


def test_bad_settings_name_the_field_and_write_nothing(kb):
    for kwargs, field in (({"url": "ftp://example.com/x"}, "url"), ({"url": "http://10.1.2.3/hook"}, "url"),
                          ({"events": ["conflict.exploded"]}, "events"), ({"events": []}, "events")):
        with pytest.raises(NotificationInputError) as caught:
            webhook_create(knowledge_base=kb, **{"url": "http://93.184.215.14/hook", "events": ["conflict.new"], **kwargs})
        assert caught.value.field == field
    assert "private address" in str(pytest.raises(NotificationInputError, webhook_create, knowledge_base=kb,
                                                  url="http://10.1.2.3/hook", events=["conflict.new"]).value)
    with pytest.raises(NotificationInputError, match="at least 1") as caught:
        notification_settings_update(knowledge_base=kb, min_seen=0, min_cited=1, email_recipients=[], email_mode="off")
    assert caught.value.field == "min_seen"
    assert not Webhook.objects.exists() and not AuditEvent.objects.filter(action__startswith="webhook").exists()


def test_the_secret_is_stored_encrypted_signs_and_can_be_replaced(kb):
    webhook, secret = webhook_create(knowledge_base=kb, url="http://93.184.215.14/hook", events=["conflict.new"])
    assert secret.startswith("whsec_") and secret not in webhook.secret_encrypted
    assert webhook.secret_hint == secret[:10]
    assert webhook_secret_reveal(Webhook.objects.get(pk=webhook.pk)) == secret
    body = b'{"a":1}'
    assert webhook_signature(secret, body).startswith("sha256=") and len(webhook_signature(secret, body)) == 71
    rotated, new_secret = webhook_rotate_secret(webhook=webhook)
    assert new_secret != secret and webhook_secret_reveal(rotated) == new_secret
    assert list(AuditEvent.objects.filter(target_id=str(webhook.pk)).values_list("action", flat=True).order_by("pk")) == [
        "webhook.created", "webhook.secret_rotated"]


def test_the_secret_survives_a_secret_key_rotation_with_the_old_key_as_fallback(kb, settings):
    webhook, secret = webhook_create(knowledge_base=kb, url="http://93.184.215.14/hook", events=["conflict.new"])
    old_key = settings.SECRET_KEY
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "a-new-key-" + "x" * 50, [old_key]
    assert webhook_secret_reveal(webhook) == secret
    settings.SECRET_KEY_FALLBACKS = []
    from conflicts.services.notifications import InvalidSecret

    with pytest.raises(InvalidSecret):
        webhook_secret_reveal(webhook)


def test_a_dated_snooze_that_expires_ends_with_its_activity_row_once(kb, articles):
    rita = make_user("rita", kb)
    dated = make_conflict(kb, articles[0], articles[1])
    later = make_conflict(kb, articles[2], articles[3])
    conflict_snooze(conflict=dated, actor=rita, until=timezone.now() + dt.timedelta(hours=1), more_sightings=5)
    conflict_snooze(conflict=later, actor=rita, until=timezone.now() + dt.timedelta(days=3))
    assert conflicts_snooze_expire() == 0

    in_two_hours = timezone.now() + dt.timedelta(hours=2)
    dated.refresh_from_db()
    assert not dated.snoozed_at(in_two_hours)  # whichever comes first: the date, before the 5 sightings
    assert conflicts_snooze_expire(now=in_two_hours) == 1
    assert conflicts_snooze_expire(now=in_two_hours) == 0  # never twice
    dated.refresh_from_db()
    assert (dated.snoozed_until, dated.snoozed_until_seen) == (None, None)
    row = ConflictActivity.objects.filter(conflict=dated).first()
    assert row.kind == ActivityKind.UNSNOOZED and row.note.startswith("Snooze ended: ") and "has passed" in row.note
    assert row.actor is None
    assert ConflictActivity.objects.filter(conflict=later, kind=ActivityKind.UNSNOOZED).count() == 0
    assert app.tasks["conflicts.tasks.end_expired_snoozes"].apply().get() == 0  # beat's task: nothing else due


def test_the_queue_does_not_end_snoozes_on_a_get(client, kb, articles):
    from django.urls import reverse

    from tests.conflicts.console_support import PASSWORD

    rita = make_user("rita", kb)
    conflict = make_conflict(kb, articles[0], articles[1])
    conflict_snooze(conflict=conflict, actor=rita, until=timezone.now() + dt.timedelta(hours=1))
    Conflict.objects.filter(pk=conflict.pk).update(snoozed_until=timezone.now() - dt.timedelta(minutes=1))
    client.login(username="rita", password=PASSWORD)
    assert client.get(reverse("conflict_queue")).status_code == 200
    assert client.get(reverse("conflict_detail", args=[conflict.pk])).status_code == 200
    assert not ConflictActivity.objects.filter(conflict=conflict, kind=ActivityKind.UNSNOOZED).exists()
    assert conflicts_snooze_expire() == 1


def test_the_digest_lists_a_one_article_finding_without_an_empty_second_side(kb, articles):
    from agents.igd.pipeline import MemoryDisagreement
    from conflicts.services.answering import answer_settings_update
    from conflicts.services.disagreements import model_disagreement_record
    from conflicts.services.turns import RetrievedRef, turn_report

    notification_settings_update(knowledge_base=kb, min_seen=1, min_cited=1, email_recipients=["inbox@example.com"],
                                 email_mode="digest")
    answer_settings_update(knowledge_base=kb, default_mode="strict", record_model_disagreements=True)
    turn, _ = turn_report(knowledge_base=kb, external_id="t-finding", question="When?",
                          retrieved=[RetrievedRef(ref=articles[0].external_ref, rank=1)])
    model_disagreement_record(turn=turn, disagreement=MemoryDisagreement(
        ref=articles[0].external_ref, passage="", context_preview="9 am", memory_preview="10 am",
        memory_ratio=8.0, user_ratio=0.5))
    pair = make_conflict(kb, articles[1], articles[2], explanation="Prices differ.")
    from conflicts.services.notifications import notify_conflict_sighting
    notify_conflict_sighting(conflict=pair)

    assert digest_send(day=timezone.localdate()) == 1
    body = NotificationDelivery.objects.get(channel="digest").body
    finding_line = next(line for line in body.splitlines() if line.startswith(f"  - {articles[0].title}"))
    assert " vs " not in finding_line and "it answered “10 am”" in finding_line
    assert f"  - {articles[1].title} vs {articles[2].title}: Prices differ." in body


def test_a_delivery_whose_webhook_was_deleted_is_not_sent_again(kb, articles, hook):
    from conflicts.services.notifications import notification_delivery_retry, webhook_delete

    conflict = make_conflict(kb, articles[0], articles[1])
    event = NotificationEvent.objects.create(knowledge_base=kb, conflict=conflict, kind="conflict.new")
    failed = NotificationDelivery.objects.create(
        knowledge_base=kb, channel="webhook", event=event, webhook=hook, target=hook.url, body="{}",
        status=DeliveryStatus.FAILED, last_error="HTTP 500 from the receiver", next_attempt_at=timezone.now())
    assert failed.sendable_again
    webhook_delete(webhook=hook)
    failed.refresh_from_db()
    assert failed.webhook_id is None and not failed.sendable_again
    with pytest.raises(NotificationInputError, match="webhook was deleted"):
        notification_delivery_retry(delivery=failed)
    failed.refresh_from_db()
    assert failed.status == DeliveryStatus.FAILED  # not queued again, and no "retried" audit row
    assert not AuditEvent.objects.filter(action="notifications.retried").exists()


@pytest.mark.django_db(transaction=True)
def test_a_webhook_deleted_while_an_event_is_recorded_waits_and_fails_its_new_delivery(kb, articles, hook, monkeypatch):
    import threading

    from django.db import connection, transaction

    from conflicts.services import notifications

    conflict = make_conflict(kb, articles[0], articles[1])
    monkeypatch.setattr(notifications, "enqueue", lambda row: row)
    webhooks_read, errors = threading.Event(), []
    real_settings_for = notifications.notification_settings_for

    def settings_for(kb_id):  # runs after the webhooks are read, before their deliveries are written
        webhooks_read.set()
        deleter.join(timeout=1.0)  # unlocked, the delete commits now; locked, it waits for this transaction
        return real_settings_for(kb_id)

    def delete():
        try:
            webhooks_read.wait(timeout=10)
            notifications.webhook_delete(webhook=hook)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    deleter = threading.Thread(target=delete)
    deleter.start()
    monkeypatch.setattr(notifications, "notification_settings_for", settings_for)
    with transaction.atomic():
        event = notifications._event_record(conflict=conflict, kind="conflict.new")
    deleter.join(timeout=10)
    assert errors == [] and not deleter.is_alive()
    delivery = NotificationDelivery.objects.get(event=event, channel="webhook")
    assert (delivery.webhook_id, delivery.status, delivery.last_error) == (None, DeliveryStatus.FAILED,
                                                                           "the webhook was deleted")


def test_the_digest_lists_a_conflict_that_came_back_twice_once(kb, articles):
    """Issue 29 (10): two regressions of one conflict in the day are one digest line saying '2 times'."""
    notification_settings_update(knowledge_base=kb, min_seen=1, min_cited=1, email_recipients=["inbox@example.com"],
                                 email_mode="digest")
    twice = make_conflict(kb, articles[0], articles[1], explanation="Prices differ.")
    once = make_conflict(kb, articles[1], articles[2], explanation="Hours differ.")
    for key, conflict in (("1", twice), ("2", once), ("3", twice)):
        NotificationEvent.objects.create(knowledge_base=kb, conflict=conflict, kind="conflict.regressed", key=key,
                                         payload={"conflict": {"articles": [{"title": f"A{conflict.pk}"},
                                                                            {"title": f"B{conflict.pk}"}],
                                                               "explanation": conflict.explanation, "url": "http://x/"}})
    assert digest_send(day=timezone.localdate()) == 1
    digest = NotificationDelivery.objects.get(channel="digest")
    assert digest.body.count("Prices differ.") == 1 and "Prices differ. (2 times)" in digest.body
    assert digest.body.count("Hours differ.") == 1 and "Hours differ. (" not in digest.body
    assert "2 regressed:" in digest.body and "— 2 regressed" in digest.subject
