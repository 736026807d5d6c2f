"""The articles app's outbox: source syncs and index re-syncs are rows first, sent after commit; a broker
outage fails no request and the sweeper sends the row once the broker is back."""
import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from articles.models import Article, Chunk, IndexSyncJob, SourceSync, SyncStatus
from articles.sources import source_create, source_files_upload
from kbreview.jobs import jobs_sweep
from tests.conflicts.console_support import make_user
from tests.factories import make_article

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def ops(kb):
    return make_user("otto", kb, "ops")


def test_a_source_sync_requested_while_the_broker_is_down_succeeds_and_the_sweeper_runs_it_later(
    client, kb, ops, unreachable_broker, django_capture_on_commit_callbacks
):
    source = source_create(knowledge_base=kb, name="Uploads", kind="upload")
    source_files_upload(source=source, files=[("hours.md", b"# Opening hours\n\nThe office opens at nine.\n")])
    client.force_login(ops)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(reverse("source_sync_start", args=[source.pk]), **HTMX)
    assert response.status_code == 200 and 'hx-trigger="every 1s"' in response.content.decode()
    assert len(callbacks) == 1  # handed to the publisher thread after commit; its send failed, swallowed
    sync = SourceSync.objects.get(source=source)
    assert sync.status == SyncStatus.QUEUED

    assert jobs_sweep()["source_sync"] == 0  # too fresh to be re-sent
    assert jobs_sweep(older_than_s=0)["source_sync"] == 0  # broker still down: kept, not lost
    sync.refresh_from_db()
    assert sync.status == SyncStatus.QUEUED

    unreachable_broker.end()  # the broker is back (tasks run here, as a worker would)
    assert jobs_sweep(older_than_s=0)["source_sync"] == 1
    sync.refresh_from_db()
    assert sync.status == SyncStatus.DONE and sync.counts["created"] == 1
    assert Article.objects.filter(knowledge_base=kb, external_ref="hours").exists()
    left = jobs_sweep(older_than_s=0)
    assert (left["index_sync"], left["source_sync"]) == (0, 0)  # nothing left


def test_a_resync_requested_while_the_broker_is_down_succeeds_and_the_sweeper_runs_it_later(
    client, kb, ops, unreachable_broker, django_capture_on_commit_callbacks
):
    article = make_article(kb, "faq-trolleys", "Luggage trolleys are free at both terminals.", index=False)
    client.force_login(ops)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("ops_resync"), {"full": "on"}, **HTMX)
    assert response.status_code == 200
    job = IndexSyncJob.objects.get(knowledge_base=kb)
    assert job.status == SyncStatus.QUEUED
    assert jobs_sweep(older_than_s=0)["index_sync"] == 0

    unreachable_broker.end()
    assert jobs_sweep(older_than_s=0)["index_sync"] == 1
    job.refresh_from_db()
    assert (job.status, job.done, job.total) == (SyncStatus.DONE, 1, 1)
    assert Chunk.objects.filter(article=article).exists()


def test_a_source_sync_left_running_by_a_dead_worker_is_sent_again_and_a_live_one_is_not(kb, unreachable_broker):
    source = source_create(knowledge_base=kb, name="Uploads", kind="upload")
    source_files_upload(source=source, files=[("hours.md", b"# Opening hours\n\nThe office opens at nine.\n")])
    from articles.sources import source_sync_request

    sync = source_sync_request(source=source)  # no commit in this test: nothing was sent
    held_since = timezone.now()  # claimed by a worker (its lease) that is still within the time limit
    SourceSync.objects.filter(pk=sync.pk).update(status=SyncStatus.RUNNING, started_at=held_since,
                                                 claimed_at=held_since, heartbeat_at=held_since, attempts=1)
    unreachable_broker.end()
    assert jobs_sweep(older_than_s=0)["source_sync"] == 0  # its worker is still within the limit

    from django.conf import settings

    SourceSync.objects.filter(pk=sync.pk).update(
        heartbeat_at=timezone.now() - dt.timedelta(seconds=settings.SOURCE_SYNC_TIME_LIMIT_S + 1)
    )
    assert jobs_sweep(older_than_s=3600)["source_sync"] == 1
    sync.refresh_from_db()
    assert sync.status == SyncStatus.DONE
