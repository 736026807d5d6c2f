"""Does the review console stay fast at 50,000 conflicts and 500,000 occurrences?

    .venv/bin/python bench/console.py            # 50,000 conflicts / 500,000 occurrences (and 1% of it first)
    .venv/bin/python bench/console.py --quick    # 5,000 conflicts / 50,000 occurrences (about a minute)
    .venv/bin/python bench/console.py --explain  # also EXPLAIN ANALYZE the slowest query of each page at full size,
                                                 # and every query of every page: the SQL-only time per page

Data (own database `kbreview_bench_console` on the embedded server, dropped and migrated fresh, dropped at
the end; with DATABASE_URL set, a throwaway knowledge base that is deleted afterwards). Everything is
written in SQL (COPY and INSERT ... SELECT generate_series), never row by row through the ORM:
  articles   a few thousand generated support articles (bench/_common.py), 1-3 versions each, no chunks
             (these pages never read them); created once, at the start, for both sizes.
  conflicts  pairs of articles (each article is in ~20 pairs at full size); status open 60% /
             processed 28% / dismissed 12%; reviewed ones carry reviewer, time, note and versions; 5% of the
             open ones "regressed" (back after a review); types skewed towards price/hours/policy; the snippets are real
             sentences of the two bodies; an activity row per state change; 30% have a suggestion.
  occurrences one turn each (question + the reply sent), created over the last 90 days (skewed to recent),
             30% cited (a fifth of those cite both); every conflict has at least one, the rest follow a power law (conflict picked as
             floor(N * u^3)): the hottest conflict has thousands, the median two or three.
             times_seen / times_cited / first_seen / last_seen / impact are then computed from the
             occurrences exactly as conflicts.services.detection keeps them (impact = log-sum-exp of the
             7-day half-life points).
The same knowledge base is measured twice: at 1% of the conflicts and occurrences, then grown to full size
(VACUUM ANALYZE after each load, as autovacuum would have done).

Measured: Django's test Client, in-process, logged in (force_login) as a member with the reviewer role, so a
request runs the whole stack: middleware, session and user lookups, the permission check, the view, the
template, and a database connection per request (CONN_MAX_AGE=0, the default). Pages are requested round-
robin (so drift on a shared machine hits all of them alike), warm-up first, then p50/p95 per page.
SQL queries per page are counted with django.test.utils.CaptureQueriesContext on one request of each.
  queue         /conflicts/?status=open                    (default tab and order: impact)
  queue_p10     /conflicts/?status=open&after=<cursor>      (page 10 by keyset; the last one if there are fewer)
  queue_filter  /conflicts/?status=open&type=price&sort=recent
  queue_search / queue_last: a text search (GIN-indexed generated tsvector) and the last page (keyset:
  the reverse order's first rows), each a figure of its own (queue_search_p95_ms, queue_last_page_p95_ms).
  info only, not in the figures: the Resolved tab and the
  default page at 100 rows (the view has no page-size parameter: its module constant PAGE_SIZE is set to 100
  for that page only, to show the query count does not depend on it).
  detail_hot    the conflict with the most occurrences
  detail_typ    an open conflict with the median number of occurrences
Figures: queue_p95_ms / detail_p95_ms are the worst p95 of the measured queue / detail pages at full size;
queue_p95_growth is the worst (p95 at full size / p95 at 1%) over the queue pages that show as many rows at
both sizes (with --quick, 1% is only 50 conflicts, so page 10 and the type filter drop out); queue_queries /
detail_queries are the query counts, "constant" when every page of its kind at both sizes (and the
100-row page) needs the same number.
With --explain, each page's SQL-only time is printed too (info, not a figure): every query the page ran,
EXPLAIN ANALYZE'd and summed, median and minimum of 7 rounds. On a shared machine the wall-clock p95 mostly
measures the other processes; the SQL-only minimum is the least exposed to them.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402
from _console_data import Dataset, drop_scratch_tables, execute, table  # noqa: E402

REVIEWER = "bench-console-reviewer"
QUEUE_PAGES = ("queue", "queue_p10", "queue_filter")
DETAIL_PAGES = ("detail_hot", "detail_typ")
INFO_PAGES = ("queue_resolved", "queue_search", "queue_last", "queue_100")


log = common.log


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5,000 conflicts / 50,000 occurrences, fewer requests")
    parser.add_argument("--conflicts", type=int, help="conflicts at full size (default 50,000)")
    parser.add_argument("--occurrences", type=int, help="occurrences at full size (default 500,000)")
    parser.add_argument("--articles", type=int, help="articles (default 5,000; 1,000 with --quick)")
    parser.add_argument("--requests", type=int, help="measured requests per page (default 50; 40 with --quick)")
    parser.add_argument("--warmup", type=int, default=5, help="warm-up requests per page")
    parser.add_argument("--explain", action="store_true",
                        help="EXPLAIN ANALYZE the slowest query of each page, and every query of every page (SQL-only time), at full size")
    parser.add_argument("--keep", action="store_true", help="leave the benchmark database in place for inspection")
    return parser.parse_args()


# --- measuring pages ---------------------------------------------------------------------------------


def page_urls(kb) -> dict[str, str]:
    from django.urls import reverse

    from conflicts.models import Conflict

    conflicts = Conflict.objects.filter(knowledge_base=kb)
    hot = conflicts.order_by("-times_seen", "pk").values_list("pk", flat=True)[0]
    open_conflicts = conflicts.filter(status="open")
    median = open_conflicts.order_by("times_seen", "pk").values_list("times_seen", flat=True)[open_conflicts.count() // 2]
    typical = open_conflicts.filter(times_seen=median).order_by("pk").values_list("pk", flat=True)[0]
    queue = reverse("conflict_queue")
    return {
        "queue": f"{queue}?status=open",
        "queue_p10": queue + "?" + urlencode({"status": "open", "after": _tenth_page_cursor(kb)}),
        "queue_filter": f"{queue}?status=open&type=price&sort=recent",
        "queue_resolved": f"{queue}?status=processed",
        "queue_search": f"{queue}?status=open&q=delivery",
        "queue_last": f"{queue}?status=open&last=1",
        "queue_100": f"{queue}?status=open",
        "detail_hot": reverse("conflict_detail", args=[hot]),
        "detail_typ": reverse("conflict_detail", args=[typical]),
    }


def _tenth_page_cursor(kb) -> str:
    """The keyset cursor page 10 of the Open tab starts after (or the last page's start if fewer)."""
    from conflicts.selectors import conflict_queue, conflict_queue_page

    cursor = ""
    for _ in range(9):
        page = conflict_queue_page(conflicts=conflict_queue(knowledge_base=kb), sort="impact", size=25, after=cursor)
        if not page.has_next:
            break
        cursor = page.last_key
    return cursor


class _PageSize:
    """The queue view has no page-size parameter: set its module constant for one request."""

    def __init__(self, size: int | None) -> None:
        self.size = size

    def __enter__(self):
        from conflicts.views import queue

        self.saved = queue.PAGE_SIZE
        if self.size:
            queue.PAGE_SIZE = self.size

    def __exit__(self, *exc):
        from conflicts.views import queue

        queue.PAGE_SIZE = self.saved


def _get(client, name: str, url: str):
    import time

    with _PageSize(100 if name == "queue_100" else None):
        started = time.perf_counter()
        response = client.get(url)
        elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"{name} {url} answered {response.status_code}")
    return response, elapsed


def measure(client, urls: dict[str, str], *, requests: int, warmup: int, explain: bool) -> dict[str, dict]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    results: dict[str, dict] = {}
    for name, url in urls.items():
        response, _ = _get(client, name, url)  # first request: stores the session's knowledge base
        with CaptureQueriesContext(connection) as captured:
            response, _ = _get(client, name, url)
        body = response.content.decode()
        queries = captured.captured_queries
        slowest = max(queries, key=lambda q: float(q["time"]))
        results[name] = {
            "url": url, "times": [], "queries": len(queries), "sql_ms": sum(float(q["time"]) for q in queries) * 1000,
            "sql": [q["sql"] for q in queries],
            "rows": body.count('class="conflict-row"'), "occurrences": body.count('class="occurrence"'),
            "seen": int(m.group(1)) if (m := re.search(r"most recent of (\d+)", body)) else None,
            "bytes": len(response.content), "slowest_sql": slowest["sql"], "slowest_ms": float(slowest["time"]) * 1000,
        }
    for _ in range(warmup):
        for name, url in urls.items():
            _get(client, name, url)
    for _ in range(requests):  # round-robin: drift on a shared machine hits every page alike
        for name, url in urls.items():
            results[name]["times"].append(_get(client, name, url)[1])
    if explain:
        for name, result in results.items():
            result["plan"] = execute("EXPLAIN (ANALYZE, BUFFERS) " + result["slowest_sql"])
        sql_only(results)
    return results


def sql_only(results: dict[str, dict], *, repeats: int = 7) -> None:
    """Each page's SQL time inside the server: every query the page ran, EXPLAIN ANALYZE'd (planning +
    execution, as PostgreSQL reports them), summed per page; `repeats` rounds, round-robin over the
    pages. The median and the minimum of the rounds are kept: on a shared machine the minimum is the
    closest to the page's own cost, the wall-clock p95 the most exposed to other processes."""
    import json as json_module

    def server_ms(sql: str) -> float:
        (raw,), = execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
        plan = (raw if isinstance(raw, list) else json_module.loads(raw))[0]
        return plan["Planning Time"] + plan["Execution Time"]

    rounds: dict[str, list[float]] = {name: [] for name in results}
    for _ in range(repeats):
        for name, result in results.items():
            rounds[name].append(sum(server_ms(sql) for sql in result["sql"] if sql.lstrip().upper().startswith("SELECT")))
    for name, result in results.items():
        result["sql_only_ms"] = (common.percentile(rounds[name], 50), min(rounds[name]))


def tab_count_hint(kb, repeats: int = 20) -> str:
    """The queue's tab counts as the selector runs them, against COUNT(*) per status, which PostgreSQL can
    answer from the (knowledge_base, status, ...) indexes alone (an index-only scan instead of reading
    every conflict row): evidence for the report, not a figure."""
    import time

    from conflicts import selectors
    from conflicts.models import Conflict

    def best(run) -> float:
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        return common.percentile(times, 50) * 1000

    current = best(lambda: selectors.conflict_tab_counts(knowledge_base=kb))
    alternative = best(lambda: execute(
        f"SELECT status, count(*) FROM {table(Conflict)} WHERE knowledge_base_id = %s GROUP BY status", [kb.pk]))
    return (f"tab counts, median of {repeats}: selectors.conflict_tab_counts {current:.1f} ms; "
            f"COUNT(*) GROUP BY status (index-only) {alternative:.1f} ms")


def report(label: str, results: dict[str, dict]) -> None:
    log(f"[{label}] {'page':<15} {'p50 ms':>8} {'p95 ms':>8} {'queries':>7} {'sql ms':>7} {'rows':>5} {'KB':>6}  url")
    for name, r in results.items():
        shown = r["rows"] if name.startswith("queue") else r["occurrences"]
        log(f"[{label}] {name:<15} {common.percentile(r['times'], 50) * 1000:>8.1f} {common.percentile(r['times'], 95) * 1000:>8.1f} "
            f"{r['queries']:>7} {r['sql_ms']:>7.1f} {shown:>5} {r['bytes'] / 1024:>6.1f}  {r['url']}"
            + ("  (PAGE_SIZE=100)" if name == "queue_100" else ""))
    if any("sql_only_ms" in r for r in results.values()):
        log(f"[{label}] SQL only (EXPLAIN ANALYZE of every query of the page, planning + execution, summed; "
            f"median and minimum of 7 rounds):")
        for name, r in results.items():
            log(f"[{label}]   {name:<15} median {r['sql_only_ms'][0]:7.1f} ms   min {r['sql_only_ms'][1]:7.1f} ms")
    for name, r in results.items():
        log(f"[{label}] slowest SQL of {name}: {r['slowest_ms']:.1f} ms: {r['slowest_sql'][:220]}")
        for (line,) in r.get("plan", []):
            log(f"[{label}]     {line}")


def main() -> None:
    args = parse_args()
    n_conflicts = args.conflicts or (5_000 if args.quick else 50_000)
    n_occurrences = args.occurrences or (50_000 if args.quick else 500_000)
    n_articles = args.articles or (1_000 if args.quick else 5_000)
    requests = args.requests or (40 if args.quick else 50)
    warmup = 3 if args.quick and args.warmup == 5 else args.warmup
    small_conflicts, small_occurrences = max(1, n_conflicts // 100), max(1, n_occurrences // 100)
    wall = common.Stopwatch()
    log(f"bench/console.py {'--quick' if args.quick else '(full)'}: {n_articles} articles; {small_conflicts} conflicts / "
        f"{small_occurrences} occurrences, then {n_conflicts} / {n_occurrences} in the same knowledge base; "
        f"{requests} requests per page after {warmup} warm-up; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    common.setup_django(database="console")
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.utils import timezone

    from articles.models import Membership, Role

    kb = common.new_knowledge_base("console")
    try:
        reviewer = get_user_model().objects.create_user(username=f"{REVIEWER}-{kb.slug[-8:]}", password=None)
        Membership.objects.create(user=reviewer, knowledge_base=kb, role=Role.REVIEWER)
        data = Dataset(kb=kb, reviewer=reviewer, n_articles=n_articles, now=timezone.now())
        started = common.Stopwatch()
        data.create_articles()
        log(f"[data] {n_articles} articles with their versions in {started():.1f} s")
        client = Client()
        client.force_login(reviewer)

        started = common.Stopwatch()
        data.grow(conflicts=small_conflicts, occurrences=small_occurrences)
        log(f"[data] 1%: {data.describe()} in {started():.1f} s")
        small = measure(client, page_urls(kb), requests=requests, warmup=warmup, explain=False)
        report("1%", small)

        started = common.Stopwatch()
        data.grow(conflicts=n_conflicts, occurrences=n_occurrences)
        load_s = started()
        log(f"[data] full: {data.describe()} in {load_s:.1f} s "
            f"({(n_occurrences - small_occurrences) / load_s:,.0f} occurrences with their turns per second)")
        full = measure(client, page_urls(kb), requests=requests, warmup=warmup, explain=args.explain)
        report("full", full)
        log(f"[full] {tab_count_hint(kb)}")
    finally:
        if args.keep:
            log(f"--keep: the database and knowledge base {kb.slug} are left in place")
        else:
            drop_scratch_tables()
            common.teardown([kb])

    def p95(results, name):
        return common.percentile(results[name]["times"], 95) * 1000

    # A page is compared only when it shows as many rows at 1% as at full size (with --quick, 1% is 50
    # conflicts: page 10 does not exist and the type filter leaves a handful).
    comparable = [name for name in QUEUE_PAGES if small[name]["rows"] == full[name]["rows"]]
    growth = {name: p95(full, name) / p95(small, name) for name in comparable}
    skipped = [f"{name} ({small[name]['rows']} rows at 1%, {full[name]['rows']} at full size)"
               for name in QUEUE_PAGES if name not in comparable]
    queue_counts = {(size, name): r["queries"] for size, results in (("1%", small), ("full", full))
                    for name, r in results.items() if name.startswith("queue")}
    detail_counts = {(size, name): results[name]["queries"] for size, results in (("1%", small), ("full", full))
                     for name in DETAIL_PAGES}
    log("")
    log("queue p95 growth (full / 1%): " + ", ".join(f"{name} {value:.2f}x" for name, value in growth.items())
        + " | info: " + ", ".join(f"{name} {p95(full, name) / p95(small, name):.2f}x" for name in INFO_PAGES))
    if skipped:
        log("not in queue_p95_growth, not comparable: " + "; ".join(skipped))
    log("queries per page: " + ", ".join(f"{name}@{size}={n}" for (size, name), n in sorted(queue_counts.items())))
    log("queries per page: " + ", ".join(f"{name}@{size}={n}" for (size, name), n in sorted(detail_counts.items()))
        + f" (the page shows the latest {full['detail_hot']['occurrences']} of the hot conflict's {full['detail_hot']['seen']} occurrences)")
    if args.quick:
        log(f"--quick: {n_conflicts} conflicts / {n_occurrences} occurrences and {requests} requests per page "
            "instead of 50,000 / 500,000 and 50")
    log(f"wall time {wall():.0f} s; load average now {os.getloadavg()[0]:.2f}")

    figures = [
        common.Figure("queue_p95_ms", max(p95(full, name) for name in QUEUE_PAGES), "ms", "<", 150, digits=1),
        common.Figure("detail_p95_ms", max(p95(full, name) for name in DETAIL_PAGES), "ms", "<", 150, digits=1),
        common.Figure("queue_p95_growth", max(growth.values()), "x", "<=", 2, digits=2),
        # The text search (GIN-indexed generated tsvector) and the deepest page, at full size.
        common.Figure("queue_search_p95_ms", p95(full, "queue_search"), "ms", "<", 150, digits=1),
        common.Figure("queue_last_page_p95_ms", p95(full, "queue_last"), "ms", "<", 150, digits=1),
    ]
    constant = [
        ("queue_queries", queue_counts[("full", "queue")], len(set(queue_counts.values())) == 1,
         sorted(set(queue_counts.values()))),
        ("detail_queries", detail_counts[("full", "detail_hot")], len(set(detail_counts.values())) == 1,
         sorted(set(detail_counts.values()))),
    ]
    print()
    print(f"{'figure':<28} {'value':>12} {'target':>12}  met")
    for f in figures:
        print(f"{f.name:<28} {f.value:>12.{f.digits}f} {f.op + ' ' + format(f.target, 'g'):>12}  {'yes' if f.met() else 'NO'}")
    for name, value, met, seen in constant:
        print(f"{name:<28} {value:>12d} {'constant':>12}  {'yes' if met else 'NO (seen ' + ', '.join(map(str, seen)) + ')'}")
    for f in figures:
        print(f.line())
    for name, value, _, _ in constant:
        print(f"figure: {name} {value} queries target constant")


if __name__ == "__main__":
    main()
