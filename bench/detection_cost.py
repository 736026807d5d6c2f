"""LLM cost of per-turn detection: this design against the seed design's policy, on one replay.

    .venv/bin/python bench/detection_cost.py            # 10,000 turns, 2,000-article KB, plus a sensitivity sweep
    .venv/bin/python bench/detection_cost.py --quick    # 1,000 turns, 320-article KB (about 3 minutes on an idle
                                                        # 2-core machine; progress every 250 turns with the load)
    options: --rate TURNS_PER_S (default 1), --wait-ms, --max-turns (1: one call per turn), --turns, --no-sweep

A generated help-centre KB with planted conflicting pairs (bench/_detection_fixtures.py) is imported into a
database of its own (EMBEDDED_DATABASE_NAME=kbreview_bench_detection on the embedded server, dropped and
re-created each run: the user's data is never touched). Turns are drawn by Zipf popularity over questions,
each with a fixed retrieval set of 3-8 articles; 1% of turns follow an edit of one of their articles. Turns
arrive by a Poisson process (--rate per second) on a simulated clock.

Both designs answer every turn of the same replay, each against its own scripted OpenAI-compatible server
on loopback (tests/support/scripted_llm.py: real HTTP, the real `openai` client) whose respond callback is
an oracle that knows the planted pairs:

- this design, through the real path: conflicts.services.turn_report, then the Celery task's service
  turn_detect as a worker runs it (DETECTION_DETECTOR "auto": sure claim findings stand, unsure ones are
  confirmed by the LLM, pairs about different things and pairs in the PairVerdict cache (keyed by article
  versions) are not sent, nor pairs whose aligned claim pairs a call judged consistent before under the same
  titles and headings (ClaimPairVerdict: after an edit, the sentences it left alone); turns with pairs for the LLM that arrive within DETECTION_BATCH_WAIT_MS share one
  call: the first opens a gate and a wake-up message for its end judges them). The replay plays the workers,
  the wake-up messages and the clock (class Workers, bench/_detection_replay.py). Calls and tokens are read
  from DetectionRun rows, recall from Conflict / ConflictOccurrence rows.
- the seed policy: one agents.llm_detector.detect_with_llm call per turn with >= 2 articles, every pair of
  the (first 20) articles in it, no cache, no claims.

A pure simulation of this design's call count (bench/_detection_simulation.py: the same cache rules,
agents.batching's own packing) is checked against the real run, then gives the noise over other arrival
draws and, in the full run, a sweep (replay length, Zipf exponent, number of questions, arrival rate, wait).
Figures come last.

Last session's "stalled" --quick run: not a deadlock. The quick replay took 149 s on an idle machine (its
docstring said under a minute), printed nothing between the database reset and the end, and its first turn
exported the ONNX encoder of a fresh worktree; at a load of 14-24 on 2 cores that is tens of minutes of
silence. The replay now warms the claim detector up first (timed apart) and reports progress with the load.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

# Two runs at once (say --quick beside the full run) need two databases: BENCH_DATABASE_SUFFIX=_2.
BENCH_DATABASE = "kbreview_bench_detection" + os.environ.get("BENCH_DATABASE_SUFFIX", "")
if not BENCH_DATABASE.replace("_", "").isalnum():
    raise SystemExit(f"BENCH_DATABASE_SUFFIX gives a bad database name {BENCH_DATABASE!r}")
# Before Django reads its settings: the embedded server (an empty DATABASE_URL wins over a .env file,
# which is read with overwrite=False), our own database on it, no broker, and quiet logs.
os.environ["DATABASE_URL"] = ""
os.environ["REDIS_URL"] = ""  # tasks (suggestions for new conflicts) run in process, never on a user's worker
os.environ["EMBEDDED_DATABASE_NAME"] = BENCH_DATABASE
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")
from _detection_fixtures import Oracle, arrivals, build_kb, build_questions, build_replay  # noqa: E402
from _detection_replay import load, recall, replay, this_design_results  # noqa: E402
from _detection_simulation import ClaimsMemo, Timing, simulate_calls, sweep  # noqa: E402

FULL = {"articles": 2000, "questions": 4000, "turns": 10_000}
QUICK = {"articles": 320, "questions": 640, "turns": 1_000}
ZIPF_S = 1.0
EDIT_SHARE = 0.01
PLANTED_SHARE = 0.075  # articles whose fact was changed: 150 of 2,000
SEED = 20260
RATE = 1.0  # turns per second arriving at one knowledge base (the headline; the sweep varies it)
RATES = (0.1, 0.3, 1.0, 3.0, 10.0)
NOISE_SEEDS = 5


def reset_database() -> None:
    """Drop and re-create the bench database on the embedded server, then migrate it."""
    import psycopg
    from django.conf import settings
    from django.core.management import call_command
    from psycopg import sql

    from kbreview.db.embedded import embedded_socket_dir

    db = settings.DATABASES["default"]
    if db.get("NAME") != BENCH_DATABASE or not db.get("EMBEDDED_PGDATA"):
        raise SystemExit(f"refusing to reset {db.get('NAME')!r}: not the embedded bench database")
    socket_dir = embedded_socket_dir(Path(db["EMBEDDED_PGDATA"]))
    with psycopg.connect(host=socket_dir, user=db.get("USER") or "postgres", dbname="postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DATABASE)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(BENCH_DATABASE)))
        # We count calls, not latency: durable commits would only slow the replay down (this database only).
        conn.execute(sql.SQL("ALTER DATABASE {} SET synchronous_commit TO off").format(sql.Identifier(BENCH_DATABASE)))
    call_command("migrate", verbosity=0, interactive=False)


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson interval of a proportion."""
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller KB and replay")
    parser.add_argument("--no-sweep", action="store_true", help="skip the simulated sensitivity sweep")
    parser.add_argument("--turns", type=int, help="override the replay length (default 10,000; 1,000 with --quick)")
    parser.add_argument("--rate", type=float, default=RATE, help=f"turns arriving per second (default {RATE:g})")
    parser.add_argument("--wait-ms", type=int, help="DETECTION_BATCH_WAIT_MS for this run (default: the setting)")
    parser.add_argument("--max-turns", type=int, help="DETECTION_BATCH_MAX_TURNS for this run (1: one call per turn)")
    args = parser.parse_args()
    scale = dict(QUICK if args.quick else FULL)
    if args.turns:
        scale["turns"] = args.turns
    wall = time.monotonic()
    load_start = load()

    import django

    django.setup()
    from django.conf import settings

    if args.wait_ms is not None:
        settings.DETECTION_BATCH_WAIT_MS = args.wait_ms
    if args.max_turns is not None:
        settings.DETECTION_BATCH_MAX_TURNS = args.max_turns

    def timing_of(moments: list[float], wait_s: float | None = None) -> Timing:
        return Timing(arrival=moments, wait_s=settings.DETECTION_BATCH_WAIT_MS / 1000 if wait_s is None else wait_s,
                      max_turns=settings.DETECTION_BATCH_MAX_TURNS, max_pairs=settings.DETECTION_BATCH_MAX_PAIRS)

    reset_database()
    setup_s = time.monotonic() - wall

    kb = build_kb(n_articles=scale["articles"], planted_share=PLANTED_SHARE, seed=SEED)
    questions = build_questions(kb=kb, n_questions=scale["questions"], seed=SEED + 1)
    events = build_replay(questions=questions, n_turns=scale["turns"], zipf_s=ZIPF_S, edit_share=EDIT_SHARE,
                          seed=SEED + 2)
    timing = timing_of(arrivals(n=len(events), rate=args.rate, seed=SEED + 3))
    base_kb = build_kb(n_articles=scale["articles"], planted_share=PLANTED_SHARE, seed=SEED)  # unedited, for the sweep
    sizes = Counter(len(questions[e.question].refs) for e in events)
    distinct = len({e.question for e in events})
    print(f"KB: {len(kb.articles)} articles in {len(kb.topics)} topics, {len(kb.planted_articles)} planted article "
          f"changes -> {len(kb.planted_pairs)} conflicting pairs (ground truth)")
    print(f"replay: {len(events)} turns over {len(questions)} questions (Zipf s={ZIPF_S}; {distinct} distinct asked), "
          f"set sizes {dict(sorted(sizes.items()))}, {sum(e.edit_ref is not None for e in events)} edits")
    print(f"arrivals: Poisson, {args.rate:g} turns/s ({timing.arrival[-1] / 3600:.2f} h of traffic); batching: wait "
          f"{timing.wait_s * 1000:g} ms, at most {timing.max_turns} turns and {timing.max_pairs} pairs per call")
    print(f"database: {BENCH_DATABASE} (embedded, reset + migrated in {setup_s:.1f} s); load average {load_start:.1f} "
          f"on {os.cpu_count()} cores", flush=True)

    this_oracle, seed_oracle = Oracle(kb), Oracle(kb)
    run = replay(kb=kb, questions=questions, events=events, arrival=timing.arrival, this_oracle=this_oracle,
                 seed_oracle=seed_oracle, progress_every=250 if args.quick else 1000, seed=SEED)
    this = this_design_results(events=events)
    seed_calls, seed_tokens = seed_oracle.calls, seed_oracle.tokens
    n = len(events)

    this_recall = recall(kb=kb, questions=questions, events=events, turn_pairs=this["turn_pairs"])
    seed_recall = recall(kb=kb, questions=questions, events=events, turn_pairs=run["seed_turn_pairs"])

    timings = run["timings"]
    print(f"timing (absolute times drift with the load; the figures are counts): import {timings['import_s']:.1f} s; "
          f"claim detector warm-up {timings['warm_s']:.1f} s; this design {timings['this_s']:.1f} s "
          f"({timings['this_s'] / n * 1000:.1f} ms/turn incl. DB writes and claims); edits {timings['edits_s']:.1f} s; "
          f"seed calls on a side thread, waited {timings['seed_wait_s']:.1f} s at the end")
    print(f"this design: runs {this['outcomes']}, cache hits {this['cache_hits']} pairs, pairs about different things "
          f"not sent {this['unrelated']}, pairs whose claim pairs were all judged before not sent {this['known']}, "
          f"claim findings confirmed/rejected by the LLM {this['confirmed']}/"
          f"{this['rejected']}, PairVerdict rows {this['verdicts']}, dropped refs/snippets {this['dropped']}")
    print(f"batching: {run['windows']} windows opened; {this['turns_with_call']} turns had pairs for the LLM, by how "
          f"many turns shared their call(s): {dict(sorted(this['shared'].items()))}")
    print(f"consistency: LLM calls recorded {this['calls']} = requests served {run['this_requests']} = oracle "
          f"{this_oracle.calls}; tokens recorded {this['tokens']} vs oracle {this_oracle.tokens}; seed requests "
          f"{run['seed_requests']}")
    print()
    print(f"{'per 1,000 turns':<28}{'this design':>14}{'seed policy':>14}{'ratio':>10}")
    rows = [("LLM calls", this["calls"], seed_calls), ("LLM tokens", this["tokens"], seed_tokens),
            ("  of which prompt", this_oracle.prompt_tokens, seed_oracle.prompt_tokens),
            ("  of which completion", this_oracle.completion_tokens, seed_oracle.completion_tokens),
            ("pairs sent to the LLM", this_oracle.pairs_asked, seed_oracle.pairs_asked)]
    rows += [(f"  prompt: {part}", this_oracle.chars[part] / 4, seed_oracle.chars[part] / 4)
             for part in ("system", "articles", "other")]
    rows += [("reply items listed", this_oracle.items, seed_oracle.items),
             ("  of which conflicts", this_oracle.conflict_items, seed_oracle.conflict_items)]
    for label, mine, seeds in rows:
        print(f"{label:<28}{mine / n * 1000:>14.1f}{seeds / n * 1000:>14.1f}{mine / seeds if seeds else 0:>10.4f}")
    print("(prompt parts in tokens at 4 characters each: system prompt; <article> elements, tags included; the rest of "
          "the user message: the date, notes, the pairs listed, the reminder)")
    print()
    for name, r in (("this design", this_recall), ("seed policy", seed_recall)):
        low, high = wilson(r["flagged"], r["co_retrieved"])
        print(f"{name}: planted pairs co-retrieved {r['co_retrieved']}, flagged at least once {r['flagged']} "
              f"(recall {r['pair_recall']:.3f}, 95% CI {low:.3f}-{high:.3f}); per turn {r['turn_hit']}/{r['turn_shown']} "
              f"(recall {r['turn_recall']:.3f}); flags on unplanted pairs: {len(r['false_pairs'])} pairs, "
              f"{r['false_turn_flags']} turn-level")
    if this_recall["false_pairs"]:
        example = sorted(this_recall["false_pairs"])[:3]
        print(f"  unplanted pairs this design flagged (sure claim findings, never sent to the LLM), e.g. {example}")

    print("\nsimulation of this design's call count (its rules, agents.batching's packing; seed = 1 call per turn):")
    claims = ClaimsMemo(base_kb)
    t0 = time.monotonic()
    simulated = simulate_calls(questions=questions, events=events, claims=claims, timing=timing)
    print(f"  check: simulated calls on the measured replay {simulated} vs measured {this['calls']}")
    ratios = [simulate_calls(questions=questions, events=events, claims=claims,
                             timing=timing_of(arrivals(n=n, rate=args.rate, seed=SEED + 100 + k))) / n
              for k in range(NOISE_SEEDS)]
    mean = sum(ratios) / len(ratios)
    sd = math.sqrt(sum((r - mean) ** 2 for r in ratios) / (len(ratios) - 1))
    print(f"  noise: llm_calls_ratio over {NOISE_SEEDS} other arrival draws at {args.rate:g} turns/s: mean {mean:.4f}, "
          f"sd {sd:.4f}, range {min(ratios):.4f}-{max(ratios):.4f}")
    if not args.no_sweep:
        print("  sweep (one parameter changed at a time):")
        for label, ratio in sweep(kb=base_kb, claims=claims, turns=scale["turns"], questions_n=scale["questions"],
                                  rate=args.rate, timing_of=timing_of, seed=SEED, zipf_s=ZIPF_S,
                                  edit_share=EDIT_SHARE, rates=RATES):
            print(f"    {label:<72} llm_calls_ratio {ratio:.4f}")
    print(f"  (simulation {time.monotonic() - t0:.0f} s)")

    print(f"\nplanted_recall target = the seed policy's recall on the same replay ({seed_recall['pair_recall']:.4f})")
    print(f"wall time {time.monotonic() - wall:.0f} s; load average {load_start:.1f} at start, {load():.1f} at the end")
    print(f"figure: llm_calls_ratio {this['calls'] / seed_calls:.4f} x target <= 0.10")
    print(f"figure: llm_tokens_ratio {this['tokens'] / seed_tokens:.4f} x target <= 0.08")
    print(f"figure: planted_recall {this_recall['pair_recall']:.4f} share target >= {seed_recall['pair_recall']:.4f}")


if __name__ == "__main__":
    main()
