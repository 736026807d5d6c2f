"""Thin Celery wrappers: ids in, idempotent services, bounded retries."""
from __future__ import annotations

from celery import shared_task

from conflicts.services.detection import turn_detect


# Hard time limits are the project-wide CELERY_TASK_TIME_LIMIT: the sweeper treats an older claim as dead.
@shared_task(bind=True, max_retries=3, default_retry_delay=5, acks_late=True)
def detect_turn(self, turn_id: int) -> str:
    try:
        return turn_detect(turn_id=turn_id).outcome
    except Exception as exc:  # database hiccup etc.; detector faults are already recorded as outcomes
        raise self.retry(exc=exc)


@shared_task(bind=True, max_retries=3, default_retry_delay=10, acks_late=True)
def compute_suggestion(self, job_id: int) -> str:
    from conflicts.models import SuggestionJob
    from conflicts.services.suggestions import suggestion_job_release, suggestion_job_run

    try:
        return suggestion_job_run(job_id=job_id).status
    except Exception as exc:
        job = SuggestionJob.objects.get(pk=job_id)
        final = self.request.retries >= self.max_retries
        suggestion_job_release(job=job, error=f"{type(exc).__name__}: {exc}", final=final)
        if final:
            raise
        raise self.retry(exc=exc)


@shared_task(bind=True, max_retries=2, default_retry_delay=60, acks_late=True, time_limit=1800, soft_time_limit=1700)
def induce_rules(self, knowledge_base_id: int, actor_id: int | None = None) -> str:
    from django.contrib.auth import get_user_model

    from articles.models import KnowledgeBase
    from conflicts.services.suggestions import rule_induction_run

    actor = get_user_model().objects.filter(pk=actor_id).first() if actor_id else None
    return rule_induction_run(knowledge_base=KnowledgeBase.objects.get(pk=knowledge_base_id), actor=actor).status


@shared_task
def induce_rules_all() -> int:
    """Nightly (Celery beat): one induction task per knowledge base."""
    from articles.models import KnowledgeBase

    from conflicts import jobs

    ids = list(KnowledgeBase.objects.values_list("pk", flat=True))
    for kb_id in ids:
        jobs.rule_induction_enqueue(knowledge_base_id=kb_id)
    return len(ids)


@shared_task
def sweep_jobs() -> dict:
    """Every TASK_SWEEP_INTERVAL_S (Celery beat): work rows a dead worker or an unreachable broker left
    queued are sent again."""
    from conflicts.jobs import jobs_sweep

    return jobs_sweep()


@shared_task(acks_late=True)
def deliver_notification(delivery_id: int) -> str:
    """One attempt at a webhook or e-mail delivery; its row schedules (and bounds) the next one."""
    from conflicts import jobs
    from conflicts.services.deliveries import notification_delivery_attempt

    delivery, retry_in = notification_delivery_attempt(delivery_id=delivery_id)
    if retry_in is not None:
        jobs.notification_retry_later(delivery_id=delivery_id, countdown=retry_in)
    return delivery.status if delivery else "missing"


@shared_task
def send_daily_digests() -> int:
    """Daily at NOTIFICATION_DIGEST_HOUR (Celery beat): yesterday's digest to every address that chose it."""
    import datetime as dt

    from django.utils import timezone

    from conflicts.services.notifications import digest_send

    return digest_send(day=timezone.localdate() - dt.timedelta(days=1))


@shared_task
def end_expired_snoozes() -> int:
    """Every SNOOZE_CHECK_INTERVAL_S (Celery beat): snoozes whose date passed end, each with its activity row."""
    from conflicts.services.review import conflicts_snooze_expire

    return conflicts_snooze_expire()
