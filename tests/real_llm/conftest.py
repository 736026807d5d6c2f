"""A real llama-cpp-python server with Gemma 3 270M on loopback, for the `real_llm` tests.

scripts/llm_compat.sh builds the server into a cached virtualenv and points these fixtures at it
(REAL_LLM_SERVER_PYTHON, REAL_LLM_MODEL_PATH). Without them the tests skip, except under CI=true,
where a server that cannot start is a failure: the suite must not pass by not running.
"""
from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agents.llm import LLMConfig

MODEL_ALIAS = "gemma-3-270m"
START_TIMEOUT_S = 180.0
# Seconds per call. Gemma 3's 262k-token vocabulary makes llama-cpp-python's grammar sampling cost
# about as much as the model itself per token; on 2 cores shared with other work a call can take minutes.
CALL_TIMEOUT_S = 600.0


def _unavailable(message: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"real LLM server unavailable under CI: {message}")
    pytest.skip(message)


class LlamaServer:
    """One llama-cpp-python server process on a free loopback port."""

    def __init__(self, *, python: str, model: Path, log_path: Path, logprobs: bool) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            [python, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_ALIAS,
             "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "4096" if not logprobs else "1024",
             # One thread: OpenMP threads spinning against other work on 2 cores slow everything down.
             "--n_threads", "1", "--n_threads_batch", "1",
             # Log-probabilities need logits for every token (this server's `logits_all`), which makes
             # prompts several times slower with a 262k vocabulary: only the server that serves them has it.
             "--logits_all", str(logprobs),
             # The `gemma` format drops system messages: the hardest case for the prompts, on purpose.
             "--chat_format", "gemma", "--seed", "0", "--verbose", "False"],
            stdout=self._log, stderr=subprocess.STDOUT,
        )
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2.0) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"server not ready after {START_TIMEOUT_S:.0f} s: {self.log_tail()}")

    def config(self, **overrides) -> LLMConfig:
        values = {"base_url": self.base_url, "api_key": "not-needed", "model": MODEL_ALIAS,
                  "timeout_s": CALL_TIMEOUT_S, "json_mode": "auto"}
        values.update(overrides)
        return LLMConfig(**values)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()

    def log_tail(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-2000:]


def start_server(log_path: Path, *, logprobs: bool = False) -> LlamaServer:
    python, model = os.environ.get("REAL_LLM_SERVER_PYTHON"), os.environ.get("REAL_LLM_MODEL_PATH")
    if not python or not model:
        _unavailable("REAL_LLM_SERVER_PYTHON / REAL_LLM_MODEL_PATH unset: run scripts/llm_compat.sh")
    if not Path(python).exists() or not Path(model).exists():
        _unavailable(f"{python} or {model} does not exist: run scripts/llm_compat.sh")
    server = LlamaServer(python=python, model=Path(model), log_path=log_path, logprobs=logprobs)
    try:
        server.wait_ready()
    except RuntimeError as error:
        server.stop()
        _unavailable(str(error))
    return server


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    server = start_server(tmp_path_factory.mktemp("llama") / "server.log")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def logprob_llama_server(tmp_path_factory):
    """The same model served with log-probabilities (logits for every token)."""
    server = start_server(tmp_path_factory.mktemp("llama-logprobs") / "server.log", logprobs=True)
    yield server
    server.stop()


@pytest.fixture
def own_llama_server(tmp_path):
    """A server of the test's own, for tests that kill it."""
    server = start_server(tmp_path / "server.log")
    yield server
    server.stop()
