"""Thin Celery wrappers: ids in, a service does the work."""
from __future__ import annotations

from celery import shared_task

from articles import services


@shared_task(bind=True, max_retries=3, default_retry_delay=10, acks_late=True)
def run_index_sync_job(self, job_id: int) -> str:
    job = services.index_sync_job_run(job_id=job_id)
    return job.status


@shared_task(bind=True, max_retries=3, default_retry_delay=5, acks_late=True)
def reindex_article(self, article_id: int) -> int:
    return services.article_reindex(article_id=article_id)
