"""A real HTTP server on loopback serving pages that tests (and bench/source_sync.py) change between syncs.

It answers conditional requests like a well-behaved web server (ETag / If-None-Match and
Last-Modified / If-Modified-Since → 304) and counts what it served. A page can instead answer with a
status, a redirect, a delay, a content type or a size of the caller's choosing.
"""
from __future__ import annotations

import email.utils
import hashlib
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Page:
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    location: str = ""  # for redirects
    delay_s: float = 0.0
    etag: bool = True
    last_modified: bool = True
    modified_at: float = field(default_factory=time.time)

    @property
    def etag_value(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'

    @property
    def last_modified_value(self) -> str:
        return email.utils.formatdate(int(self.modified_at), usegmt=True)


def html_page(title: str, body: str, *, ref: str | None = None) -> bytes:
    paragraphs = "".join(f"<p>{p}</p>" for p in body.split("\n\n"))
    meta = f'<meta name="kb:ref" content="{ref}">' if ref else ""
    return (
        f"<!doctype html><html><head><title>{title}</title>{meta}</head>"
        f"<body><nav><a href='/'>Home</a></nav><main><article><h1>{title}</h1>{paragraphs}</article></main></body></html>"
    ).encode()


class PageServer:
    def __init__(self) -> None:
        self.pages: dict[str, Page] = {}
        self.lock = threading.Lock()
        self.requests: list[tuple[str, int, dict]] = []  # (path, status, request headers)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in two writes; without this Nagle holds the body for the client's ACK.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self) -> None:
                with server.lock:
                    page = server.pages.get(self.path.split("?")[0])
                status = server._answer(self, page)
                with server.lock:
                    server.requests.append((self.path, status, dict(self.headers)))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def set(self, path: str, body: bytes | str, **options) -> Page:
        page = Page(body=body.encode() if isinstance(body, str) else body, **options)
        with self.lock:
            self.pages[path] = page
        return page

    def remove(self, path: str) -> None:
        with self.lock:
            self.pages.pop(path, None)

    def statuses(self, *, since: int = 0) -> list[int]:
        with self.lock:
            return [status for path, status, _ in self.requests[since:] if path != "/robots.txt"]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @staticmethod
    def _answer(handler: BaseHTTPRequestHandler, page: Page | None) -> int:
        if page is None:
            return PageServer._send(handler, 404, b"not found", {"Content-Type": "text/plain"})
        if page.delay_s:
            time.sleep(page.delay_s)
        if page.status in (301, 302, 303, 307, 308):
            return PageServer._send(handler, page.status, b"", {"Location": page.location})
        if page.status != 200:
            return PageServer._send(handler, page.status, page.body, {"Content-Type": "text/plain"})
        headers = {"Content-Type": page.content_type}
        if page.etag:
            headers["ETag"] = page.etag_value
        if page.last_modified:
            headers["Last-Modified"] = page.last_modified_value
        if_none_match = handler.headers.get("If-None-Match")
        if_modified_since = handler.headers.get("If-Modified-Since")
        if page.etag and if_none_match:
            if if_none_match == page.etag_value:
                return PageServer._send(handler, 304, b"", headers)
        elif page.last_modified and if_modified_since:
            since = email.utils.parsedate_to_datetime(if_modified_since).timestamp()
            if int(page.modified_at) <= since:
                return PageServer._send(handler, 304, b"", headers)
        return PageServer._send(handler, 200, page.body, headers)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict) -> int:
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(0 if status == 304 else len(body)))
        handler.end_headers()
        if status != 304:
            handler.wfile.write(body)
        return status


@pytest.fixture
def page_server():
    server = PageServer()
    yield server
    server.close()
