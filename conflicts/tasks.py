"""Thin Celery wrappers: ids in, idempotent services, bounded retries."""
from __future__ import annotations

from celery import shared_task

from conflicts.services.detection import turn_detect


@shared_task(bind=True, max_retries=3, default_retry_delay=5, acks_late=True, time_limit=120, soft_time_limit=90)
def detect_turn(self, turn_id: int) -> str:
    try:
        return turn_detect(turn_id=turn_id).outcome
    except Exception as exc:  # database hiccup etc.; detector faults are already recorded as outcomes
        raise self.retry(exc=exc)


@shared_task(bind=True, max_retries=3, default_retry_delay=10, acks_late=True, time_limit=300, soft_time_limit=240)
def compute_suggestion(self, conflict_id: int) -> str:
    from conflicts.services.suggestions import suggestion_compute

    try:
        return suggestion_compute(conflict_id=conflict_id).status
    except Exception as exc:
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

    ids = list(KnowledgeBase.objects.values_list("pk", flat=True))
    for kb_id in ids:
        induce_rules.delay(kb_id)
    return len(ids)


@shared_task
def requeue_stale_detections() -> int:
    """Every few minutes (Celery beat): turns whose check was lost with a dead worker are checked again."""
    from conflicts.services.detection import detection_requeue_stale

    return detection_requeue_stale()
