#!/usr/bin/env bash
# Run the console on http://127.0.0.1:${WEB_PORT:-8000} with the demo knowledge base, on the embedded database:
# the web server, a Celery worker and beat (Procfile), started and stopped together by honcho.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
. scripts/console_env.sh
. scripts/stop_embedded_db_on_exit.sh
PY=.venv/bin/python
$PY manage.py migrate --noinput
$PY manage.py load_demo
$PY manage.py demo_users
# The demo questions through the answer path once, checked as they go (inline), so the queue opens on
# real conflicts; their suggestions wait in the queue for the worker started below.
$PY manage.py replay_demo --if-new
echo "Console: ${CONSOLE_BASE_URL:-http://127.0.0.1:${WEB_PORT}}  (demo users above; the Django admin at /admin/ is for a superuser: manage.py createsuperuser). Ctrl-C stops web, worker and beat (and the embedded PostgreSQL if this command started it)."
# Not exec: the shell stays to stop the embedded PostgreSQL after honcho (scripts/stop_embedded_db_on_exit.sh).
.venv/bin/honcho -f Procfile start
