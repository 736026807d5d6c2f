"""Thin Celery wrappers: ids in, idempotent services, bounded retries; each job task registered for its row
model (kbreview.jobs.enqueue sends it)."""
from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from conflicts.models import DetectionRun, InductionRun, NotificationDelivery, SuggestionJob
from conflicts.services.deliveries import notification_delivery_attempt
from conflicts.services.detection import turn_detect
from conflicts.services.induction import induction_run_work, rule_induction_enqueue_all
from conflicts.services.notifications import digest_send
from conflicts.services.review import conflicts_snooze_expire
from conflicts.services.suggestions import suggestion_job_run
from kbreview.jobs import job_task, wake


def _detection_dispatch() -> str:
    return settings.DETECTION_DISPATCH


# Hard time limits are the project-wide CELERY_TASK_TIME_LIMIT: the sweeper treats an older claim as dead.
@job_task(DetectionRun, name="detection", args=lambda run: (run.turn_id,), dispatch=_detection_dispatch)
@shared_task(bind=True, max_retries=3, default_retry_delay=5, acks_late=True)
def detect_turn(self, turn_id: int) -> str:
    try:
        return turn_detect(turn_id=turn_id).outcome
    except Exception as exc:  # database hiccup etc.; detector faults are already recorded as outcomes
        raise self.retry(exc=exc)


@job_task(SuggestionJob, name="suggestion")
@shared_task(bind=True, max_retries=3, default_retry_delay=10, acks_late=True)
def compute_suggestion(self, job_id: int) -> str:
    try:
        return suggestion_job_run(job_id=job_id, final=self.request.retries >= self.max_retries).status
    except Exception as exc:  # released (or failed, on the last try) by suggestion_job_run
        if self.request.retries >= self.max_retries:
            raise
        raise self.retry(exc=exc)


@job_task(InductionRun, name="induction")
@shared_task(bind=True, max_retries=2, default_retry_delay=60, acks_late=True, time_limit=1800, soft_time_limit=1700)
def induce_rules(self, run_id: int) -> str:
    return induction_run_work(run_id=run_id).status


@shared_task
def induce_rules_all() -> int:
    """Nightly (Celery beat): one induction run queued per knowledge base."""
    return rule_induction_enqueue_all()


@job_task(NotificationDelivery, name="notification")
@shared_task(acks_late=True)
def deliver_notification(delivery_id: int) -> str:
    """One attempt at a webhook or e-mail delivery; its row schedules (and bounds) the next one."""
    delivery, retry_in = notification_delivery_attempt(delivery_id=delivery_id)
    if retry_in is not None:
        # The row already says when; a lost message is re-sent by the sweeper once that moment has passed.
        wake(delivery, countdown=retry_in)
    return delivery.status if delivery else "missing"


@shared_task
def send_daily_digests() -> int:
    """Daily at NOTIFICATION_DIGEST_HOUR (Celery beat): yesterday's digest to every address that chose it."""
    return digest_send(day=timezone.localdate() - dt.timedelta(days=1))


@shared_task
def end_expired_snoozes() -> int:
    """Every SNOOZE_CHECK_INTERVAL_S (Celery beat): snoozes whose date passed end, each with its activity row."""
    return conflicts_snooze_expire()
