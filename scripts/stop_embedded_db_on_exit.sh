# Sourced by scripts/run_console.sh and scripts/test.sh: when this command is the one that starts the embedded
# PostgreSQL (DATABASE_URL unset and no server running from ./var/pgdata yet), stop it again when the command
# ends, Ctrl-C included. A server that was already running (another console, a test run) is left alone.
# By hand: .venv/bin/python manage.py embedded_db stop
if [ -z "${DATABASE_URL:-}" ] && ! grep -qs '^DATABASE_URL=' .env \
   && ! .venv/bin/python manage.py embedded_db status 2>/dev/null | grep -q '^running'; then
  trap '.venv/bin/python manage.py embedded_db stop || echo "could not stop the embedded PostgreSQL: manage.py embedded_db stop" >&2' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
fi
