"""Benchmark: answer policies for open conflicts on the demo knowledge base, side by side in one run.

    .venv/bin/python bench/answer_policy.py            # every demo question, 50k open conflicts for the look-up
    .venv/bin/python bench/answer_policy.py --quick    # the questions about planted conflicts and 20 others

The demo knowledge base is imported into a database of the benchmark's own; its planted conflicts are opened as the
queue would hold them, and each gets its suggestion from the product's engine (conflicts.services.suggestions, no LLM:
the executable rules), whatever side and confidence it gives. Then every question is replayed through the built-in
answer path (conflicts.services.answer_question: search, the open-conflict look-up, the turn recorded, the extractive
answer, the reply recorded) under each policy in turn — the policies interleaved question by question, so drift on a
shared machine hits them alike; detection is off (it runs beside the reply on a worker and is not measured here).

Scoring, per policy: a reply "about a planted conflict" answers a question whose expected articles are a planted pair
with a known right side (planted.json's labels; the undecidable pair is left out); it "states the wrong side" when it
cites the article the labels say is wrong (the extractive answer quotes what it cites). Caveat: every reply citing an
article in an open conflict should carry the caveat, and no other. Latency: each policy's reply p95 over off's, same run.
The look-up alone is then timed at 50k open conflicts (20k articles, a third of the conflicts with a suggestion) in a
second knowledge base, on retrieval sets of 8 refs.

Sentence vectors are computed once per text in this process, every article's sentences and every question before
the replay (they repeat across the policies, and a policy that holds an article back brings another's sentences into
the answer, which no policy should pay for first): each reply's time is then search, the look-up, the writes and the extraction without the
encoder, a smaller denominator than a real reply's, so the latency ratio errs high, not low. Suggestions carry
calibrated confidences (the built-in rules' measured accuracy; "cannot tell" below the product's bar), whatever the
knowledge base's policy threshold, which --threshold sets (default 0.5, below every confidence a suggestion can carry,
so the policy acts on every suggestion the engine makes).

On a shared machine run it at a raised priority where allowed (`echo -10 > /proc/self/autogroup` in the shell first):
on the embedded default the database backend serving the run is given the same priority (backend_priority_as_client).

Figures: wrong_side_ratio_prefer_suggested, wrong_side_ratio_quarantine (wrong-side share under the policy / under
off), policy_reply_p95_ratio (the slowest policy's reply p95 / off's), and, logged above the figures, the noise floor (off run
twice, interleaved like the policies: the second's p95 / the first's; a policy ratio within it is noise), conflict_lookup_p95_ms.
Logged too: each arm's reply time minus off's for the same question (median and mean), the policy's own cost apart
from the tail.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

POLICIES = ("off", "caveat", "prefer_suggested", "quarantine")
NOISE_ARM = "off (again)"  # the same arm twice: its p95 ratio to off is the run's noise floor
ARMS = POLICIES + (NOISE_ARM,)
SEED = 20261130
log = common.log


def open_planted_conflicts(kb, planted: list[dict]) -> dict[tuple[str, str], object]:
    """Each planted pair as an open conflict (as detection would have left it), with its suggestion computed."""
    from django.utils import timezone

    from articles.models import Article
    from conflicts.models import Conflict, ConflictActivity
    from conflicts.services.suggestions import suggestion_compute

    by_ref = {a.external_ref: a for a in Article.objects.filter(knowledge_base=kb)}
    conflicts = {}
    now = timezone.now()
    for item in planted:
        a, b = sorted((by_ref[r] for r in item["refs"]), key=lambda x: x.pk)
        conflict = Conflict.objects.create(
            knowledge_base=kb, article_low=a, article_high=b, type=item["type"], explanation=f"planted {item['type']}",
            detector="claims", first_seen=now, last_seen=now, times_seen=1,
        )
        ConflictActivity.objects.create(conflict=conflict, kind="opened", from_status="open", to_status="open")
        suggestion = suggestion_compute(conflict_id=conflict.pk)
        winner = suggestion.winner.external_ref if suggestion.winner_id else None
        log(f"  planted {'/'.join(sorted(item['refs'])):<55} right: {item['correct'] or '(cannot tell)':<28} "
            f"suggested: {winner or '-':<28} confidence {suggestion.confidence:.2f}")
        conflicts[tuple(sorted(item["refs"]))] = conflict
    return conflicts


def memoise_sentence_vectors():
    """One encoder call per distinct text in this process (see the module's docstring)."""
    import numpy as np

    import articles.embeddings as embeddings
    import articles.selectors as selectors
    import conflicts.services.answering as answering

    encode, memo = embeddings.embed_texts, {}

    def embed_texts(texts, **kwargs):
        missing = [t for t in dict.fromkeys(texts) if t not in memo]
        if missing:
            memo.update(zip(missing, encode(missing, **kwargs)))
        return np.stack([memo[t] for t in texts]) if texts else encode(texts, **kwargs)

    embeddings.embed_texts = embed_texts
    answering.embed_texts = embed_texts  # the extractive answer's sentences (imported by name there)
    selectors.embed_text = lambda text: embed_texts([text])[0]
    return embed_texts


def prewarm_sentence_vectors(kb, questions: list[dict], embed) -> None:
    """Every article sentence and question embedded before the replay, so no policy pays for a text first seen
    under it (a policy that holds an article back brings another article's sentences into the answer)."""
    from agents.answer import split_sentences
    from articles.models import Article

    bodies = Article.objects.filter(knowledge_base=kb).values_list("current_version__body", flat=True)
    texts = [s for body in bodies for s in split_sentences(body)] + [q["question"] for q in questions]
    for start in range(0, len(texts), 256):
        embed(texts[start:start + 256])
    log(f"pre-embedded {len(set(texts))} sentences and questions")


def replay(kb, questions: list[dict], planted: list[dict]) -> dict[str, list[dict]]:
    from conflicts.models import AnswerSettings
    from conflicts.services import answer_question

    rows: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    rng = random.Random(SEED)
    for index, item in enumerate(questions):
        order = list(ARMS)
        rng.shuffle(order)  # no policy always first (warm caches) or last
        for policy in order:
            AnswerSettings.objects.filter(knowledge_base=kb).update(policy="off" if policy == NOISE_ARM else policy)
            started = time.perf_counter()
            result = answer_question(knowledge_base=kb, question=item["question"])
            seconds = time.perf_counter() - started
            rows[policy].append({"id": item["id"], "expect": set(item["expect_refs"]), "citations": set(result.citations),
                                 "caveat": result.caveat_added, "held_back": result.held_back, "seconds": seconds})
        if (index + 1) % 20 == 0:
            log(f"  {index + 1}/{len(questions)} questions replayed under {len(POLICIES)} policies")
    return rows


def score(rows: dict[str, list[dict]], planted: list[dict], conflicted_refs: set[str]) -> dict:
    wrong_of = {tuple(sorted(p["refs"])): next(r for r in p["refs"] if r != p["correct"])
                for p in planted if p["correct"]}
    out = {}
    for policy, replies in rows.items():
        about = [r for r in replies if tuple(sorted(r["expect"])) in wrong_of]
        wrong = [r for r in about if wrong_of[tuple(sorted(r["expect"]))] in r["citations"]]
        cites_conflicted = [r for r in replies if r["citations"] & conflicted_refs]
        caveat_missing = sum(1 for r in cites_conflicted if not r["caveat"])
        caveat_extra = sum(1 for r in replies if r["caveat"] and not (r["citations"] & conflicted_refs))
        out[policy] = {
            "about": len(about), "wrong": len(wrong), "share": len(wrong) / len(about) if about else float("nan"),
            "cites_conflicted": len(cites_conflicted), "caveats": sum(r["caveat"] for r in replies),
            "caveat_missing": caveat_missing, "caveat_extra": caveat_extra,
            "held_back": sum(1 for r in replies if r["held_back"]),
            "p50": common.percentile([r["seconds"] for r in replies], 50),
            "p95": common.percentile([r["seconds"] for r in replies], 95),
        }
    return out


def log_paired_differences(rows: dict[str, list[dict]]) -> None:
    """Each arm's reply time minus off's for the same question (replayed side by side): the policy's own cost, with
    the question's cost taken out and less exposed to the tail than a ratio of p95s (logged, not a figure)."""
    for arm in ARMS[1:]:
        deltas = [r["seconds"] - o["seconds"] for r, o in zip(rows[arm], rows["off"], strict=True)]
        log(f"  {arm:<18} minus off, question by question: median {common.percentile(deltas, 50) * 1000:+.2f} ms, "
            f"mean {sum(deltas) / len(deltas) * 1000:+.2f} ms")


def lookup_at_scale(*, conflicts: int, articles: int, samples: int) -> list[float]:
    """conflict_check's own time at `conflicts` open conflicts in one knowledge base (rows written directly)."""
    from django.db import connection
    from django.utils import timezone

    from articles.models import Article
    from conflicts.models import AnswerSettings, Conflict, ResolutionSuggestion
    from conflicts.services.policy import conflict_check

    kb = common.new_knowledge_base("policy-scale")
    AnswerSettings.objects.create(knowledge_base=kb, policy="quarantine")
    rng = random.Random(SEED)
    Article.objects.bulk_create(
        [Article(knowledge_base=kb, external_ref=f"scale-{i}", title=f"Scale article {i}") for i in range(articles)],
        batch_size=5000,
    )
    ids = list(Article.objects.filter(knowledge_base=kb).order_by("pk").values_list("pk", flat=True))
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < conflicts:
        a, b = rng.sample(ids, 2)
        pairs.add((min(a, b), max(a, b)))
    now = timezone.now()
    rows = [Conflict(knowledge_base=kb, article_low_id=a, article_high_id=b, type="price", explanation="x",
                     detector="claims", first_seen=now, last_seen=now, times_seen=1) for a, b in pairs]
    Conflict.objects.bulk_create(rows, batch_size=5000)
    suggested = list(Conflict.objects.filter(knowledge_base=kb).values_list("pk", "article_low_id")[: conflicts // 3])
    ResolutionSuggestion.objects.bulk_create(
        [ResolutionSuggestion(conflict_id=pk, status="suggested", winner_id=low, confidence=0.9) for pk, low in suggested],
        batch_size=5000,
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE articles_article; ANALYZE conflicts_conflict; ANALYZE conflicts_resolutionsuggestion")
    refs = [f"scale-{i}" for i in range(articles)]
    for _ in range(20):  # warm the connection and the plan cache
        conflict_check(knowledge_base=kb, refs=rng.sample(refs, 8))
    times = []
    found = 0
    for _ in range(samples):
        sample = rng.sample(refs, 8)
        started = time.perf_counter()
        check = conflict_check(knowledge_base=kb, refs=sample)
        times.append(time.perf_counter() - started)
        assert check.status == "ok", "the look-up failed during the benchmark"
        found += len(check.conflicts)
    log(f"look-up at {conflicts} open conflicts over {articles} articles, 8 refs per set: "
        f"{common.summary(times, 1000, ' ms')}; {found / samples:.1f} conflicts returned per set")
    log_query_plan(kb, rng.sample(refs, 8))
    return times


def log_query_plan(kb, refs: list[str]) -> None:
    """The server's own figures for one look-up, apart from the round trip and this machine's scheduling (on a shared
    machine the client-side p95 is mostly the latter): the function call's planning and execution time, and the plan
    its statement keeps for the session (the generic plan: the statement from migration 0024, prepared the same way)."""
    import importlib
    import re

    from django.db import connection

    from conflicts.models import DEFAULT_PREFER_THRESHOLD
    from conflicts.services.policy import MAX_CONFLICTS_PER_CHECK

    args = [kb.pk, refs, MAX_CONFLICTS_PER_CHECK, DEFAULT_PREFER_THRESHOLD]
    function = importlib.import_module("conflicts.migrations.0024_conflict_check_function")
    statement = function.CREATE.split("RETURN QUERY", 1)[1].rsplit("END", 1)[0].strip().rstrip(";")
    for number, name in enumerate(["p_kb", "p_refs", "p_limit", "p_default_threshold"], 1):
        statement = re.sub(rf"\b{name}\b", f"${number}", statement)
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE) SELECT * FROM conflict_check_rows(%s, %s, %s, %s)", args)
        call = [row[0] for row in cursor.fetchall()]
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        cursor.execute("PREPARE bench_conflict_check(bigint, text[], integer, double precision) AS " + statement)
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_conflict_check(%s, %s, %s, %s)", args)
        plan = [row[0] for row in cursor.fetchall()]
        cursor.execute("DEALLOCATE bench_conflict_check; RESET plan_cache_mode")
    for line in call:
        if "Time" in line:
            log(f"  call: {line.strip()}")
    for line in plan:
        if "Index" in line and "Scan" in line or "Execution Time" in line:
            log(f"  kept plan: {line.strip()}")


def backend_priority_as_client() -> str:
    """On the embedded default, give the PostgreSQL backend serving this process the priority this process runs at,
    where Linux allows it (`echo -10 > /proc/self/autogroup` before the run): a look-up is a round trip, so the
    backend's wait for a CPU counts as much as the client's, and PostgreSQL starts each backend in an autogroup of
    its own at nice 0. Says what it did, for the log."""
    from django.conf import settings
    from django.db import connection

    try:
        nice = Path("/proc/self/autogroup").read_text().split()[-1]
    except OSError:
        return "no autogroups here: priorities as they are"
    if not settings.DATABASES["default"].get("EMBEDDED_PGDATA") or int(nice) >= 0:
        return f"this process at autogroup nice {nice}; the database backend as it is"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        if Path(f"/proc/{pid}/comm").read_text().strip() != "postgres":
            return f"backend {pid} is not a local postgres process: left as it is"
        Path(f"/proc/{pid}/autogroup").write_text(nice)
    except OSError as exc:
        return f"this process at autogroup nice {nice}; backend {pid} left as it is ({exc.strerror})"
    return f"this process and its database backend ({pid}) at autogroup nice {nice}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="2 questions per planted conflict and 8 others; 300 look-ups")
    parser.add_argument("--lookup-only", action="store_true",
                        help="only the look-up at 50k open conflicts (conflict_lookup_p95_ms)")
    parser.add_argument("--threshold", type=float, default=0.5,
                        help="the demo knowledge base's suggestion threshold (default 0.5: its unvalidated rules)")
    args = parser.parse_args()
    clock = common.Stopwatch()

    common.setup_django(database="answer_policy")
    from django.conf import settings

    from articles.demo import demo_paths, demo_planted, demo_questions
    from articles.services import articles_import_paths, knowledge_base_get_or_create
    from conflicts.models import AnswerSettings

    settings.DETECTION_DISPATCH = "off"  # detection runs beside the reply on a worker; not measured here
    log(f"priority: {backend_priority_as_client()}")
    if args.lookup_only:
        lookup = lookup_at_scale(conflicts=50_000, articles=20_000, samples=300 if args.quick else 2000)
        common.print_figures([
            common.Figure("conflict_lookup_p95_ms", common.percentile(lookup, 95) * 1000, "ms", "<=", 3.0),
        ])
        return 0
    kb = knowledge_base_get_or_create(slug="bench-answer-policy", name="Demo (bench)")
    articles_import_paths(knowledge_base=kb, paths=demo_paths())
    planted = demo_planted()["conflicts"]
    log(f"demo imported ({clock():.1f} s); {len(planted)} planted conflicts opened, suggestions computed:")
    open_planted_conflicts(kb, planted)
    AnswerSettings.objects.update_or_create(knowledge_base=kb, defaults={"policy": "off", "prefer_threshold": args.threshold})
    threshold = AnswerSettings.objects.get(knowledge_base=kb).prefer_threshold

    questions = demo_questions()
    if args.quick:
        pairs = {tuple(sorted(p["refs"])) for p in planted}
        per_pair: dict[tuple, list] = {}
        for q in questions:
            if tuple(sorted(q["expect_refs"])) in pairs:
                per_pair.setdefault(tuple(sorted(q["expect_refs"])), []).append(q)
        about = [q for group in per_pair.values() for q in group[:2]]
        others = [q for q in questions if tuple(sorted(q["expect_refs"])) not in pairs]
        questions = about + random.Random(SEED).sample(others, min(8, len(others)))
    prewarm_sentence_vectors(kb, questions, memoise_sentence_vectors())
    log(f"replaying {len(questions)} questions under {', '.join(POLICIES)} (suggestion threshold {threshold:g})")
    rows = replay(kb, questions, planted)
    conflicted_refs = {r for p in planted for r in p["refs"]}
    scores = score(rows, planted, conflicted_refs)

    log("")
    log(f"{'policy':<18} {'about':>6} {'wrong':>6} {'share':>7} {'held back':>10} {'cites conflicted':>17} "
        f"{'caveats':>8} {'missing':>8} {'extra':>6} {'p50 ms':>8} {'p95 ms':>8} {'p95 / off':>10}")
    for policy in ARMS:
        s = scores[policy]
        log(f"{policy:<18} {s['about']:>6} {s['wrong']:>6} {s['share']:>7.3f} {s['held_back']:>10} "
            f"{s['cites_conflicted']:>17} {s['caveats']:>8} {s['caveat_missing']:>8} {s['caveat_extra']:>6} "
            f"{s['p50'] * 1000:>8.1f} {s['p95'] * 1000:>8.1f} {s['p95'] / scores['off']['p95']:>10.3f}")
    log_paired_differences(rows)
    caveat = scores["caveat"]
    log(f"caveat: on {caveat['caveats']} of {caveat['cites_conflicted']} replies citing an open-conflict article "
        f"(missing {caveat['caveat_missing']}), on {caveat['caveat_extra']} other replies")

    lookup = lookup_at_scale(conflicts=50_000, articles=20_000, samples=300 if args.quick else 2000)
    common.teardown([kb])

    off_share = scores["off"]["share"]

    def ratio(policy: str) -> float:
        return scores[policy]["share"] / off_share if off_share else float("nan")

    slowest = max(scores[p]["p95"] for p in POLICIES if p != "off")
    noise_floor = scores[NOISE_ARM]["p95"] / scores["off"]["p95"]
    log(f"noise floor: off run twice, p95 of the second / the first {noise_floor:.3f} (a policy ratio within "
        f"{abs(noise_floor - 1):.3f} of 1 is noise)")
    log(f"finished in {clock():.1f} s")
    common.print_figures([
        common.Figure("wrong_side_ratio_prefer_suggested", ratio("prefer_suggested"), "x", "<=", 0.5),
        common.Figure("wrong_side_ratio_quarantine", ratio("quarantine"), "x", "<=", 0.5),
        common.Figure("policy_reply_p95_ratio", slowest / scores["off"]["p95"], "x", "<=", 1.02),
        common.Figure("conflict_lookup_p95_ms", common.percentile(lookup, 95) * 1000, "ms", "<=", 3.0),
    ])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
