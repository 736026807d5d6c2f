"""PostgreSQL backend that insists on pgvector and can run the embedded server.

Used for every database of the project: with `EMBEDDED_PGDATA` in the database settings it starts the
embedded server on first connection; either way the first connection of a process checks that the
`vector` extension is available and stops with a clear message if not. Its health check (CONN_HEALTH_CHECKS)
costs no round trip while the server has said nothing (see close_if_health_check_failed).
"""
from __future__ import annotations

import select
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.postgresql import base

from kbreview.db.embedded import embedded_socket_dir, ensure_database


class DatabaseWrapper(base.DatabaseWrapper):
    # Servers already known to have pgvector, checked once per process.
    _servers_with_vector: set[tuple] = set()

    def get_connection_params(self):
        if (self.settings_dict.get("OPTIONS") or {}).get("server_side_binding"):
            # Server-side binding sends a statement with parameters through the extended protocol, which refuses
            # several statements in one message: the open-conflict look-up (conflicts.services.policy) is one such
            # message, and would fail on every turn.
            raise ImproperlyConfigured(
                "DATABASES OPTIONS server_side_binding=True is not supported: remove it (from DATABASE_URL's query "
                "string too); kbreview needs psycopg's client-side binding")
        pgdata = self.settings_dict.get("EMBEDDED_PGDATA")
        if pgdata:
            socket_dir = embedded_socket_dir(Path(pgdata))
            self.settings_dict["HOST"] = socket_dir
            self.settings_dict["USER"] = self.settings_dict.get("USER") or "postgres"
            name = self.settings_dict["NAME"]
            # The test runner creates its own database (through "postgres"); ours is created on first use.
            if name and not name.startswith("test_") and not self.settings_dict.get("_database_ensured"):
                ensure_database(socket_dir=socket_dir, user=self.settings_dict["USER"], name=name)
                self.settings_dict["_database_ensured"] = True
        return super().get_connection_params()

    def close_if_health_check_failed(self):
        """Django's check sends SELECT 1 before each request's first query: a round trip per API request.
        A server that ends a connection (restart, pg_terminate_backend, a crashed backend) says so on the
        socket first, with an error message or by closing it; so an idle connection whose socket has
        nothing to read is sound, and only one with something waiting gets the SELECT 1 (which closes it
        when it fails). A connection lost without a word (a silent network) is noticed by its first query
        instead: the request answers 503, and Django drops the connection after the error."""
        if self.connection is None or self.pool or not self.health_check_enabled or self.health_check_done:
            return super().close_if_health_check_failed()
        if not self._server_has_spoken():
            self.health_check_done = True
            return None
        return super().close_if_health_check_failed()

    def _server_has_spoken(self) -> bool:
        try:
            poller = select.poll()
            poller.register(self.connection.pgconn.socket, select.POLLIN)
            return bool(poller.poll(0))
        except Exception:  # no socket (a closed connection) or no poll(): let SELECT 1 decide
            return True

    def init_connection_state(self):
        super().init_connection_state()
        server_key = (self.settings_dict.get("HOST"), self.settings_dict.get("PORT"))
        if server_key not in self._servers_with_vector:
            with self.connection.cursor() as cursor:
                cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
                available = cursor.fetchone() is not None
            if not available:
                params = self.get_connection_params()
                raise ImproperlyConfigured(
                    "The PostgreSQL server at "
                    f"{params.get('host') or 'localhost'}:{params.get('port') or 5432} has no 'vector' extension. "
                    "kbreview needs pgvector >= 0.5: install it on that server, or unset DATABASE_URL to use "
                    "the embedded PostgreSQL + pgvector."
                )
            self._servers_with_vector.add(server_key)
