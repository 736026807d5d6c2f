"""The one sweeper (Celery beat, every TASK_SWEEP_INTERVAL_S) for every job row type."""
from __future__ import annotations

from celery import shared_task

from kbreview.jobs import jobs_sweep


@shared_task
def sweep_jobs() -> dict:
    """Rows a dead worker or an unreachable broker left behind are sent again (or failed, out of attempts)."""
    return jobs_sweep()
