"""A real HTTP webhook receiver on loopback that checks each request's HMAC-SHA256 signature the way a
customer's receiver would (its own code, not the project's), and answers as a test scripts it: a status,
a delay (for timeouts), or not at all (stopped: nothing listens on its port)."""
from __future__ import annotations

import hashlib
import hmac
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Received:
    path: str
    headers: dict
    body: bytes
    signature_valid: bool
    answered: int
    at: float  # time.monotonic() when it arrived


@dataclass
class Answer:
    status: int = 200
    delay_s: float = 0.0


class WebhookReceiver:
    def __init__(self) -> None:
        self.secret = ""  # set by the test from the secret the console showed once
        self.received: list[Received] = []
        self.script: list[Answer] = []  # answers for the next requests, in order; then `default`
        self.default = Answer()
        self.lock = threading.Lock()
        self.port = 0
        self.httpd: ThreadingHTTPServer | None = None
        self.start()

    def expected_signature(self, body: bytes) -> str:
        return "sha256=" + hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest()

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                arrived = time.monotonic()
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                given = self.headers.get("X-Kbreview-Signature", "")
                valid = bool(receiver.secret) and hmac.compare_digest(given, receiver.expected_signature(body))
                with receiver.lock:
                    answer = receiver.script.pop(0) if receiver.script else receiver.default
                if answer.delay_s:
                    time.sleep(answer.delay_s)
                # A real receiver refuses what it cannot verify.
                status = answer.status if valid else 401
                with receiver.lock:
                    receiver.received.append(Received(self.path, dict(self.headers), body, valid, status, arrived))
                payload = b"ok" if status < 300 else b"no"
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the sender gave up waiting (a timeout test)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.allow_reuse_address = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Nothing listens on the port any more: connections are refused (the receiver is down)."""
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def restart(self) -> None:
        """Back up on the same port."""
        self.stop()
        for _ in range(50):
            try:
                self.start()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"port {self.port} could not be taken again")

    def url(self, path: str = "/hooks/kbreview") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def port_closed(self) -> bool:
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", self.port)) != 0


@pytest.fixture
def webhook_receiver():
    receiver = WebhookReceiver()
    yield receiver
    receiver.stop()
