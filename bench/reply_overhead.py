"""Does conflict detection slow the reply? Reply latency of the built-in answer path with detection on vs off.

    .venv/bin/python bench/reply_overhead.py            # 240 turns per arm in 4 blocks, 24 concurrent callers
    .venv/bin/python bench/reply_overhead.py --quick    # 64 turns per arm in 2 blocks (about a minute when idle)

Every turn goes through conflicts.services.answer_question (hybrid search -> turn recorded -> LLM answer ->
reply recorded) against a scripted OpenAI-compatible server on loopback (tests/support/scripted_llm.py: a
real HTTP server and the real `openai` client) configured as settings.LLM. The server tells the two kinds
of request apart by the response_format schema name: "answer" replies after 0.8 s, "pair_verdicts"
(detection) after 1.5 s, or 30 s in the hung arm.

Arms (same questions in each; split into blocks that alternate, so drift on a shared machine hits both sides):
  offA   no detection. `conflicts.services.detection.detection_dispatch` is replaced by a no-op for the block,
         so everything else is identical: the turn, its usages and its queued DetectionRun are still
         written in the same transaction; only the check never starts. (DETECTION_DISPATCH="off" would
         record the turn as skipped instead, one write fewer than the on arm.)
  on     DETECTION_DISPATCH="process" (the embedded default), DETECTION_DETECTOR="auto" (claims, then the LLM
         for the pairs the claims did not settle). The scripted detector flags the first pair as a conflict
         (with real quotes) and adds one item with invented refs, so only that pair's verdict is cached and
         every turn still makes a real 1.5 s detection call (the worst case for the reply). After each on
         block we wait until its detections have finished, so the next off block runs clean.
  offB   as offA, alternating with hung (phase 2).
  hung   as on, but the detection reply takes 30 s and DETECTION_TIMEOUT_S is 0.5 s (the detection LLM call
         is capped at that timeout too).
Figures: reply_p95_ratio = p95(on) / p95(offA); reply_p95_ratio_hung = p95(hung) / p95(offB).

Callers: a ThreadPoolExecutor of 24 threads, staggered start, each closing its database connection after
every turn (as a request with CONN_MAX_AGE=0 does). Afterwards DetectionRun outcomes are counted per arm.
"""
from __future__ import annotations

import argparse
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
ARMS = ("offA", "on", "offB", "hung")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="64 turns per arm; about a minute")
    parser.add_argument("--turns", type=int, help="turns per arm (default 240, quick 64)")
    args = parser.parse_args()
    turns = args.turns or (64 if args.quick else 240)
    n_blocks = 2 if args.quick else 4
    n_articles = 80 if args.quick else 200
    wall = common.Stopwatch()
    log(f"bench/reply_overhead.py {'--quick' if args.quick else '(full)'}: {turns} turns per arm, {CALLERS} callers; "
        f"answer {ANSWER_DELAY_S} s, detection {DETECTION_DELAY_S} s, hung {HUNG_DELAY_S} s with timeout {HUNG_TIMEOUT_S} s; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    common.setup_django(database="reply")
    from django.conf import settings
    from django.db import connection
    from django.test import override_settings

    import conflicts.services.detection as detection
    from articles.services import articles_import
    from conflicts.models import Conflict
    kb = common.new_knowledge_base("reply")
    model = ScriptedModel()
    try:
        report = articles_import(knowledge_base=kb, parsed=common.to_parsed(common.generate_articles(n_articles, seed=3)))
        log(f"[setup] {n_articles} articles, {report.chunks_indexed} chunks indexed ({wall():.0f} s)")
        questions = common.generate_questions(turns, seed=17)
        llm = {"base_url": model.base_url, "api_key": "bench", "model": "scripted-model", "timeout_s": 30.0,
               "json_mode": "json_schema"}
        no_detection = mock.patch.object(detection, "detection_dispatch", lambda *, turn_id: None)
        blocks = [questions[i::n_blocks] for i in range(n_blocks)]
        latencies: dict[str, list[float]] = {arm: [] for arm in ARMS}
        with override_settings(LLM=llm, DETECTION_DISPATCH="process", DETECTION_DETECTOR="auto"):
            with no_detection:
                model.control(phase="warm")
                run_arm(kb=kb, name="warm", questions=common.generate_questions(CALLERS, seed=1))
            # Phase 1: off-a and on alternate block by block (drift on a shared machine hits both alike).
            for b, block in enumerate(blocks):
                with no_detection:
                    model.control(phase="offA")
                    latencies["offA"] += run_arm(kb=kb, name=f"offA-{b}", questions=block)["latencies"]
                model.control(phase="on")
                latencies["on"] += run_arm(kb=kb, name=f"on-{b}", questions=block)["latencies"]
                drained = wait_for_detection("on-", limit_s=3 * len(block) * DETECTION_DELAY_S)
                log(f"[on-{b} ] all detections done {drained:.1f} s after the last reply")
            # Phase 2: off-b and hung alternate. Last, because hung calls occupy the bounded pool for up to 30 s.
            model.control(detection_delay_s=HUNG_DELAY_S)
            for b, block in enumerate(blocks):
                with no_detection:
                    model.control(phase="offB")
                    latencies["offB"] += run_arm(kb=kb, name=f"offB-{b}", questions=block)["latencies"]
                with override_settings(DETECTION_TIMEOUT_S=HUNG_TIMEOUT_S):
                    model.control(phase="hung")
                    latencies["hung"] += run_arm(kb=kb, name=f"hung-{b}", questions=block)["latencies"]
                    drained = wait_for_detection("hung-", limit_s=len(block) * HUNG_TIMEOUT_S + 30)
                log(f"[hung-{b}] every hung detection recorded {drained:.1f} s after the last reply")
        log("")
        for arm in ARMS:
            log(f"[check] {arm:5}: {outcomes(arm + '-')}")
        log(f"[check] scripted server requests by arm and kind: {dict(sorted(model.control().items()))}")
        log(f"[check] open conflicts recorded: {Conflict.objects.filter(knowledge_base=kb).count()}")
        connection.close()
    finally:
        model.stop()
        common.teardown([kb])

    log("")
    for arm in ARMS:
        log(f"[{arm:5}] all blocks: reply latency {common.summary(latencies[arm], 1000, ' ms')}")
    p = {arm: common.percentile(values, 95) for arm, values in latencies.items()}
    m = {arm: common.percentile(values, 50) for arm, values in latencies.items()}
    log(f"p50 ratios: on/offA {m['on'] / m['offA']:.3f}, hung/offB {m['hung'] / m['offB']:.3f}")
    log(f"wall time {wall():.0f} s; load average now {os.getloadavg()[0]:.2f}")
    common.print_figures([
        common.Figure("reply_p95_ratio", p["on"] / p["offA"], "x", "<=", 1.01),
        common.Figure("reply_p95_ratio_hung", p["hung"] / p["offB"], "x", "<=", 1.01),
    ])


if __name__ == "__main__":
    main()
