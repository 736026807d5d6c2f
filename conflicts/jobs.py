"""Every enqueue of the conflicts app's background work (a turn's detection, a conflict's suggestion,
rule induction) and the sweeper that re-sends what was left behind, here and in articles/jobs.py.

The outbox's mechanism (work row first, message after commit, a broker outage fails nothing) is
kbreview/jobs.py's; workers claim a row with a conditional update, so a duplicate message does nothing.
"""
from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from articles import jobs as articles_jobs
from kbreview.celery import app
from kbreview import jobs as outbox
from kbreview.jobs import claim_expiry, sweep_cutoff

logger = logging.getLogger(__name__)

__all__ = ["claim_expiry", "detection_claim_expiry", "detection_enqueue", "detection_wake", "detection_wake_at", "jobs_sweep",
           "notification_deliver", "notification_retry_later", "rule_induction_enqueue", "suggestion_enqueue",
           "suggestions_enqueue"]

DETECT_TURN = "conflicts.tasks.detect_turn"
COMPUTE_SUGGESTION = "conflicts.tasks.compute_suggestion"
INDUCE_RULES = "conflicts.tasks.induce_rules"
DELIVER_NOTIFICATION = "conflicts.tasks.deliver_notification"
TASK_NAMES = (DETECT_TURN, COMPUTE_SUGGESTION, INDUCE_RULES, DELIVER_NOTIFICATION, *articles_jobs.TASK_NAMES)


def detection_claim_expiry():
    """A turn's check claimed before this moment was abandoned (its worker or its database died): the
    check is bounded by DETECTION_TIMEOUT_S after its batch gate, so its claim need not outlive that by
    more than DETECTION_CLAIM_MARGIN_S, and the sweeper re-sends it within a sweep or two instead of after
    the task's hard time limit (300 s). A worker that overran anyway loses its claim and writes nothing."""
    bound = (settings.DETECTION_TIMEOUT_S + settings.DETECTION_BATCH_WAIT_MS / 1000
             + 4 * settings.WORKER_YIELD_MAX_S + settings.DETECTION_CLAIM_MARGIN_S)
    return timezone.now() - dt.timedelta(seconds=bound)


def detection_enqueue(*, turn_id: int) -> None:
    """Check a turn once the transaction that recorded it (and its queued DetectionRun) commits."""
    mode = settings.DETECTION_DISPATCH
    if mode == "inline":
        transaction.on_commit(lambda: app.tasks[DETECT_TURN].apply(args=[turn_id]))
    elif mode == "celery":
        outbox.send_on_commit(DETECT_TURN, turn_id)


def detection_wake(*, turn_ids: list[int]) -> None:
    """Send the queued turns' detection messages again after commit (a worker left them for a batch that was
    full); a duplicate message does nothing. Inline and off dispatch send nothing (the sweeper skips off too)."""
    if settings.DETECTION_DISPATCH == "celery":
        for turn_id in turn_ids:
            outbox.send_on_commit(DETECT_TURN, turn_id)


def detection_wake_at(*, turn_id: int, countdown: float) -> bool:
    """Wake a worker for the turn's check in `countdown` seconds (the end of its batch's wait), sent now: the
    caller's gate is committed already. False when the broker cannot take it (or dispatch is not Celery)."""
    if settings.DETECTION_DISPATCH != "celery":
        return False
    return outbox.send(DETECT_TURN, turn_id, countdown=max(countdown, 0.0))


def suggestion_enqueue(*, conflict_id: int, force: bool = False):
    """Queue a suggestion computation for the conflict's current article versions, once per versions.

    Nothing is queued when one is pending for these versions, nor (unless `force`: a reviewer asked)
    when one already finished for them, nor ever for a one-article finding. Returns the new SuggestionJob or None.
    """
    from articles.models import Article
    from conflicts.models import Conflict

    conflict = Conflict.objects.only("article_low_id", "article_high_id").get(pk=conflict_id)
    if not conflict.is_pair:
        return None  # a one-article finding has no "which side is right" to suggest
    versions = dict(
        Article.objects.filter(pk__in=(conflict.article_low_id, conflict.article_high_id)).values_list(
            "pk", "current_version_id"
        )
    )
    jobs = suggestions_enqueue(
        keys=[(conflict_id, versions[conflict.article_low_id], versions[conflict.article_high_id])], force=force
    )
    return jobs[0] if jobs else None


def suggestions_enqueue(*, keys: list[tuple[int, int, int]], force: bool = False) -> list:
    """suggestion_enqueue for several (conflict id, version_low id, version_high id) at once: one look-up
    of the jobs pending (or, unless `force`, finished) for those versions and one insert of the missing
    ones. Returns the new SuggestionJobs."""
    from conflicts.models import JobStatus, SuggestionJob

    if not keys:
        return []
    settled = (JobStatus.QUEUED, JobStatus.RUNNING) if force else (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.DONE)
    taken = set(
        SuggestionJob.objects.filter(conflict_id__in={key[0] for key in keys}, status__in=settled)
        .values_list("conflict_id", "version_low_id", "version_high_id")
    )
    missing = sorted(set(keys) - taken)
    if not missing:
        return []
    try:
        with transaction.atomic():
            created = SuggestionJob.objects.bulk_create(
                SuggestionJob(conflict_id=c, version_low_id=low, version_high_id=high) for c, low, high in missing
            )
    except IntegrityError:  # a concurrent request queued some of the same versions first: one by one
        if len(missing) == 1:
            return []
        return [job for key in missing for job in suggestions_enqueue(keys=[key], force=force)]
    for job in created:
        outbox.send_on_commit(COMPUTE_SUGGESTION, job.pk)
    return created


def rule_induction_enqueue(*, knowledge_base_id: int, actor_id: int | None = None) -> None:
    # The InductionRun row is written by the run itself: a lost induction is simply run again next night.
    outbox.send_on_commit(INDUCE_RULES, knowledge_base_id, actor_id)


def notification_deliver(*, delivery_id: int) -> None:
    """Send a NotificationDelivery once the transaction that made it commits."""
    outbox.send_on_commit(DELIVER_NOTIFICATION, delivery_id)


def notification_retry_later(*, delivery_id: int, countdown: float) -> None:
    """Wake a worker for the delivery's next attempt (its row already says when; a lost message is
    re-sent by the sweeper once that moment has passed)."""
    outbox.send(DELIVER_NOTIFICATION, delivery_id, countdown=max(countdown, 0.0))


def jobs_sweep(*, older_than_s: float | None = None) -> dict[str, int]:
    """Send again every work row left queued longer than `older_than_s` (default: one sweep interval),
    and every row whose worker's claim has expired, in this app and in articles. Safe to repeat:
    workers claim before working."""
    from conflicts.models import DeliveryStatus, DetectionOutcome, DetectionRun, JobStatus, NotificationDelivery, SuggestionJob

    cutoff, expired = sweep_cutoff(older_than_s), claim_expiry()
    sent = {"detection": 0, "suggestion": 0, "notification": 0}
    if settings.DETECTION_DISPATCH != "off":
        stale_runs = DetectionRun.objects.filter(outcome=DetectionOutcome.QUEUED).filter(
            Q(claimed_at__isnull=True, created_at__lt=cutoff) | Q(claimed_at__lt=detection_claim_expiry())
        )
        for turn_id in stale_runs.values_list("turn_id", flat=True):
            sent["detection"] += outbox.send(DETECT_TURN, turn_id)
    stale_suggestions = SuggestionJob.objects.filter(
        Q(status=JobStatus.QUEUED, created_at__lt=cutoff) | Q(status=JobStatus.RUNNING, claimed_at__lt=expired)
    )
    for job_id in stale_suggestions.values_list("pk", flat=True):
        sent["suggestion"] += outbox.send(COMPUTE_SUGGESTION, job_id)
    # A delivery is due at next_attempt_at; one still queued a sweep interval after that lost its message.
    stale_deliveries = NotificationDelivery.objects.filter(
        Q(status=DeliveryStatus.QUEUED, next_attempt_at__lt=cutoff) | Q(status=DeliveryStatus.SENDING, claimed_at__lt=expired)
    )
    for delivery_id in stale_deliveries.values_list("pk", flat=True):
        sent["notification"] += outbox.send(DELIVER_NOTIFICATION, delivery_id)
    sent.update(articles_jobs.articles_jobs_sweep(older_than_s=older_than_s))
    if any(sent.values()):
        logger.info("sweeper re-sent %s", sent)
    return sent
