"""Tasks on a real Celery worker with Redis at 127.0.0.1:6379 (a separate process, the real broker)."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from celery import Celery
from django.db import connection

from articles.models import Chunk, IndexSyncJob, SyncStatus
from tests.factories import make_article

REDIS_URL = "redis://127.0.0.1:6379/15"
ROOT = Path(__file__).resolve().parents[1]


def redis_reachable() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1):
            return True
    except OSError:
        return False


pytestmark = [
    pytest.mark.worker,
    pytest.mark.skipif(not redis_reachable(), reason="no Redis on 127.0.0.1:6379 (CI machines have one)"),
]


def worker_env() -> dict:
    """The worker must use the test database this process created."""
    env = {**os.environ, "REDIS_URL": REDIS_URL, "DJANGO_SETTINGS_MODULE": "kbreview.settings"}
    name = connection.settings_dict["NAME"]
    if connection.settings_dict.get("EMBEDDED_PGDATA"):
        env["EMBEDDED_DATABASE_NAME"] = name
    else:
        parts = urlsplit(os.environ["DATABASE_URL"])
        env["DATABASE_URL"] = urlunsplit(parts._replace(path=f"/{name}"))
    return env


@pytest.fixture
def celery_worker_process(transactional_db):
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "kbreview", "worker", "--pool=solo", "--loglevel=INFO",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"test-{os.getpid()}@%h"],
        cwd=ROOT, env=worker_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    yield proc
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def client_app():
    app = Celery("kbreview-test-client", broker=REDIS_URL, backend=REDIS_URL)
    yield app
    app.close()


def test_index_sync_job_runs_on_a_real_worker(kb, celery_worker_process, client_app):
    article = make_article(kb, "faq-worker", "Luggage trolleys are free at both terminals.", index=False)
    job = IndexSyncJob.objects.create(knowledge_base=kb)
    result = client_app.send_task("articles.tasks.run_index_sync_job", args=[job.pk])
    try:
        assert result.get(timeout=120) == SyncStatus.DONE
    except Exception:
        celery_worker_process.terminate()
        print(celery_worker_process.stdout.read())
        raise
    job.refresh_from_db()
    assert (job.status, job.done, job.total) == (SyncStatus.DONE, 1, 1)
    assert Chunk.objects.filter(article=article).exists()
    # idempotent: running the finished job again changes nothing
    assert client_app.send_task("articles.tasks.run_index_sync_job", args=[job.pk]).get(timeout=60) == SyncStatus.DONE
