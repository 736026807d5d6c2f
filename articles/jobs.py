"""Every enqueue of the articles app's background work (index re-syncs, source syncs) and its part of
the sweep. The mechanism (send after commit, never fail the request) is kbreview/jobs.py's; the
sweeper task (conflicts.tasks.sweep_jobs) calls `articles_jobs_sweep` with the other apps' sweeps."""
from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from articles.models import IndexSyncJob, KnowledgeBase, SourceSync, SyncStatus
from kbreview import jobs as outbox
from kbreview.jobs import claim_expiry, sweep_cutoff

RUN_INDEX_SYNC_JOB = "articles.tasks.run_index_sync_job"
RUN_SOURCE_SYNC = "articles.tasks.run_source_sync"
TASK_NAMES = (RUN_INDEX_SYNC_JOB, RUN_SOURCE_SYNC)


def index_sync_start(*, knowledge_base: KnowledgeBase, full: bool = False, actor=None) -> IndexSyncJob:
    """Record a re-sync job and have a worker run it once the transaction commits."""
    from articles.services import index_sync_job_create

    with transaction.atomic():
        job = index_sync_job_create(knowledge_base=knowledge_base, full=full, actor=actor)
        outbox.send_on_commit(RUN_INDEX_SYNC_JOB, job.pk)
    return job


def source_sync_enqueue(*, sync_id: int) -> None:
    """Have a worker run a recorded SourceSync once the transaction that wrote it commits."""
    outbox.send_on_commit(RUN_SOURCE_SYNC, sync_id)


def articles_jobs_sweep(*, older_than_s: float | None = None) -> dict[str, int]:
    """Send again the re-syncs and source syncs left queued (broker down, message lost) or left running
    by a dead worker. Both runs are idempotent, so a duplicate message does nothing."""
    cutoff, expired = sweep_cutoff(older_than_s), claim_expiry()
    sent = {"index_sync": 0, "source_sync": 0}
    stale_syncs = IndexSyncJob.objects.filter(
        Q(status=SyncStatus.QUEUED, created_at__lt=cutoff) | Q(status=SyncStatus.RUNNING, heartbeat_at__lt=expired)
    )
    for job_id in stale_syncs.values_list("pk", flat=True):
        sent["index_sync"] += outbox.send(RUN_INDEX_SYNC_JOB, job_id)
    # A source sync's hard time limit is SOURCE_SYNC_TIME_LIMIT_S: one running longer lost its worker
    # (source_sync_run takes such a sync over; one running for less is left to its worker).
    dead_before = timezone.now() - dt.timedelta(seconds=settings.SOURCE_SYNC_TIME_LIMIT_S)
    stale_source_syncs = SourceSync.objects.filter(
        Q(status=SyncStatus.QUEUED, created_at__lt=cutoff) | Q(status=SyncStatus.RUNNING, started_at__lt=dead_before)
    )
    for sync_id in stale_source_syncs.values_list("pk", flat=True):
        sent["source_sync"] += outbox.send(RUN_SOURCE_SYNC, sync_id)
    return sent
