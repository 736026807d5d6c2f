"""`manage.py embedded_db status|stop`: the embedded PostgreSQL of this checkout (./var/pgdata), which stays up
between processes. The run and test commands stop it on exit when they started it; stop it by hand with this."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from kbreview.db.embedded import embedded_server_pid, embedded_server_stop


class Command(BaseCommand):
    help = "Say whether the embedded PostgreSQL (./var/pgdata) is running, or stop it."
    requires_system_checks: list = []  # never connect (that would start the server)

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["status", "stop"])
        parser.add_argument("--pgdata", help="the data folder (default: the one in the settings, ./var/pgdata)")

    def handle(self, *args, action: str, pgdata: str | None, **options):
        folder = Path(pgdata) if pgdata else self._settings_pgdata()
        if action == "status":
            pid = embedded_server_pid(folder)
            self.stdout.write(f"running (pid {pid}) from {folder}" if pid else f"stopped ({folder})")
            return
        if embedded_server_stop(folder):
            self.stdout.write(f"stopped the embedded PostgreSQL in {folder}")
        else:
            self.stdout.write(f"the embedded PostgreSQL in {folder} was not running")

    @staticmethod
    def _settings_pgdata() -> Path:
        pgdata = settings.DATABASES["default"].get("EMBEDDED_PGDATA")
        if not pgdata:
            raise CommandError("DATABASE_URL is set: there is no embedded PostgreSQL to manage")
        return Path(pgdata)
