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
