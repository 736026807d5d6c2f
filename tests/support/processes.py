"""Real processes for tests: Celery workers and beat on this test's database, a Redis of the test's own.

Tests that need a program this machine lacks skip, except under CI=true, where they fail: CI must run them.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]


def require(condition: bool, reason: str) -> None:
    if condition:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI must run this test; scripts/test.sh installs what it needs)")
    pytest.skip(reason)


def database_env() -> dict:
    """Environment that points a child process at the database this test process created."""
    from django.db import connection

    name = connection.settings_dict["NAME"]
    if connection.settings_dict.get("EMBEDDED_PGDATA"):
        return {"EMBEDDED_DATABASE_NAME": name}
    parts = urlsplit(os.environ["DATABASE_URL"])
    return {"DATABASE_URL": urlunsplit(parts._replace(path=f"/{name}"))}


def base_env(**extra) -> dict:
    # Full priority unless a test says otherwise: on a busy machine a niced worker may wait minutes for
    # a core, and the test for the lower priority sets its own WORKER_NICENESS.
    # Nor do they wait for searches (WORKER_YIELD_MAX_S): this checkout's lock file is shared with whatever
    # else runs here; the test of that wait sets its own file and bound.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "kbreview.settings", "LOG_LEVEL": "INFO",
           "WORKER_NICENESS": "0", "WORKER_YIELD_MAX_S": "0", **database_env()}
    env.pop("REDIS_URL", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_worker(name: str, env: dict, *, log: Path, pool: str = "solo") -> subprocess.Popen:
    """Start a worker and wait until it takes messages (a busy machine may need minutes to import torch)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "kbreview", "worker", f"--pool={pool}", "--loglevel=INFO",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"{name}-{os.getpid()}@%h"],
        cwd=ROOT, env=env, stdout=_log_file(log), stderr=subprocess.STDOUT,
    )
    try:
        wait_for(lambda: " ready." in log.read_text(errors="replace"), 300, f"worker {name} to start", logs=[log])
    except BaseException:
        stop(proc)
        raise
    return proc


def start_beat(env: dict, schedule: Path, *, log: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "kbreview", "beat", "--loglevel=INFO", "-s", str(schedule)],
        cwd=ROOT, env=env, stdout=_log_file(log), stderr=subprocess.STDOUT,
    )


def _log_file(path: Path | None):
    return open(path, "ab") if path else subprocess.DEVNULL


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def wait_for(predicate, timeout_s: float, what: str, *, logs: list[Path] = ()):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    tails = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in logs if p.exists())
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}\n{tails}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class RedisServer:
    """A redis-server of the test's own on `port`, without persistence: stopping it loses every message."""

    def __init__(self, port: int, workdir: Path) -> None:
        require(shutil.which("redis-server") is not None, "redis-server is not installed")
        require(not port_open(port), f"port {port} is taken")
        self.port, self.workdir = port, workdir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )
        wait_for(lambda: port_open(self.port), 20, f"redis-server on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None


def point_app_at(**conf) -> dict:
    """Reconfigure this process's Celery app (as a web process with that configuration would be);
    returns what to pass back to restore it. Pools made for the previous broker are dropped, after the
    publisher thread has sent what it holds to the broker it was meant for."""
    from kbreview.celery import app
    from kbreview.jobs import publisher

    publisher.flush(30.0)
    if "broker_url" in conf and "broker_transport" not in conf:
        # An explicit transport wins over the URL's scheme: the project's filesystem transport only for filesystem://.
        from django.conf import settings

        filesystem = conf["broker_url"].startswith("filesystem:")
        conf["broker_transport"] = getattr(settings, "CELERY_BROKER_TRANSPORT", None) if filesystem else None
    saved = {key: app.conf[key] for key in conf}
    app.conf.update(**conf)
    _drop_pools(app)
    # A process started with this configuration has no back-off from an earlier broker's failure: without
    # this, a test right after one whose broker failed had its messages left to a sweeper it does not run.
    publisher._backoff_until = 0.0
    return saved


def _drop_pools(app) -> None:
    import kombu.pools

    if app._pool is not None:
        app._pool.force_close_all()
        app._pool = None
    app.amqp._producer_pool = None
    kombu.pools.reset()  # kombu's registry would hand the closed pool back for the same broker


def filesystem_broker_options(folder: Path) -> dict:
    """The same layout kbreview/settings.py gives FILESYSTEM_BROKER_DIR."""
    options = {"data_folder_in": str(folder / "messages"), "data_folder_out": str(folder / "messages"),
               "control_folder": str(folder / "control"), "polling_interval": 0.2}
    for key in ("data_folder_in", "control_folder"):
        Path(options[key]).mkdir(parents=True, exist_ok=True)
    return options
