"""Thin Celery wrappers: ids in, a service does the work."""
from __future__ import annotations

from celery import shared_task

from articles import services


# A full re-sync of a large knowledge base may take long: its liveness is the job's heartbeat (progress
# after every batch, each far shorter than CELERY_TASK_TIME_LIMIT), not the task's total run time.
@shared_task(bind=True, acks_late=True, time_limit=6 * 3600, soft_time_limit=6 * 3600 - 60)
def run_index_sync_job(self, job_id: int) -> str:
    return services.index_sync_job_run(job_id=job_id).status

