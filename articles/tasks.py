"""Thin Celery wrappers: ids in, a service does the work; each job task registered for its row model
(kbreview.jobs.enqueue sends it)."""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

from articles import indexing, sources, sources_sync
from articles.models import IndexSyncJob, SourceSync
from kbreview.jobs import job_task


# A full re-sync of a large knowledge base may take long: its liveness is the job's heartbeat (progress
# after every batch, each far shorter than CELERY_TASK_TIME_LIMIT), not the task's total run time.
@job_task(IndexSyncJob, name="index_sync")
@shared_task(bind=True, acks_late=True, time_limit=6 * 3600, soft_time_limit=6 * 3600 - 60)
def run_index_sync_job(self, job_id: int) -> str:
    return indexing.index_sync_job_run(job_id=job_id).status


@job_task(SourceSync, name="source_sync")
@shared_task(
    bind=True, max_retries=2, default_retry_delay=30, acks_late=True,
    time_limit=settings.SOURCE_SYNC_TIME_LIMIT_S, soft_time_limit=settings.SOURCE_SYNC_TIME_LIMIT_S - 30,
)
def run_source_sync(self, sync_id: int) -> str:
    return sources_sync.source_sync_run(sync_id=sync_id).status


@shared_task(acks_late=True)
def sync_due_sources() -> int:
    """Every 5 minutes (Celery beat): a sync row for each source whose schedule is due."""
    return len(sources.sources_sync_due())
