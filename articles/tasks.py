"""Thin Celery wrappers: ids in, a service does the work."""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

from articles import services, sources


# A full re-sync of a large knowledge base may take long: its liveness is the job's heartbeat (progress
# after every batch, each far shorter than CELERY_TASK_TIME_LIMIT), not the task's total run time.
@shared_task(bind=True, acks_late=True, time_limit=6 * 3600, soft_time_limit=6 * 3600 - 60)
def run_index_sync_job(self, job_id: int) -> str:
    return services.index_sync_job_run(job_id=job_id).status


@shared_task(bind=True, max_retries=3, default_retry_delay=5, acks_late=True)
def reindex_article(self, article_id: int) -> int:
    return services.article_reindex(article_id=article_id)


@shared_task(
    bind=True, max_retries=2, default_retry_delay=30, acks_late=True,
    time_limit=settings.SOURCE_SYNC_TIME_LIMIT_S, soft_time_limit=settings.SOURCE_SYNC_TIME_LIMIT_S - 30,
)
def run_source_sync(self, sync_id: int) -> str:
    return sources.source_sync_run(sync_id=sync_id).status


@shared_task(acks_late=True)
def sync_due_sources() -> int:
    return len(sources.sources_sync_due())
