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

from agents.llm_detector import SCHEMA_NAME
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


def start_worker(name: str, **extra_env) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "kbreview", "worker", "--pool=solo", "--loglevel=INFO",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"{name}-{os.getpid()}@%h"],
        cwd=ROOT, env={**worker_env(), **extra_env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def stop_worker(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def celery_worker_process(transactional_db):
    proc = start_worker("test")
    yield proc
    stop_worker(proc)


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


@pytest.fixture
def app_on_redis(settings):
    """Point this process's Celery app at the real broker, as a web process with REDIS_URL would be."""
    from kbreview.celery import app

    saved = {key: app.conf[key] for key in ("task_always_eager", "broker_url", "result_backend")}
    app.conf.update(task_always_eager=False, broker_url=REDIS_URL, result_backend=REDIS_URL)
    settings.DETECTION_DISPATCH = "celery"
    # A clean queue: nothing left over from an earlier run may be redelivered into this one.
    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge("celery")
    yield app
    app.conf.update(**saved)



def wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")


def test_a_worker_killed_mid_detection_loses_nothing(kb, transactional_db, app_on_redis, scripted_llm):
    from conflicts.models import Conflict, DetectionOutcome, DetectionRun
    from conflicts.services.turns import RetrievedRef, turn_report
    from tests.support.scripted_llm import answer, slow, verdict, verdicts, schema_name

    make_article(kb, "faq-fare-a", "A single ticket costs €18.", index=False)
    make_article(kb, "faq-fare-b", "A single ticket costs €22.", index=False)
    llm_env = {
        "OPENAI_BASE_URL": scripted_llm.base_url, "LLM_MODEL": scripted_llm.model, "DETECTION_DETECTOR": "llm",
        "DETECTION_TIMEOUT_S": "60", "LLM_TIMEOUT_S": "60", "CELERY_VISIBILITY_TIMEOUT_S": "3",
        "CELERY_UNACKED_RESTORE_INTERVAL_S": "1",
    }
    scripted_llm.push(slow(60.0))  # the first worker hangs inside the LLM call...
    first = start_worker("doomed", **llm_env)
    try:
        turn, _ = turn_report(
            knowledge_base=kb, external_id="t-killed", question="How much is a ticket?",
            retrieved=[RetrievedRef(ref="faq-fare-a", rank=1), RetrievedRef(ref="faq-fare-b", rank=2)],
        )
        wait_for(lambda: len(scripted_llm.requests) >= 1, 90, "the first worker to call the LLM")
    finally:
        first.kill()  # ...and dies mid-task, without acknowledging the message
        first.wait(timeout=20)
    assert DetectionRun.objects.get(turn=turn).outcome == DetectionOutcome.QUEUED

    scripted_llm.push(answer(verdicts(verdict("faq-fare-a", "faq-fare-b", explanation="€18 vs €22",
                                              snippets={"faq-fare-a": "€18", "faq-fare-b": "€22"}))))
    second = start_worker("heir", **llm_env)
    try:
        run = wait_for(
            lambda: DetectionRun.objects.filter(turn=turn).exclude(outcome=DetectionOutcome.QUEUED).first(),
            120, "the redelivered detection to finish on the second worker",
        )
    finally:
        stop_worker(second)
    assert run.outcome == DetectionOutcome.OK, run.reason
    assert Conflict.objects.filter(knowledge_base=kb).count() == 1
    # one detection call per worker: the lost one and the redelivered one (later calls are the suggestion's)
    detection_calls = [r for r in scripted_llm.requests if schema_name(r) == SCHEMA_NAME]
    assert len(detection_calls) == 2
