"""The documented production server (gunicorn with kbreview/gunicorn_conf.py), started for real: slow
clients do not stall it, and chunked request bodies are read (issue 28, findings 5 and 7)."""
import http.client
import json
import socket
import subprocess
import sys
import time

import pytest

from tests.support import processes

pytestmark = pytest.mark.worker


@pytest.fixture
def web_server(transactional_db, tmp_path):
    port, log = processes.free_port(), tmp_path / "gunicorn.log"
    env = processes.base_env(DETECTION_DISPATCH="off")
    web = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "kbreview/gunicorn_conf.py", "kbreview.wsgi",
         "--bind", f"127.0.0.1:{port}"], cwd=processes.ROOT, env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT)
    try:
        processes.wait_for(lambda: healthz_seconds(port) is not None, 240, "gunicorn to serve", logs=[log])
        yield port
    finally:
        processes.stop(web)


def healthz_seconds(port: int) -> float | None:
    started = time.monotonic()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/healthz")
        ok = connection.getresponse().status == 200
        connection.close()
    except OSError:
        return None
    return time.monotonic() - started if ok else None


def test_slow_clients_do_not_stall_the_server(web_server):
    port = web_server
    slow = []
    for _ in range(4):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"POST /api/v1/turns HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 5000\r\n\r\n{")
        slow.append(sock)
    try:
        timings = []
        for _ in range(10):
            for sock in slow:  # a byte now and then: each connection stays open and unfinished
                sock.sendall(b" ")
            timings.append(healthz_seconds(port))
            time.sleep(0.2)
    finally:
        for sock in slow:
            sock.close()
    assert None not in timings
    assert max(timings) < 1.0, timings


def test_a_chunked_body_is_read(web_server, kb):
    from conflicts.services import api_token_create
    from tests.factories import make_article

    make_article(kb, "faq-a", "The shop opens at nine.", index=False)
    _, secret = api_token_create(knowledge_base=kb, name="chunked")
    body = json.dumps({"external_id": "chunked-1", "question": "When do you open?",
                       "retrieved": [{"ref": "faq-a", "rank": 1}]}).encode()
    connection = http.client.HTTPConnection("127.0.0.1", web_server, timeout=30)
    pieces = [body[i:i + 17] for i in range(0, len(body), 17)]
    connection.request("POST", "/api/v1/turns", body=iter(pieces), encode_chunked=True,
                       headers={"Content-Type": "application/json", "Authorization": f"Bearer {secret}",
                                "Transfer-Encoding": "chunked"})
    response = connection.getresponse()
    payload = json.loads(response.read())
    assert response.status == 202, payload
    assert payload["turn_id"]
