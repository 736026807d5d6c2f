"""The outbox's sending half: no request waits on the broker (the publisher thread sends after commit),
a slow or dead broker is backed off from, and a process that exits at once still sends what it committed."""
import base64
import json
import socket
import subprocess
import sys
import threading
import time

import pytest

from conflicts.models import InductionRun, InductionStatus
from kbreview import jobs
from kbreview.celery import app
from tests.support import processes


@pytest.fixture
def stalling_broker():
    """A 'Redis' that accepts connections and hangs up on each after a second, as a broker in trouble does."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            threading.Timer(1.0, conn.close).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    saved = processes.point_app_at(task_always_eager=False, broker_url=f"redis://127.0.0.1:{server.getsockname()[1]}/0",
                                   broker_transport_options={})
    yield
    jobs.publisher.flush(30.0)
    stop.set()
    thread.join()
    server.close()
    processes.point_app_at(**saved)


@pytest.mark.django_db
def test_a_committed_request_never_waits_on_a_stalling_broker(kb, stalling_broker, django_capture_on_commit_callbacks):
    skipped_before = jobs.publisher.skipped
    started = time.perf_counter()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        jobs.enqueue(InductionRun(knowledge_base=kb, status=InductionStatus.QUEUED))
        jobs.enqueue(InductionRun(knowledge_base=kb, status=InductionStatus.QUEUED))
    handed_over = time.perf_counter() - started
    assert len(callbacks) == 2
    assert handed_over < 0.5  # the broker hangs up only after 1 s: the request did not wait for it

    assert jobs.publisher.flush(30.0)
    # The first send failed after the broker hung up; the second was left to the sweeper at once.
    assert jobs.publisher.skipped == skipped_before + 1


def test_a_process_that_exits_at_once_still_sends_what_it_committed(tmp_path):
    folder = tmp_path / "broker"
    code = ("import django; django.setup()\n"
            "from kbreview.jobs import _hand_over\n"  # what enqueue does on commit
            "_hand_over('conflicts.tasks.detect_turn', 41)\n"
            "_hand_over('conflicts.tasks.detect_turn', 42)\n")
    env = processes.base_env(FILESYSTEM_BROKER_DIR=folder, DJANGO_SETTINGS_MODULE="kbreview.settings")
    subprocess.run([sys.executable, "-c", code], cwd=processes.ROOT, env=env, check=True, timeout=300)
    sent = []
    for path in (folder / "messages").glob("*.msg"):
        message = json.loads(path.read_bytes())
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        sent.append((message["headers"]["task"], args))
    assert sorted(sent) == [("conflicts.tasks.detect_turn", [41]), ("conflicts.tasks.detect_turn", [42])]


def test_tests_running_tasks_eagerly_send_in_the_committing_thread():
    assert app.conf.task_always_eager  # the suite's default (tests/conftest.py)
    calls = []
    original = jobs.send
    jobs.send = lambda name, *args: calls.append((threading.current_thread().name, name, args))
    try:
        jobs._hand_over("conflicts.tasks.detect_turn", 7)
    finally:
        jobs.send = original
    assert calls == [(threading.current_thread().name, "conflicts.tasks.detect_turn", (7,))]
