"""PostgreSQL backend that insists on pgvector and can run the embedded server.

Used for every database of the project: with `EMBEDDED_PGDATA` in the database settings it starts the
embedded server on first connection; either way the first connection of a process checks that the
`vector` extension is available and stops with a clear message if not.
"""
from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.postgresql import base

from kbreview.db.embedded import embedded_socket_dir, ensure_database


class DatabaseWrapper(base.DatabaseWrapper):
    # Servers already known to have pgvector, checked once per process.
    _servers_with_vector: set[tuple] = set()

    def get_connection_params(self):
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
