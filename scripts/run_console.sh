#!/usr/bin/env bash
# Run the console on http://127.0.0.1:8000 with the demo knowledge base, on the embedded database.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export DJANGO_DEBUG="${DJANGO_DEBUG:-true}"
PY=.venv/bin/python
$PY manage.py migrate --noinput
$PY manage.py load_demo
$PY manage.py demo_users
$PY manage.py replay_demo --if-new   # the demo questions through the answer path, so the queue has real conflicts
echo "Console: http://127.0.0.1:8000  (demo users above; the Django admin at /admin/ is for a superuser: manage.py createsuperuser)"
exec $PY manage.py runserver 127.0.0.1:8000
