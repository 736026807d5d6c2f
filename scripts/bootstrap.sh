#!/usr/bin/env bash
# Create .venv and install requirements.txt into it; a no-op when nothing changed since the last run.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "Installing Python packages (first run takes a few minutes)..."
  .venv/bin/python -m pip install --quiet -r requirements.txt
  echo "$want" > "$stamp"
fi
# The local model for Intent-Guided Decoding (Gemma 3 270M by default): de-quantized once into
# ~/.cache/kbreview/local-lm (LOCAL_LM_CACHE_DIR), then a no-op; tests and the playground load it in seconds.
.venv/bin/python manage.py local_lm_prepare
