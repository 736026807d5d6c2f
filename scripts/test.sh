#!/usr/bin/env bash
# Install what the tests need and run them all (unit, API, a real Celery worker on Redis, browser).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
if ! command -v chromium >/dev/null 2>&1; then
  echo "Installing Debian's chromium for the browser tests..."
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi
fi
# Worker and fault tests start their own Redis (redis-server) and talk to one on 127.0.0.1:6379.
if ! command -v redis-server >/dev/null 2>&1; then
  echo "Installing Debian's redis-server for the worker and fault tests..."
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq redis-server >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq redis-server >/dev/null; fi
fi
if command -v redis-cli >/dev/null 2>&1 && ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  if command -v redis-server >/dev/null 2>&1; then
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  fi
fi
# Not exec: the shell stays to stop the embedded PostgreSQL afterwards if this run started it.
. scripts/stop_embedded_db_on_exit.sh
.venv/bin/python -m pytest "$@"
