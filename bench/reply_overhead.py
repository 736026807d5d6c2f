"""Does conflict detection slow the reply? Reply latency of the built-in answer path with detection on vs off,
on the embedded default with real Celery workers.

    .venv/bin/python bench/reply_overhead.py            # 240 turns per arm, 24 concurrent callers
    .venv/bin/python bench/reply_overhead.py --quick    # 64 turns per arm (a few minutes on a busy machine)
    .venv/bin/python bench/reply_overhead.py --turns 480 --samples-out run1.json   # keep the latencies
    .venv/bin/python bench/reply_overhead.py --pool run1.json run2.json            # figures of runs taken together

Every turn goes through conflicts.services.answer_question (hybrid search -> turn recorded -> LLM answer ->
reply recorded) in this process, which stands for the web process, against a scripted OpenAI-compatible
server in a process of its own (bench/_scripted_model.py: a real HTTP server, the real `openai` client). The
server tells requests apart by the response_format schema name: "answer" replies after 0.8 s,
"pair_verdicts" (detection) after 1.5 s, or 30 s in the hung arm.

Detection runs where the run command runs it: a real Celery worker (`celery -A kbreview worker`, the
Procfile's command, the default concurrency, CPU priority and WORKER_YIELD_MAX_S, which the environment can
change for a comparison) on the embedded default's filesystem broker;
this process only writes the turn's DetectionRun and drops a message in the broker folder after commit.

Arms, in many short blocks that alternate (so drift on a shared machine hits every arm alike):
  offA, offB  no detection: the turn service's `enqueue` is a no-op for the block, so the turn, its
              usages and its queued DetectionRun are still written; only no message is sent. (The runs are
              marked skipped after the block.) offB against offA is the noise floor of the measurement.
  on          DETECTION_DETECTOR="auto" on the worker (claims, then the LLM for the pairs the claims did not
              settle). The scripted detector flags the first pair with real quotes and adds an item with
              invented refs, so every turn still makes a real 1.5 s detection call. After each on block we
              wait until the worker has finished its detections, so the next off block runs clean.
  offC, hung, offD  phase 2, with a worker whose DETECTION_TIMEOUT_S is 0.5 s (DETECTION_BATCH_WAIT_MS 0)
              while the detection reply takes 30 s; offD against offC is phase 2's noise floor.
Figures: reply_p95_ratio = p95(on) / p95(offA + offB); reply_p95_ratio_hung = p95(hung) / p95(offC + offD);
the noise floors p95(offB) / p95(offA) and p95(offD) / p95(offC) are printed beside them: a ratio inside
its noise floor is no measured difference.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402
from _scripted_model import ANSWER_DELAY_S, DETECTION_DELAY_S  # noqa: E402

HUNG_DELAY_S = 30.0
HUNG_TIMEOUT_S = 0.5
CALLERS = 24
ARMS = ("offA", "on", "offB", "offC", "hung", "offD")
PHASE_1 = ("offA", "on", "offB")
PHASE_2 = ("offC", "hung", "offD")


log = common.log


class ScriptedModel:
    """The scripted model runs in a process of its own (bench/_scripted_model.py), as a real LLM would run on
    another machine: serving it from this process would make replies and checks share its interpreter."""

    def __init__(self) -> None:
        import subprocess

        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_scripted_model.py"))],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.base_url = self.proc.stdout.readline().strip()

    def control(self, **changes) -> dict:
        """Set the phase / detection delay; returns the request counts so far."""
        import json
        import urllib.request

        body = json.dumps({"model": "control", "messages": [{"role": "user", "content": json.dumps(changes)}]})
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=body.encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(json.loads(response.read())["choices"][0]["message"]["content"])

    def stop(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def run_arm(*, kb, name: str, questions: list[str]) -> dict:
    from django.db import connection

    from conflicts.services.answering import answer_question

    latencies: list[float] = [0.0] * len(questions)
    errors: list[str] = []
    lock = threading.Lock()
    next_index = iter(range(len(questions)))

    def caller(offset: int) -> None:
        time.sleep(offset * ANSWER_DELAY_S / CALLERS)  # staggered, so callers do not move in lock-step
        try:
            while True:
                with lock:
                    i = next(next_index, None)
                if i is None:
                    return
                started = time.perf_counter()
                response = answer_question(knowledge_base=kb, question=questions[i], external_id=f"{name}-{i:05d}")
                latencies[i] = time.perf_counter() - started
                if response.answer_error or "[[" not in response.reply:
                    errors.append(response.answer_error or "reply without citation")
                connection.close()
        finally:
            connection.close()

    watch = common.Stopwatch()
    with ThreadPoolExecutor(max_workers=CALLERS, thread_name_prefix=f"caller-{name}") as pool:
        for future in [pool.submit(caller, k) for k in range(CALLERS)]:
            future.result()
    elapsed = watch()
    log(f"[{name:5}] {len(questions)} turns in {elapsed:.1f} s ({len(questions) / elapsed:.1f}/s); reply latency "
        f"{common.summary(latencies, 1000, ' ms')}; answers not from the LLM: {len(errors)}")
    return {"latencies": latencies, "errors": errors, "seconds": elapsed}


def pending_detections(prefix: str) -> int:
    from conflicts.models import DetectionOutcome, DetectionRun

    return DetectionRun.objects.filter(turn__external_id__startswith=prefix, outcome=DetectionOutcome.QUEUED).count()


def wait_for_detection(prefix: str, limit_s: float) -> float:
    from django.db import connection

    watch = common.Stopwatch()
    while pending_detections(prefix) and watch() < limit_s:
        time.sleep(0.25)
    connection.close()
    return watch()


def outcomes(prefix: str) -> str:
    from django.db.models import Count, Sum

    from conflicts.models import DetectionRun

    runs = DetectionRun.objects.filter(turn__external_id__startswith=prefix)
    by_outcome = dict(runs.values_list("outcome").annotate(n=Count("id")).order_by())
    sums = runs.aggregate(llm=Sum("llm_calls"), conflicts=Sum("conflicts_found"), hits=Sum("cache_hits"),
                          invented=Sum("dropped_invented_refs"))
    return (f"outcomes {by_outcome}; LLM calls {sums['llm'] or 0}, conflicts found {sums['conflicts'] or 0}, "
            f"cache hits {sums['hits'] or 0}, invented refs dropped {sums['invented'] or 0}")


class Worker:
    """`celery -A kbreview worker` as the run command starts it, on this benchmark's database and broker."""

    def __init__(self, name: str, **env) -> None:
        import subprocess

        self.log_path = common.REPO / "var" / f"bench-reply-worker-{name}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text("")
        full_env = {**os.environ, "LOG_LEVEL": "INFO", **{k: str(v) for k, v in env.items()}}
        self.proc = subprocess.Popen(
            [str(common.REPO / ".venv" / "bin" / "celery"), "-A", "kbreview", "worker", "--loglevel=INFO",
             "--without-gossip", "--without-mingle", "-n", f"bench-{name}-{os.getpid()}@%h"],
            cwd=common.REPO, env=full_env, stdout=open(self.log_path, "ab"), stderr=subprocess.STDOUT,
        )
        watch = common.Stopwatch()
        while " ready." not in self.log_path.read_text(errors="replace"):
            if self.proc.poll() is not None or watch() > 300:
                raise RuntimeError(f"the worker did not start; see {self.log_path}")
            time.sleep(0.5)
        log(f"[setup] worker {name} ready in {watch():.0f} s (pid {self.proc.pid}, niceness "
            f"{os.getpriority(os.PRIO_PROCESS, self.proc.pid)})")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except Exception:
            self.proc.kill()


class Segments:
    """With --segments: each step of the reply timed per arm (the functions answer_question calls), and the
    broker send that the turn's commit hands to the publisher thread (timed there: the reply does not wait)."""

    STEPS = (("conflicts.services.answering", "search"), ("conflicts.services.answering", "turn_report"),
             ("conflicts.services.answering", "answer_compose"), ("conflicts.services.answering", "turn_reply_record"),
             ("kbreview.jobs", "send"), ("articles.selectors", "embed_text"), ("articles.selectors", "_vector_candidates"),
             ("articles.selectors", "_text_candidates"))

    def __init__(self, *, enabled: bool) -> None:
        import contextlib

        self.enabled, self.arm = enabled, "warm"
        self.samples: dict[tuple[str, str], list[float]] = {}
        self._stack = contextlib.ExitStack()

    def _sink(self, step: str):
        segments = self

        class Sink:
            def append(self, seconds: float) -> None:
                segments.samples.setdefault((segments.arm, step), []).append(seconds)

        return Sink()

    def __enter__(self):
        import importlib

        if self.enabled:
            for module, name in self.STEPS:
                self._stack.enter_context(common.timed_calls(importlib.import_module(module), name, self._sink(name)))
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def report(self) -> None:
        if not self.enabled:
            return
        for arm in ARMS:
            parts = []
            for _, step in self.STEPS:
                values = self.samples.get((arm, step), [])
                if values:
                    step = "send (publisher thread, not in the reply)" if step == "send" else step
                    parts.append(f"{step} p50 {1000 * common.percentile(values, 50):.1f} / p95 "
                                 f"{1000 * common.percentile(values, 95):.1f} ms")
            log(f"[steps {arm:5}] " + "; ".join(parts))


def mark_off_runs(prefix: str) -> None:
    """The off arms' runs were never sent; record them as such so nothing (a sweeper) picks them up later."""
    from conflicts.models import DetectionOutcome, DetectionRun

    DetectionRun.objects.filter(turn__external_id__startswith=prefix, outcome=DetectionOutcome.QUEUED).update(
        outcome=DetectionOutcome.SKIPPED, reason="benchmark off arm: never sent")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="64 turns per arm")
    parser.add_argument("--turns", type=int, help="turns per arm (default 240, quick 64)")
    parser.add_argument("--segments", action="store_true",
                        help="also time each step of the reply (search, turn recorded, answer, reply recorded, "
                             "the broker send after commit) per arm, to see where a difference comes from")
    parser.add_argument("--samples-out", metavar="FILE", help="also write every reply latency, by arm, to FILE (JSON)")
    parser.add_argument("--pool", metavar="FILE", nargs="+",
                        help="measure nothing: print the figures of the latencies of several runs' --samples-out files "
                             "taken together (a p95 difference of 1-2%% is inside one run's noise)")
    args = parser.parse_args()
    if args.pool:
        pooled: dict[str, list[float]] = {arm: [] for arm in ARMS}
        for path in args.pool:
            for arm, values in json.loads(Path(path).read_text()).items():
                pooled[arm] += values
        log(f"pooled {len(args.pool)} runs: {', '.join(f'{arm} {len(v)}' for arm, v in pooled.items())} replies")
        report_figures(pooled)
        return
    turns = args.turns or (64 if args.quick else 240)
    block_size = 8 if args.quick else 12  # short blocks, many alternations
    n_articles = 80 if args.quick else 200
    wall = common.Stopwatch()
    log(f"bench/reply_overhead.py {'--quick' if args.quick else '(full)'}: {turns} turns per arm in blocks of "
        f"{block_size}, {CALLERS} callers; answer {ANSWER_DELAY_S} s, detection {DETECTION_DELAY_S} s, hung "
        f"{HUNG_DELAY_S} s with timeout {HUNG_TIMEOUT_S} s; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    common.setup_django(database="reply")
    from django.conf import settings
    from django.db import connection
    from django.test import override_settings

    from articles.services import articles_import
    from conflicts.models import Conflict
    from conflicts.services import turns as turn_service

    log(f"[setup] workers wait up to WORKER_YIELD_MAX_S={settings.WORKER_YIELD_MAX_S} s for a gap in the replies' "
        f"searches and writes (0: never); niceness {settings.WORKER_NICENESS}")
    kb = common.new_knowledge_base("reply")
    model = ScriptedModel()
    workers: list[Worker] = []
    try:
        report = articles_import(knowledge_base=kb, parsed=common.to_parsed(common.generate_articles(n_articles, seed=3)))
        log(f"[setup] {n_articles} articles, {report.chunks_indexed} chunks indexed ({wall():.0f} s)")
        questions = common.generate_questions(turns, seed=17)
        llm = {"base_url": model.base_url, "api_key": "bench", "model": "scripted-model", "timeout_s": 30.0,
               "json_mode": "json_schema"}
        worker_env = {"EMBEDDED_DATABASE_NAME": settings.DATABASES["default"]["NAME"], "OPENAI_BASE_URL": model.base_url,
                      "OPENAI_API_KEY": "bench", "LLM_MODEL": "scripted-model", "DETECTION_DETECTOR": "auto"}
        no_detection = mock.patch.object(turn_service, "enqueue", lambda row: row)
        blocks = [questions[i:i + block_size] for i in range(0, turns, block_size)]
        latencies: dict[str, list[float]] = {arm: [] for arm in ARMS}
        load_samples: list[float] = []
        segments = Segments(enabled=args.segments)
        with override_settings(LLM=llm, DETECTION_DISPATCH="celery", DETECTION_DETECTOR="auto"), segments:
            workers.append(Worker("on", **worker_env))
            with no_detection:
                model.control(phase="warm")
                run_arm(kb=kb, name="warm", questions=common.generate_questions(CALLERS, seed=1))
                mark_off_runs("warm-")
            # Phase 1: offA, on, offB in turn, the order rotating block by block.
            for b, block in enumerate(blocks):
                for arm in PHASE_1[b % 3:] + PHASE_1[:b % 3]:
                    model.control(phase=arm)
                    segments.arm = arm
                    load_samples.append(os.getloadavg()[0])
                    if arm == "on":
                        latencies[arm] += run_arm(kb=kb, name=f"{arm}-{b}", questions=block)["latencies"]
                        drained = wait_for_detection("on-", limit_s=3 * len(block) * DETECTION_DELAY_S + 60)
                        log(f"[on-{b}] all detections done {drained:.1f} s after the last reply")
                    else:
                        with no_detection:
                            latencies[arm] += run_arm(kb=kb, name=f"{arm}-{b}", questions=block)["latencies"]
                        mark_off_runs(f"{arm}-")
            workers.pop().stop()
            # Phase 2: a worker whose checks time out at 0.5 s against a detector that takes 30 s.
            model.control(detection_delay_s=HUNG_DELAY_S)
            # No gathering of turns into one call (the batch wait must be shorter than the check's timeout):
            # the whole 0.5 s goes to the hanging call.
            workers.append(Worker("hung", **worker_env, DETECTION_TIMEOUT_S=HUNG_TIMEOUT_S, DETECTION_BATCH_WAIT_MS=0))
            for b, block in enumerate(blocks):
                for arm in PHASE_2[b % 3:] + PHASE_2[:b % 3]:
                    model.control(phase=arm)
                    segments.arm = arm
                    load_samples.append(os.getloadavg()[0])
                    if arm == "hung":
                        latencies[arm] += run_arm(kb=kb, name=f"{arm}-{b}", questions=block)["latencies"]
                        drained = wait_for_detection("hung-", limit_s=len(block) * HUNG_TIMEOUT_S + 60)
                        log(f"[hung-{b}] every hung detection recorded {drained:.1f} s after the last reply")
                    else:
                        with no_detection:
                            latencies[arm] += run_arm(kb=kb, name=f"{arm}-{b}", questions=block)["latencies"]
                        mark_off_runs(f"{arm}-")
        log("")
        for arm in ARMS:
            log(f"[check] {arm:5}: {outcomes(arm + '-')}")
        log(f"[check] scripted server requests by arm and kind: {dict(sorted(model.control().items()))}")
        log(f"[check] open conflicts recorded: {Conflict.objects.filter(knowledge_base=kb).count()}")
        connection.close()
    finally:
        for worker in workers:
            worker.stop()
        model.stop()
        common.teardown([kb])

    if args.samples_out:
        Path(args.samples_out).write_text(json.dumps(latencies))
        log(f"latencies written to {args.samples_out}")
    log(f"load average during the blocks: min {min(load_samples):.2f}, mean "
        f"{sum(load_samples) / len(load_samples):.2f}, max {max(load_samples):.2f} on {os.cpu_count()} CPUs")
    segments.report()
    log(f"wall time {wall():.0f} s; load average now {os.getloadavg()[0]:.2f}")
    report_figures(latencies)


def report_figures(latencies: dict[str, list[float]]) -> None:
    log("")
    for arm in ARMS:
        log(f"[{arm:5}] all blocks: reply latency {common.summary(latencies[arm], 1000, ' ms')}")
    p = {arm: common.percentile(values, 95) for arm, values in latencies.items()}
    m = {arm: common.percentile(values, 50) for arm, values in latencies.items()}
    p_off = common.percentile(latencies["offA"] + latencies["offB"], 95)
    p_off2 = common.percentile(latencies["offC"] + latencies["offD"], 95)
    m_off = common.percentile(latencies["offA"] + latencies["offB"], 50)
    m_off2 = common.percentile(latencies["offC"] + latencies["offD"], 50)
    log(f"noise floor phase 1 (off vs off, same run): p95 offB/offA {p['offB'] / p['offA']:.3f}, "
        f"p50 {m['offB'] / m['offA']:.3f}")
    log(f"noise floor phase 2 (off vs off, same run): p95 offD/offC {p['offD'] / p['offC']:.3f}, "
        f"p50 {m['offD'] / m['offC']:.3f}")
    log(f"p50 ratios: on/off {m['on'] / m_off:.3f}, hung/off {m['hung'] / m_off2:.3f}")
    common.print_figures([
        common.Figure("reply_p95_ratio", p["on"] / p_off, "x", "<=", 1.02),
        common.Figure("reply_p95_ratio_hung", p["hung"] / p_off2, "x", "<=", 1.02),
    ])


if __name__ == "__main__":
    main()
