"""`manage.py import_kb`: the files are written here, all or nothing; embedding them is a re-sync job row
(the ops page's progress) that the workers run, or this command when no worker takes it."""
import io
import json

import pytest
from django.core.management import call_command

from articles.models import Article, Chunk, IndexSyncJob, SyncStatus
from kbreview.jobs import jobs_sweep

pytestmark = pytest.mark.django_db


@pytest.fixture
def faq_file(tmp_path):
    path = tmp_path / "faq.json"
    path.write_text(json.dumps([
        {"ref": "faq-1", "title": "Ticket prices", "body": "A single ticket costs 22 euros."},
        {"ref": "faq-2", "title": "Dogs", "body": "Dogs travel free on the upper deck."},
    ]))
    return path


def test_no_worker_taking_the_job_has_the_command_embed_through_the_same_job_row(faq_file):
    # In a test transaction nothing is sent on commit: the job stays queued, as with no worker running.
    out = io.StringIO()
    call_command("import_kb", "--kb", "brand-new", "--worker-grace", "0", str(faq_file), stdout=out)
    job = IndexSyncJob.objects.get(knowledge_base__slug="brand-new")
    assert (job.status, job.done, job.total, job.attempts) == (SyncStatus.DONE, 2, 2, 1)
    assert Chunk.objects.filter(article__knowledge_base__slug="brand-new").count() >= 2
    printed = out.getvalue()
    assert "brand-new: 2 created, 0 updated, 0 unchanged" in printed
    assert f"no worker took job {job.pk} within 0 s; embedding here" in printed
    assert f"brand-new: 2 articles embedded (job {job.pk})" in printed


def test_no_wait_leaves_the_job_to_the_workers_and_the_sweeper(faq_file):
    out = io.StringIO()
    call_command("import_kb", "--kb", "brand-new", "--no-wait", str(faq_file), stdout=out)
    job = IndexSyncJob.objects.get(knowledge_base__slug="brand-new")
    assert job.status == SyncStatus.QUEUED and not Chunk.objects.exists()
    assert f"job {job.pk} queued for the workers" in out.getvalue()
    assert Article.objects.filter(knowledge_base__slug="brand-new").count() == 2  # the import itself is done

    assert jobs_sweep(older_than_s=0)["index_sync"] == 1  # tasks run here (eager), as a worker would
    job.refresh_from_db()
    assert job.status == SyncStatus.DONE and Chunk.objects.exists()


def test_resync_index_enqueues_a_job_and_follows_it_running_it_here_when_no_worker_takes_it(faq_file):
    """resync_index used to embed in its own process with no job row: now a job the ops page shows, run
    through the same lease as a worker's."""
    call_command("import_kb", "--kb", "brand-new", "--no-index", str(faq_file), stdout=io.StringIO())
    assert not IndexSyncJob.objects.exists()
    out = io.StringIO()
    call_command("resync_index", "--kb", "brand-new", "--full", "--worker-grace", "0", stdout=out)
    job = IndexSyncJob.objects.get(knowledge_base__slug="brand-new")
    assert (job.status, job.full, job.done, job.attempts) == (SyncStatus.DONE, True, 2, 1)
    assert Chunk.objects.filter(article__knowledge_base__slug="brand-new").count() >= 2
    assert f"no worker took job {job.pk} within 0 s; embedding here" in out.getvalue()
    assert f"brand-new: 2 articles embedded (job {job.pk})" in out.getvalue()
