"""Sustained POST /api/v1/turns through a real WSGI server with real workers, against a trivial view.

    .venv/bin/python bench/ingest_load.py            # 10 s per rate step
    .venv/bin/python bench/ingest_load.py --quick    # 4 s per rate step

On the embedded default, in a database of its own: gunicorn (2 worker processes, 4 threads each, as the
README's production section runs it) serves kbreview.wsgi; one Celery worker (the Procfile's command,
default concurrency and CPU priority) on the filesystem broker checks every turn with the claims detector.
A load generator in this process sends requests at a fixed rate (open loop: a slow server does not slow the
sender) and climbs a ladder of rates. A rate is sustained when p95 < 200 ms, nothing failed and, for turns,
the worker's queue drains within 60 s after the step. The same ladder runs against GET /healthz (a trivial
Django view on the same server), and

    turns_vs_noop_rps_ratio = highest sustained turn rate / highest sustained /healthz rate.

Afterwards the counts must match exactly: turns accepted (202) = turns stored = detection runs = finished runs.

The turns cycle through 60 retrieval sets of 5 articles (Load.refs), so once a worker process has checked a
set, later turns retrieving it take its claim findings from memory (agents.detection.ClaimChecks) and pay
only for reading the texts and recording the run and occurrences: the figure is for a chatbot whose
questions retrieve recurring sets; each set not seen before costs a full claim check.
The per-token rate limit is raised above the ladder's top rate (one token sends every turn); anything else
but 202 counts as a failure.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

log = common.log
P95_LIMIT_S = 0.200
DRAIN_LIMIT_S = 60.0
RATES = (10, 20, 40, 60, 80, 120, 160, 240, 320)
SENDERS = 64


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_process(args: list[str], name: str, env: dict, ready) -> subprocess.Popen:
    log_path = common.REPO / "var" / f"bench-ingest-{name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(args, cwd=common.REPO, env=env, stdout=open(log_path, "wb"), stderr=subprocess.STDOUT)
    watch = common.Stopwatch()
    while not ready(log_path):
        if proc.poll() is not None or watch() > 300:
            raise RuntimeError(f"{name} did not start; see {log_path}")
        time.sleep(0.5)
    log(f"[setup] {name} ready in {watch():.0f} s (pid {proc.pid})")
    return proc


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def serving(url: str):
    def ready(_log: Path) -> bool:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.status == 200
        except OSError:
            return False

    return ready


class Load:
    """Open-loop sender: request i leaves at start + i / rate, whatever happened to the earlier ones."""

    def __init__(self, base_url: str, token: str) -> None:
        self.base_url, self.token = base_url, token
        self.counter = 0
        self.lock = threading.Lock()

    def turn(self) -> tuple[int, float]:
        with self.lock:
            self.counter += 1
            n = self.counter
        body = json.dumps({"external_id": f"load-{n:07d}", "question": f"Question {n} about the price of a plan?",
                           "retrieved": [{"ref": ref, "rank": i + 1} for i, ref in enumerate(self.refs(n))]}).encode()
        request = urllib.request.Request(f"{self.base_url}/api/v1/turns", data=body, headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {self.token}"})
        return self._timed(request)

    def noop(self) -> tuple[int, float]:
        return self._timed(urllib.request.Request(f"{self.base_url}/healthz"))

    refs_pool: list[str] = []

    def refs(self, n: int) -> list[str]:
        pool = self.refs_pool
        return [pool[(n * 7 + k * 13) % len(pool)] for k in range(5)]

    def _timed(self, request) -> tuple[int, float]:
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
                status = response.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        except OSError:
            status = 0
        return status, time.perf_counter() - started

    def run(self, kind: str, rate: float, seconds: float) -> tuple[list[float], int, int]:
        send = self.turn if kind == "turns" else self.noop
        expect = 202 if kind == "turns" else 200
        total = int(rate * seconds)
        start = time.perf_counter() + 0.2
        results: list[tuple[int, float]] = []

        def one(i: int) -> None:
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            results.append(send())

        with ThreadPoolExecutor(max_workers=SENDERS) as pool:
            list(pool.map(one, range(total)))
        latencies = [elapsed for status, elapsed in results if status == expect]
        failures = sum(1 for status, _ in results if status != expect)
        return latencies, failures, len(latencies)


def queued_runs() -> int:
    from conflicts.models import DetectionOutcome, DetectionRun

    return DetectionRun.objects.filter(outcome=DetectionOutcome.QUEUED).count()


def ladder(load: Load, kind: str, seconds: float) -> tuple[float, int]:
    """Highest sustained rate, and the number of accepted requests sent."""
    from django.db import connection

    best, accepted = 0.0, 0
    for rate in RATES:
        latencies, failures, ok = load.run(kind, rate, seconds)
        accepted += ok
        p95 = common.percentile(latencies, 95) if latencies else float("inf")
        drain = 0.0
        drained = True
        if kind == "turns":
            watch = common.Stopwatch()
            while queued_runs() and watch() < DRAIN_LIMIT_S:
                time.sleep(0.25)
            drain, drained = watch(), not queued_runs()
            connection.close()
        sustained = p95 < P95_LIMIT_S and failures == 0 and drained
        log(f"[{kind:5}] {rate:4d}/s for {seconds:g} s: {common.summary(latencies, 1000, ' ms')}, failures {failures}"
            + (f", queue drained {drain:.1f} s after the step" if kind == "turns" else "")
            + ("" if sustained else "  -> not sustained"))
        if not sustained:
            break
        best = float(rate)
    return best, accepted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4 s per rate step")
    args = parser.parse_args()
    seconds = 4.0 if args.quick else 10.0
    wall = common.Stopwatch()
    log(f"bench/ingest_load.py {'--quick' if args.quick else '(full)'}: {seconds:g} s per step, rates {RATES}; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    common.setup_django(database="ingest")
    from django.conf import settings
    from django.db import connection

    from articles.services import articles_import
    from conflicts.models import DetectionOutcome, DetectionRun, Turn
    from conflicts.services import api_token_create

    kb = common.new_knowledge_base("ingest")
    generated = common.generate_articles(60, seed=5)
    articles_import(knowledge_base=kb, parsed=common.to_parsed(generated), reindex=False)
    Load.refs_pool = [a.ref for a in generated]
    _, token = api_token_create(knowledge_base=kb, name="load")
    connection.close()
    # One token sends the whole ladder: the per-token rate limit (a policy, API_RATE_LIMIT, default 1200 a
    # minute) would answer 429 to any step above 20/s that fills a window, which measures the policy, not the
    # server. It is set above the ladder's top rate, so the throttle still counts every request (its cost is
    # in the figures) and refuses none.
    window_s = 60
    env = {**os.environ, "EMBEDDED_DATABASE_NAME": settings.DATABASES["default"]["NAME"], "DETECTION_DETECTOR": "claims",
           "LOG_LEVEL": "WARNING", "API_RATE_WINDOW_S": str(window_s), "API_RATE_LIMIT": str(2 * max(RATES) * window_s)}
    env.pop("REDIS_URL", None)
    port = free_port()
    bin_dir = common.REPO / ".venv" / "bin"
    processes = []
    try:
        processes.append(start_process(
            [str(bin_dir / "celery"), "-A", "kbreview", "worker", "--loglevel=INFO", "--without-gossip",
             "--without-mingle", "-n", f"bench-ingest-{os.getpid()}@%h"], "worker", {**env, "LOG_LEVEL": "INFO"},
            lambda path: " ready." in path.read_text(errors="replace")))
        processes.append(start_process(
            [str(bin_dir / "gunicorn"), "kbreview.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "2",
             "--threads", "4"], "gunicorn", env, serving(f"http://127.0.0.1:{port}/healthz")))
        load = Load(f"http://127.0.0.1:{port}", token)
        # Each gunicorn process's first requests load the URLconf, the API schema and the connections: not
        # sustained throughput, so a few of each kind go first, unmeasured (their turns are counted).
        load.run("noop", 20, 1.0)
        _, _, warm_turns = load.run("turns", 10, 1.0)
        noop_best, _ = ladder(load, "noop", seconds)
        turns_best, accepted = ladder(load, "turns", seconds)
        accepted += warm_turns
        watch = common.Stopwatch()
        while queued_runs() and watch() < 300:
            time.sleep(0.5)
        stored = Turn.objects.filter(knowledge_base=kb).count()
        runs = DetectionRun.objects.filter(turn__knowledge_base=kb)
        finished = runs.exclude(outcome=DetectionOutcome.QUEUED).count()
        log(f"[check] turns accepted {accepted}, stored {stored}, detection runs {runs.count()}, finished {finished}"
            f" ({'match' if accepted == stored == runs.count() == finished else 'MISMATCH'}); outcomes "
            f"{dict((o, runs.filter(outcome=o).count()) for o in DetectionOutcome.values if runs.filter(outcome=o).exists())}")
        connection.close()
    finally:
        for proc in reversed(processes):
            stop(proc)
        common.teardown([kb])
    log(f"highest sustained rate: turns {turns_best:g}/s, /healthz {noop_best:g}/s; wall time {wall():.0f} s")
    common.print_figures([
        common.Figure("turns_vs_noop_rps_ratio", turns_best / noop_best if noop_best else 0.0, "x", ">=", 0.5),
    ])


if __name__ == "__main__":
    main()
