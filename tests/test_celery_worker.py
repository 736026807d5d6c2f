"""Tasks on real Celery workers (separate processes): on the embedded default's filesystem broker, and on
Redis at 127.0.0.1:6379 (CI starts one). A worker SIGKILLed mid-detection loses and duplicates nothing."""
import os
import time

import pytest
from celery import Celery

from agents.llm_detector import SCHEMA_NAME
from articles.indexing import index_sync_start
from articles.models import Chunk, SyncStatus
from tests.factories import make_article
from tests.support import processes
from tests.support.scripted_llm import ScriptedLLM, answer, http_error, schema_name, slow, verdict, verdicts

pytestmark = pytest.mark.worker

REDIS_URL = "redis://127.0.0.1:6379/15"
wait_for = processes.wait_for


def redis_reachable() -> bool:
    return processes.port_open(6379)


@pytest.fixture
def celery_worker_process(transactional_db, tmp_path):
    """A worker on Redis (db 15) for tests that send tasks by name through `client_app`."""
    log = tmp_path / "worker.log"
    proc = processes.start_worker("test", processes.base_env(REDIS_URL=REDIS_URL), log=log)
    proc.stdout = open(log, errors="replace")  # what the worker printed, for a failing test to show
    yield proc
    processes.stop(proc)
    proc.stdout.close()


@pytest.fixture
def client_app():
    app = Celery("kbreview-test-client", broker=REDIS_URL, backend=REDIS_URL)
    yield app
    app.close()


@pytest.fixture
def filesystem_broker(tmp_path, settings, transactional_db):
    """This process and the workers it starts share a filesystem broker folder of the test's own."""
    folder = tmp_path / "broker"
    saved = processes.point_app_at(
        task_always_eager=False, broker_url="filesystem://", result_backend=None,
        broker_transport_options=processes.filesystem_broker_options(folder),
    )
    settings.DETECTION_DISPATCH = "celery"
    yield folder
    processes.point_app_at(**saved)


@pytest.fixture
def redis_broker(settings, transactional_db):
    processes.require(processes.port_open(6379), "no Redis on 127.0.0.1:6379 (scripts/test.sh starts one)")
    saved = processes.point_app_at(task_always_eager=False, broker_url=REDIS_URL, result_backend=REDIS_URL,
                                   broker_transport_options={})
    from kbreview.celery import app

    with app.connection_for_write() as conn:  # nothing left over from an earlier run may be redelivered
        conn.default_channel.queue_purge("celery")
    settings.DETECTION_DISPATCH = "celery"
    yield
    processes.point_app_at(**saved)


def test_a_resync_runs_on_a_worker_of_the_embedded_default(kb, filesystem_broker, tmp_path):
    article = make_article(kb, "faq-worker", "Luggage trolleys are free at both terminals.", index=False)
    log = tmp_path / "worker.log"
    worker = processes.start_worker("fs", processes.base_env(FILESYSTEM_BROKER_DIR=filesystem_broker), log=log)
    try:
        job = index_sync_start(knowledge_base=kb, full=True)
        processes.wait_for(lambda: job.__class__.objects.get(pk=job.pk).status == SyncStatus.DONE, 120,
                           "the re-sync to finish on the worker", logs=[log])
    finally:
        processes.stop(worker)
    job.refresh_from_db()
    assert (job.done, job.total, job.attempts) == (1, 1, 1)
    assert Chunk.objects.filter(article=article).exists()
    # The solo pool (these tests' workers) gets the start-up load too, before the first task.
    worker_log = log.read_text(errors="replace")
    assert "embedding model loaded at worker start" in worker_log
    assert "claim detector warmed up at worker start" in worker_log
    assert worker_log.index("warmed up at worker start") < worker_log.index("run_index_sync_job[")


def test_import_kb_hands_the_embedding_to_a_running_worker(kb, filesystem_broker, tmp_path):
    import io
    import json

    from django.core.management import call_command

    from articles.models import IndexSyncJob

    faq = tmp_path / "faq.json"
    faq.write_text(json.dumps([{"ref": "faq-cli", "title": "Trolleys", "body": "Luggage trolleys are free."}]))
    log = tmp_path / "worker.log"
    worker = processes.start_worker("fs", processes.base_env(FILESYSTEM_BROKER_DIR=filesystem_broker), log=log)
    out = io.StringIO()
    try:
        call_command("import_kb", "--kb", kb.slug, "--worker-grace", "120", str(faq), stdout=out)
    finally:
        processes.stop(worker)
    job = IndexSyncJob.objects.get(knowledge_base=kb)
    assert (job.status, job.done, job.attempts) == (SyncStatus.DONE, 1, 1)
    assert "embedding here" not in out.getvalue()  # the worker ran it
    assert "run_index_sync_job[" in log.read_text(errors="replace")
    assert Chunk.objects.filter(article__external_ref="faq-cli").exists()


def test_a_resync_runs_on_a_worker_on_redis(kb, redis_broker, tmp_path):
    article = make_article(kb, "faq-worker", "Luggage trolleys are free at both terminals.", index=False)
    log = tmp_path / "worker.log"
    worker = processes.start_worker("redis", processes.base_env(REDIS_URL=REDIS_URL), log=log)
    try:
        job = index_sync_start(knowledge_base=kb)
        processes.wait_for(lambda: job.__class__.objects.get(pk=job.pk).status == SyncStatus.DONE, 120,
                           "the re-sync to finish on the worker", logs=[log])
    finally:
        processes.stop(worker)
    assert Chunk.objects.filter(article=article).exists()


def fare_verdicts_after_one_hang():
    """The scripted detection model: the first detection call hangs (the worker is killed inside it),
    every later one finds the fare conflict. Other purposes (suggestions) get an error: not under test."""
    state = {"hung": False}

    def respond(request):
        if schema_name(request) != SCHEMA_NAME:
            return http_error(503, "only detection is scripted here")
        if not state["hung"]:
            state["hung"] = True
            return slow(120.0)
        return answer(verdicts(verdict("faq-fare-a", "faq-fare-b", explanation="€18 vs €22",
                                       snippets={"faq-fare-a": "€18", "faq-fare-b": "€22"})))

    return respond


def test_a_worker_killed_mid_detection_then_restarted_detects_every_turn_once(kb, filesystem_broker, tmp_path):
    from conflicts.models import Conflict, ConflictOccurrence, DetectionOutcome, DetectionRun
    from conflicts.services.turns import RetrievedRef, turn_report

    make_article(kb, "faq-fare-a", "A single ticket costs €18.", index=False)
    make_article(kb, "faq-fare-b", "A single ticket costs €22.", index=False)
    turns = 6
    with ScriptedLLM(respond=fare_verdicts_after_one_hang()) as llm:
        env = processes.base_env(
            FILESYSTEM_BROKER_DIR=filesystem_broker, OPENAI_BASE_URL=llm.base_url, LLM_MODEL=llm.model,
            DETECTION_DETECTOR="llm", DETECTION_TIMEOUT_S=4, LLM_TIMEOUT_S=4, DETECTION_BATCH_WAIT_MS=2000,
            # a claim older than the hard time limit is a dead worker's: short here so the test is quick
            CELERY_TASK_TIME_LIMIT=8, CELERY_TASK_SOFT_TIME_LIMIT=6, TASK_SWEEP_INTERVAL_S=1,
        )
        logs = [tmp_path / "doomed.log", tmp_path / "heir.log", tmp_path / "beat.log"]
        doomed = processes.start_worker("doomed", env, log=logs[0])
        try:
            for i in range(turns):
                turn_report(knowledge_base=kb, external_id=f"t-{i}", question="How much is a ticket?",
                            retrieved=[RetrievedRef(ref="faq-fare-a", rank=1), RetrievedRef(ref="faq-fare-b", rank=2)])
            processes.wait_for(lambda: len(llm.requests) >= 1, 120, "the first worker to call the LLM", logs=logs)
        finally:
            doomed.kill()  # SIGKILL inside the LLM call: no acknowledgement, no clean-up
            doomed.wait(timeout=20)
        assert DetectionRun.objects.filter(turn__knowledge_base=kb).exclude(outcome=DetectionOutcome.QUEUED).count() == 0
        # The checks the killed worker held (with batching, its one call may have been for several turns).
        held = set(DetectionRun.objects.filter(turn__knowledge_base=kb, claimed_at__isnull=False)
                   .values_list("turn__external_id", flat=True))
        assert held
        heir = processes.start_worker("heir", env, log=logs[1])
        beat = processes.start_beat(env, tmp_path / "beat-schedule", log=logs[2])
        try:
            processes.wait_for(
                lambda: not DetectionRun.objects.filter(turn__knowledge_base=kb, outcome=DetectionOutcome.QUEUED).exists(),
                180, "every turn to be detected after the restart", logs=logs,
            )
        finally:
            processes.stop(heir)
            processes.stop(beat)
    runs = list(DetectionRun.objects.select_related("turn").filter(turn__knowledge_base=kb).order_by("turn__external_id"))
    assert [r.outcome for r in runs] == [DetectionOutcome.OK] * turns, [r.reason for r in runs]
    # Only the checks the killed worker held ran twice.
    assert {r.turn.external_id: r.attempts for r in runs} == {f"t-{i}": 2 if f"t-{i}" in held else 1 for i in range(turns)}
    conflict = Conflict.objects.get(knowledge_base=kb)
    assert conflict.times_seen == turns
    assert ConflictOccurrence.objects.filter(conflict=conflict).count() == turns


def test_workers_lower_their_cpu_priority(kb, filesystem_broker, tmp_path):
    from django.db import connection

    from conflicts.models import DetectionOutcome, DetectionRun
    from conflicts.services.turns import RetrievedRef, turn_report

    make_article(kb, "faq-fare-a", "A single ticket costs €18.", index=False)
    make_article(kb, "faq-fare-b", "A single ticket costs €22.", index=False)
    log = tmp_path / "worker.log"
    worker = processes.start_worker("nice", processes.base_env(FILESYSTEM_BROKER_DIR=filesystem_broker,
                                                               WORKER_NICENESS=7, DETECTION_DETECTOR="claims"), log=log)
    try:
        assert os.getpriority(os.PRIO_PROCESS, worker.pid) == os.getpriority(os.PRIO_PROCESS, 0) + 7
        # Its queries too: the embedded server's backend serving the worker runs 7 lower than ours.
        turn, _ = turn_report(knowledge_base=kb, external_id="t-1", question="How much is a ticket?",
                              retrieved=[RetrievedRef(ref="faq-fare-a", rank=1), RetrievedRef(ref="faq-fare-b", rank=2)])
        wait_for(lambda: DetectionRun.objects.filter(turn=turn).exclude(outcome=DetectionOutcome.QUEUED).exists(),
                 120, "the worker to check the turn", logs=[log])
        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
            theirs = [row[0] for row in cursor.fetchall()]
        ours = os.getpriority(os.PRIO_PROCESS, connection.connection.info.backend_pid)
        assert theirs and {os.getpriority(os.PRIO_PROCESS, pid) for pid in theirs} == {min(19, ours + 7)}
    finally:
        processes.stop(worker)


def test_a_worker_waits_for_a_gap_in_the_searches_of_this_machine(kb, filesystem_broker, settings, tmp_path):
    """A search held open in this process (the web) keeps the worker's check waiting, up to its bound."""
    import threading

    from conflicts.models import DetectionOutcome, DetectionRun
    from conflicts.services.turns import RetrievedRef, turn_report
    from kbreview.foreground import foreground_work

    make_article(kb, "faq-fare-a", "A single ticket costs €18.", index=False)
    make_article(kb, "faq-fare-b", "A single ticket costs €22.", index=False)
    settings.FOREGROUND_LOCK_FILE = str(tmp_path / "foreground.lock")
    log = tmp_path / "worker.log"
    worker = processes.start_worker("yield", processes.base_env(
        FILESYSTEM_BROKER_DIR=filesystem_broker, DETECTION_DETECTOR="claims",
        FOREGROUND_LOCK_FILE=settings.FOREGROUND_LOCK_FILE, WORKER_YIELD_MAX_S=50), log=log)
    release, held = threading.Event(), threading.Event()

    def search_in_progress() -> None:
        with foreground_work():
            held.set()
            release.wait(120)

    searching = threading.Thread(target=search_in_progress, daemon=True)
    searching.start()
    try:
        assert held.wait(10)
        turn, _ = turn_report(knowledge_base=kb, external_id="t-1", question="How much is a ticket?",
                              retrieved=[RetrievedRef(ref="faq-fare-a", rank=1), RetrievedRef(ref="faq-fare-b", rank=2)])
        processes.wait_for(lambda: "detect_turn[" in log.read_text(errors="replace"), 120,
                           "the worker to receive the check", logs=[log])
        time.sleep(3)
        run = DetectionRun.objects.get(turn=turn)
        # Waiting before the task, not checking: the claim is the task's first step.
        assert (run.outcome, run.claimed_at, run.attempts) == (DetectionOutcome.QUEUED, None, 0)
        release.set()
        wait_for(lambda: DetectionRun.objects.get(turn=turn).outcome == DetectionOutcome.OK, 60,
                 "the check to run once the search ended", logs=[log])
    finally:
        release.set()
        searching.join()
        processes.stop(worker)


def test_a_broker_outage_mid_load_loses_and_duplicates_nothing(kb, client, settings, transactional_db, tmp_path):
    """A Redis of the test's own (no persistence) is stopped while turns arrive and started again: every
    request still gets its 202 at once, and every turn is detected exactly once afterwards."""
    from conflicts.models import Conflict, ConflictOccurrence, DetectionOutcome, DetectionRun
    from conflicts.services import api_token_create

    redis = processes.RedisServer(6390, tmp_path)
    redis.start()
    saved = processes.point_app_at(task_always_eager=False, broker_url=redis.url, result_backend=None,
                                   broker_transport_options={})
    settings.DETECTION_DISPATCH = "celery"
    settings.DETECTION_DETECTOR = "claims"
    make_article(kb, "faq-fare-a", "A single adult ticket to Inishmara costs €18.", index=False)
    make_article(kb, "faq-fare-b", "A single adult ticket to Inishmara costs €22.", index=False)
    _, secret = api_token_create(knowledge_base=kb, name="load")
    env = processes.base_env(REDIS_URL=redis.url, DETECTION_DETECTOR="claims", TASK_SWEEP_INTERVAL_S=1)
    logs = [tmp_path / "worker.log", tmp_path / "beat.log"]
    worker = processes.start_worker("outage", env, log=logs[0])
    beat = processes.start_beat(env, tmp_path / "beat-schedule", log=logs[1])

    def post(i: int) -> None:
        body = {"external_id": f"t-{i}", "question": "How much is a ticket to Inishmara?",
                "retrieved": [{"ref": "faq-fare-a", "rank": 1}, {"ref": "faq-fare-b", "rank": 2}]}
        response = client.post("/api/v1/turns", body, content_type="application/json",
                               HTTP_AUTHORIZATION=f"Bearer {secret}")
        assert response.status_code == 202, response.content

    try:
        for i in range(10):
            post(i)
        redis.stop()  # every message not yet taken is gone with it
        for i in range(10, 25):
            post(i)
        assert DetectionRun.objects.filter(turn__knowledge_base=kb).count() == 25
        redis.start()
        processes.wait_for(
            lambda: not DetectionRun.objects.filter(turn__knowledge_base=kb, outcome=DetectionOutcome.QUEUED).exists(),
            180, "every turn to be detected once the broker is back", logs=logs,
        )
    finally:
        processes.stop(worker)
        processes.stop(beat)
        redis.stop()
        processes.point_app_at(**saved)
    runs = DetectionRun.objects.filter(turn__knowledge_base=kb)
    assert {r.outcome for r in runs} == {DetectionOutcome.OK}
    assert {r.attempts for r in runs} == {1}  # re-sent messages found their turn claimed or done
    conflict = Conflict.objects.get(knowledge_base=kb)
    assert conflict.times_seen == 25 == ConflictOccurrence.objects.filter(conflict=conflict).count()
