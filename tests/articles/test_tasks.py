"""Source syncs on a real Celery worker with Redis: by hand (the task) and from the schedule (beat's task),
against pages on a loopback HTTP server."""
import pytest

from articles.models import Article, KnowledgeBase, SourceSync, SyncStatus
from articles.sources import source_create
from tests.support.page_server import html_page
from tests.test_celery_worker import celery_worker_process, client_app, redis_reachable, wait_for  # noqa: F401

pytestmark = [
    pytest.mark.worker,
    pytest.mark.skipif(not redis_reachable(), reason="no Redis on 127.0.0.1:6379 (CI machines have one)"),
]


def test_sync_task_and_the_scheduled_sync_run_on_a_worker(kb, page_server, celery_worker_process, client_app):
    KnowledgeBase.objects.filter(pk=kb.pk).update(allow_private_fetch=True)
    page_server.set("/hours.html", html_page("Opening hours", "The shop opens at nine every weekday."))
    source = source_create(knowledge_base=kb, name="Site", kind="urls", location=page_server.url("/hours.html"),
                           schedule="hourly")
    sync = SourceSync.objects.create(knowledge_base=kb, source=source)
    try:
        assert client_app.send_task("articles.tasks.run_source_sync", args=[sync.pk]).get(timeout=180) == SyncStatus.DONE
        assert Article.objects.filter(knowledge_base=kb, external_ref="hours").exists()
        # Run again (a redelivered message): the finished sync is left as it is.
        assert client_app.send_task("articles.tasks.run_source_sync", args=[sync.pk]).get(timeout=60) == SyncStatus.DONE

        # Beat's task: an hourly source synced more than an hour ago is due; the worker runs the sync it enqueues.
        SourceSync.objects.filter(pk=sync.pk).update(created_at=sync.created_at.replace(year=2020))
        page_server.set("/hours.html", html_page("Opening hours", "The shop now opens at eight every weekday."))
        assert client_app.send_task("articles.tasks.sync_due_sources").get(timeout=60) == 1
        scheduled = wait_for(
            lambda: SourceSync.objects.filter(source=source, trigger="schedule", status=SyncStatus.DONE).first(),
            180, "the scheduled sync to finish",
        )
    except Exception:
        celery_worker_process.terminate()
        print(celery_worker_process.stdout.read())
        raise
    assert scheduled.counts["changed"] == 1
    assert "eight" in Article.objects.get(knowledge_base=kb, external_ref="hours").current_version.body
