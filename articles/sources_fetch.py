"""Fetching source pages safely: http(s) only, public addresses only (unless the knowledge base allows
private ones), bounded size and time, conditional requests, robots.txt, and a user agent naming us.

The connection goes to the address that was checked (the host name is sent as Host / TLS server name),
so a DNS answer that changes between the check and the request cannot reach an internal service.
Every refusal or failure is a FetchError whose message says what was wrong with that page.
"""
from __future__ import annotations

import ipaddress
import socket
import time
import urllib.robotparser
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import urllib3

HTML_TYPES = ("text/html", "application/xhtml+xml")
SITEMAP_TYPES = ("application/xml", "text/xml", "application/x-xml", "text/plain")
REDIRECT_STATUSES = (301, 302, 303, 307, 308)
_CHUNK = 64 * 1024


class FetchError(Exception):
    """A page that could not be fetched; the message is shown in the sync report as it stands."""


@dataclass(frozen=True)
class FetchLimits:
    max_bytes: int
    timeout_s: float
    user_agent: str
    allow_private: bool = False


@dataclass
class FetchResult:
    url: str
    not_modified: bool
    body: bytes = b""
    etag: str = ""
    last_modified: str = ""


def _address_refusal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """Why this address is not public ('' when it is)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    for label, flag in (
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("private", address.is_private),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("unspecified", address.is_unspecified),
    ):
        if flag:
            return label
    return ""


@dataclass(frozen=True)
class Target:
    """An http(s) address taken apart for a request sent to a checked address."""

    scheme: str
    host: str
    port: int
    path: str  # with the query
    host_header: str

    @classmethod
    def parse(cls, url: str) -> "Target":
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise FetchError(f"only http and https addresses are fetched (got {parts.scheme or 'no scheme'!r})")
        if not parts.hostname:
            raise FetchError("the address has no host")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise FetchError("the address has an invalid port") from None
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host_header = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
        return cls(scheme=parts.scheme, host=parts.hostname, port=port, path=path, host_header=host_header)


def checked_address(host: str, port: int, *, allow_private: bool) -> str:
    """The address to connect to for `host`; unless `allow_private`, every address the name resolves to
    must be public (a name with one internal address is refused outright). Raises FetchError."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise FetchError(f"cannot resolve host {host!r} ({exc.strerror or exc})") from None
    addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    if not allow_private:
        for address in addresses:
            reason = _address_refusal(address)
            if reason:
                raise FetchError(
                    f"refused: {host} resolves to a {reason} address ({address}); "
                    "this knowledge base does not allow requests to private addresses"
                )
    return str(addresses[0])


def pinned_pool(scheme: str, host: str, port: int, address: str, *, timeout_s: float):
    """A connection pool to the checked `address`, naming `host` in TLS (server name and certificate
    check); never retries or follows redirects by itself. The caller sends `Host` itself."""
    timeout = urllib3.Timeout(connect=timeout_s, read=timeout_s)
    common = {"port": port, "timeout": timeout, "retries": False, "maxsize": 1, "block": False}
    if scheme == "https":
        return urllib3.HTTPSConnectionPool(
            address, server_hostname=host, assert_hostname=host, cert_reqs="CERT_REQUIRED", **common
        )
    return urllib3.HTTPConnectionPool(address, **common)


def request_failure(exc: urllib3.exceptions.HTTPError, *, timeout_s: float) -> str:
    """What a request that failed before any answer means, in the words a report shows."""
    # A refused connection is a subclass of the connect timeout, so it is told apart first.
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return f"could not connect: {exc}"
    if isinstance(exc, urllib3.exceptions.TimeoutError):
        return f"no answer within {timeout_s:g} s"
    if isinstance(exc, urllib3.exceptions.SSLError):
        return f"TLS failed: {exc}"
    return f"could not connect: {exc}"


@dataclass
class Fetcher:
    """One per sync: keeps a connection pool per checked address and each origin's robots.txt."""

    limits: FetchLimits
    _pools: dict = field(default_factory=dict)
    _robots: dict = field(default_factory=dict)

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()

    # --- addresses -----------------------------------------------------------------------------

    def _pool(self, scheme: str, host: str, port: int):
        address = checked_address(host, port, allow_private=self.limits.allow_private)
        key = (scheme, host, port, address)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = pinned_pool(scheme, host, port, address, timeout_s=self.limits.timeout_s)
        return pool

    # --- requests ------------------------------------------------------------------------------

    def _get(self, url: str, *, headers: dict[str, str], accept: tuple[str, ...]) -> FetchResult:
        target = Target.parse(url)
        request_headers = {
            "Host": target.host_header,
            "User-Agent": self.limits.user_agent,
            "Accept": ", ".join(accept),
            **headers,
        }
        deadline = time.monotonic() + self.limits.timeout_s
        pool = self._pool(target.scheme, target.host, target.port)
        try:
            response = pool.urlopen(
                "GET", target.path, headers=request_headers, redirect=False, preload_content=False, assert_same_host=False
            )
        except urllib3.exceptions.HTTPError as exc:
            raise FetchError(request_failure(exc, timeout_s=self.limits.timeout_s)) from None
        try:
            return self._read(url, response, accept=accept, deadline=deadline)
        except BaseException:
            response.close()  # an unread body must not be taken for the next response on this connection
            raise
        finally:
            response.release_conn()

    def _read(self, url: str, response, *, accept: tuple[str, ...], deadline: float) -> FetchResult:
        status = response.status
        if status in REDIRECT_STATUSES:
            target = urljoin(url, response.headers.get("Location", ""))
            response.drain_conn()
            raise FetchError(f"redirected (HTTP {status}) to {target}; put that address in the source instead")
        if status == 304:
            response.drain_conn()
            return FetchResult(url=url, not_modified=True, etag=response.headers.get("ETag", ""),
                               last_modified=response.headers.get("Last-Modified", ""))
        if status >= 400:
            response.drain_conn()
            reason = f" {response.reason}" if response.reason else ""
            kind = "server error" if status >= 500 else "client error"
            raise FetchError(f"HTTP {status}{reason} ({kind})")
        if status != 200:
            response.drain_conn()
            raise FetchError(f"unexpected HTTP {status}")
        content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type not in accept:
            response.drain_conn()
            raise FetchError(f"not a page we can read (Content-Type {content_type or 'missing'!r}; expected {', '.join(accept)})")
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self.limits.max_bytes:
            raise FetchError(f"too large ({int(declared):,} bytes; the limit is {self.limits.max_bytes:,})")
        body = bytearray()
        try:
            for piece in response.stream(_CHUNK, decode_content=True):
                body.extend(piece)
                if len(body) > self.limits.max_bytes:
                    raise FetchError(f"too large (over the limit of {self.limits.max_bytes:,} bytes)")
                if time.monotonic() > deadline:
                    raise FetchError(f"took longer than {self.limits.timeout_s:g} s to download")
        except urllib3.exceptions.TimeoutError:
            raise FetchError(f"no answer within {self.limits.timeout_s:g} s") from None
        except urllib3.exceptions.HTTPError as exc:
            raise FetchError(f"the download broke off: {exc}") from None
        return FetchResult(
            url=url,
            not_modified=False,
            body=bytes(body),
            etag=response.headers.get("ETag", ""),
            last_modified=response.headers.get("Last-Modified", ""),
        )

    def page(self, url: str, *, etag: str = "", last_modified: str = "") -> FetchResult:
        """An HTML page, conditionally: a 304 comes back as `not_modified` with no body."""
        self._check_robots(url)
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        return self._get(url, headers=headers, accept=HTML_TYPES)

    def document(self, url: str, *, accept: tuple[str, ...] = SITEMAP_TYPES) -> bytes:
        """A whole document (a sitemap), unconditionally."""
        self._check_robots(url)
        return self._get(url, headers={}, accept=accept).body

    # --- robots.txt ----------------------------------------------------------------------------

    def _check_robots(self, url: str) -> None:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        rules = self._robots.get(origin)
        if rules is None:
            rules = self._robots[origin] = self._load_robots(origin)
        if isinstance(rules, str):
            raise FetchError(rules)
        if not rules.can_fetch(self.limits.user_agent, url):
            raise FetchError(f"robots.txt of {origin} does not allow us to fetch this page")

    def _load_robots(self, origin: str) -> urllib.robotparser.RobotFileParser | str:
        """The origin's rules, or the message every page of it fails with when they cannot be read."""
        rules = urllib.robotparser.RobotFileParser(origin + "/robots.txt")
        try:
            body = self._get(origin + "/robots.txt", headers={}, accept=("text/plain",)).body
        except FetchError as exc:
            text = str(exc)
            # No robots.txt (a 4xx) allows everything; an unreachable or failing one allows nothing (RFC 9309).
            if "client error" in text or text.startswith("not a page"):
                rules.parse([])
                return rules
            return f"robots.txt of {origin} could not be read ({text}), so its pages are not fetched"
        rules.parse(body.decode("utf-8", errors="replace").splitlines())
        return rules
