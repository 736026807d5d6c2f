"""Every enqueue of background work, in one place, and the sweeper that re-sends what was left behind.

Work is first a row written in the caller's transaction (a turn's DetectionRun, a SuggestionJob, an
IndexSyncJob); the row is the truth and a broker message only wakes a worker for it. Messages go out
after commit, and a broker that cannot be reached fails nothing: the row stays queued and the sweeper
(Celery beat, every TASK_SWEEP_INTERVAL_S, in every configuration) sends it again. Workers claim a row
with a conditional update before working on it, so a duplicate message does nothing.

Tasks are sent by name, so services can enqueue without importing the task modules that import them.
"""
from __future__ import annotations

import datetime as dt
import functools
import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from kbreview.celery import app, claim_expiry

logger = logging.getLogger(__name__)

DETECT_TURN = "conflicts.tasks.detect_turn"
COMPUTE_SUGGESTION = "conflicts.tasks.compute_suggestion"
INDUCE_RULES = "conflicts.tasks.induce_rules"
RUN_INDEX_SYNC_JOB = "articles.tasks.run_index_sync_job"
DELIVER_NOTIFICATION = "conflicts.tasks.deliver_notification"
TASK_NAMES = (DETECT_TURN, COMPUTE_SUGGESTION, INDUCE_RULES, RUN_INDEX_SYNC_JOB, DELIVER_NOTIFICATION)


def _send(task_name: str, *args, countdown: float | None = None) -> bool:
    """Publish one message now (to run after `countdown` seconds); False (logged) when the broker
    cannot take it."""
    try:
        app.signature(task_name, args=args).apply_async(countdown=countdown)
    except Exception as exc:  # broker unreachable: the committed row waits for the sweeper
        logger.warning("could not enqueue %s%r (%s: %s); the sweeper will send it again",
                       task_name, args, type(exc).__name__, exc)
        return False
    return True


def _send_on_commit(task_name: str, *args) -> None:
    # robust: whatever happens here, a committed request must not turn into an error.
    transaction.on_commit(functools.partial(_send, task_name, *args), robust=True)


def detection_enqueue(*, turn_id: int) -> None:
    """Check a turn once the transaction that recorded it (and its queued DetectionRun) commits."""
    mode = settings.DETECTION_DISPATCH
    if mode == "inline":
        transaction.on_commit(lambda: app.tasks[DETECT_TURN].apply(args=[turn_id]))
    elif mode == "celery":
        _send_on_commit(DETECT_TURN, turn_id)


def detection_wake(*, turn_ids: list[int]) -> None:
    """Send the queued turns' detection messages again after commit (a worker left them for a batch that was
    full); a duplicate message does nothing. Inline and off dispatch send nothing (the sweeper skips off too)."""
    if settings.DETECTION_DISPATCH == "celery":
        for turn_id in turn_ids:
            _send_on_commit(DETECT_TURN, turn_id)


def suggestion_enqueue(*, conflict_id: int, force: bool = False):
    """Queue a suggestion computation for the conflict's current article versions, once per versions.

    Nothing is queued when one is pending for these versions, nor (unless `force`: a reviewer asked)
    when one already finished for them. Returns the new SuggestionJob or None.
    """
    from articles.models import Article
    from conflicts.models import Conflict, JobStatus, SuggestionJob

    conflict = Conflict.objects.only("article_low_id", "article_high_id").get(pk=conflict_id)
    versions = dict(
        Article.objects.filter(pk__in=(conflict.article_low_id, conflict.article_high_id)).values_list(
            "pk", "current_version_id"
        )
    )
    key = {"conflict_id": conflict_id, "version_low_id": versions[conflict.article_low_id],
           "version_high_id": versions[conflict.article_high_id]}
    existing = SuggestionJob.objects.filter(**key)
    if existing.filter(status__in=(JobStatus.QUEUED, JobStatus.RUNNING)).exists():
        return None
    if not force and existing.filter(status=JobStatus.DONE).exists():
        return None
    try:
        with transaction.atomic():
            job = SuggestionJob.objects.create(**key)
    except IntegrityError:  # a concurrent request queued the same versions first
        return None
    _send_on_commit(COMPUTE_SUGGESTION, job.pk)
    return job


def rule_induction_enqueue(*, knowledge_base_id: int, actor_id: int | None = None) -> None:
    # The InductionRun row is written by the run itself: a lost induction is simply run again next night.
    _send_on_commit(INDUCE_RULES, knowledge_base_id, actor_id)


def index_sync_start(*, knowledge_base, full: bool = False, actor=None):
    """Record a re-sync job and have a worker run it once the transaction commits."""
    from articles.services import index_sync_job_create

    with transaction.atomic():
        job = index_sync_job_create(knowledge_base=knowledge_base, full=full, actor=actor)
        _send_on_commit(RUN_INDEX_SYNC_JOB, job.pk)
    return job


def notification_deliver(*, delivery_id: int) -> None:
    """Send a NotificationDelivery once the transaction that made it commits."""
    _send_on_commit(DELIVER_NOTIFICATION, delivery_id)


def notification_retry_later(*, delivery_id: int, countdown: float) -> None:
    """Wake a worker for the delivery's next attempt (its row already says when; a lost message is
    re-sent by the sweeper once that moment has passed)."""
    _send(DELIVER_NOTIFICATION, delivery_id, countdown=max(countdown, 0.0))


def jobs_sweep(*, older_than_s: float | None = None) -> dict[str, int]:
    """Send again every work row left queued longer than `older_than_s` (default: one sweep interval),
    and every row whose worker's claim has expired. Safe to repeat: workers claim before working."""
    from articles.models import IndexSyncJob, SyncStatus
    from conflicts.models import DeliveryStatus, DetectionOutcome, DetectionRun, JobStatus, NotificationDelivery, SuggestionJob

    waited = settings.TASK_SWEEP_INTERVAL_S if older_than_s is None else older_than_s
    cutoff, expired = timezone.now() - dt.timedelta(seconds=waited), claim_expiry()
    sent = {"detection": 0, "suggestion": 0, "index_sync": 0, "notification": 0}
    if settings.DETECTION_DISPATCH != "off":
        stale_runs = DetectionRun.objects.filter(outcome=DetectionOutcome.QUEUED).filter(
            Q(claimed_at__isnull=True, created_at__lt=cutoff) | Q(claimed_at__lt=expired)
        )
        for turn_id in stale_runs.values_list("turn_id", flat=True):
            sent["detection"] += _send(DETECT_TURN, turn_id)
    stale_suggestions = SuggestionJob.objects.filter(
        Q(status=JobStatus.QUEUED, created_at__lt=cutoff) | Q(status=JobStatus.RUNNING, claimed_at__lt=expired)
    )
    for job_id in stale_suggestions.values_list("pk", flat=True):
        sent["suggestion"] += _send(COMPUTE_SUGGESTION, job_id)
    stale_syncs = IndexSyncJob.objects.filter(
        Q(status=SyncStatus.QUEUED, created_at__lt=cutoff) | Q(status=SyncStatus.RUNNING, heartbeat_at__lt=expired)
    )
    for job_id in stale_syncs.values_list("pk", flat=True):
        sent["index_sync"] += _send(RUN_INDEX_SYNC_JOB, job_id)
    # A delivery is due at next_attempt_at; one still queued a sweep interval after that lost its message.
    stale_deliveries = NotificationDelivery.objects.filter(
        Q(status=DeliveryStatus.QUEUED, next_attempt_at__lt=cutoff) | Q(status=DeliveryStatus.SENDING, claimed_at__lt=expired)
    )
    for delivery_id in stale_deliveries.values_list("pk", flat=True):
        sent["notification"] += _send(DELIVER_NOTIFICATION, delivery_id)
    if any(sent.values()):
        logger.info("sweeper re-sent %s", sent)
    return sent
