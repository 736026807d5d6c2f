"""Precision / recall / F1 of the offline claim detector, with naive anchors side by side.

    .venv/bin/python bench/detection_quality.py [--sets report,kb-dev,ramdocs,demo] [--show N] [--quick]
        [--businesses gym,vet | --businesses -gym,-vet] [--llm [--base-url URL] [--model NAME] [--json-mode M]]

`--show N` prints up to N misses and N false positives per data set, each with the two claims the detector
aligned (a miss: its closest claim pairs; a false positive: the claims it quoted) and the label's reason.
`--businesses` keeps (or, each prefixed with "-", leaves out) the sets of these businesses (a ref's prefix).
`--llm` adds a measured arm: `auto` as the product runs it (agents.detection.run_detection), with the detection
LLM of the settings (OPENAI_BASE_URL / DETECTION_LLM_BASE_URL) or the endpoint and model given here; an LLM error
counts as "no conflicts" for that set, as the product's fail-open does. The "*" arms are bounds, not measurements.

Data sets (a pair counts once per retrieval set):
- report:  bench/data/kb-conflicts-broad/report.jsonl, the held-out half of the project's broad corpus
           (never tuned on); `dev` is the half the detector was developed on;
- kb-dev:  ../shared/datasets/kb-conflicts-dev/dev.jsonl;
- ramdocs: ../shared/datasets/ramdocs, single-answer questions, each question's passages as one set;
           a misinformation passage and a correct one = a conflicting pair, anything else is not;
- demo:    the demo knowledge base's questions, as in bench/demo_detection.py (pooled sets).
Anchors: "flag every pair" and "values differ" (two articles stating different values of one kind).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from agents.claims import ClaimVectors, detect_claim_conflicts  # noqa: E402
from agents.claims.value_extraction import extract_values  # noqa: E402
from agents.claims.values import comparable, equal_values  # noqa: E402
from agents.configuration import llm_config_for  # noqa: E402
from agents.detection import CONFIRM_BELOW, JUDGED_CONFIRM_BELOW, run_detection  # noqa: E402
from agents.excerpts import PairAlignment  # noqa: E402
from agents.judge_onnx import judge_setup, load_card  # noqa: E402
from agents.llm import JSON_MODES, LLMConfig, LLMError  # noqa: E402
from agents.types import ArticleText, pair_key  # noqa: E402
from articles.embeddings import embed_texts  # noqa: E402

SHARED = REPO.parent / "shared" / "datasets"
BROAD = REPO / "bench" / "data" / "kb-conflicts-broad"
TARGETS = {"report": (0.90, 0.80), "ramdocs": (None, 0.60)}


def _date(text: str | None) -> dt.date | None:
    return dt.date.fromisoformat(text) if text else None


def labelled_sets(path: Path) -> list[dict]:
    sets = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        sets.append({
            "id": item["id"], "now": _date(item.get("now")),
            "articles": [ArticleText(ref=a["ref"], title=a["title"], body=a["body"], updated_at=_date(a.get("updated_at")),
                                     source=a.get("source", "faq")) for a in item["articles"]],
            "gold": {pair_key(*c["refs"]): c.get("type", "conflict") for c in item.get("conflicts", [])},
            "why": {pair_key(*c["refs"]): c.get("why", "") for c in item.get("conflicts", []) + item.get("near_misses", [])},
        })
    return sets


def ramdocs_sets(path: Path, limit: int | None) -> list[dict]:
    sets = []
    for number, line in enumerate(path.read_text().splitlines()):
        item = json.loads(line)
        if len(item["gold_answers"]) != 1:
            continue
        docs = item["documents"]
        articles = [ArticleText(ref=f"q{number}-d{i}", title="", body=d["text"]) for i, d in enumerate(docs)]
        gold = {}
        for (i, a), (j, b) in combinations(enumerate(docs), 2):
            if {a["type"], b["type"]} == {"misinfo", "correct"}:
                gold[pair_key(articles[i].ref, articles[j].ref)] = "misinformation"
        sets.append({"id": f"ramdocs-{number}", "now": dt.date(2025, 4, 1), "articles": articles, "gold": gold})
    return sets[:limit] if limit else sets


def demo_sets() -> list[dict]:
    from bench.demo_detection import DEMO, NOW, build_sets, load_articles

    articles = load_articles()
    truth = json.loads((DEMO / "planted.json").read_text())
    planted = {pair_key(*c["refs"]): c["type"] for c in truth["conflicts"]}
    questions = [json.loads(x) for x in (DEMO / "questions.jsonl").read_text().splitlines() if x.strip()]
    grouped = build_sets(articles, questions)
    out = []
    for name in ("random", "lexical"):
        for n, refs in enumerate(grouped[name]):
            chosen = [articles[r] for r in dict.fromkeys(refs)]
            keys = {pair_key(a.ref, b.ref) for a, b in combinations(chosen, 2)}
            out.append({"id": f"demo-{name}-{n}", "now": NOW, "articles": chosen,
                        "gold": {k: planted[k] for k in keys if k in planted}})
    return out


def demo_cpu_sets(*, size: int, limit: int | None) -> tuple[dict[str, ArticleText], list[list[str]]]:
    """The demo's articles, and one retrieval set of `size` refs per question (its expected articles first)."""
    from bench.demo_detection import DEMO, Lexical, load_articles

    articles = load_articles()
    lexical = Lexical(articles)
    questions = [json.loads(x) for x in (DEMO / "questions.jsonl").read_text().splitlines() if x.strip()][:limit]
    sets = []
    for q in questions:
        expected = list(dict.fromkeys(q["expect_refs"]))[:size]
        sets.append(expected + lexical.nearest(q["question"], exclude=set(expected), k=size - len(expected)))
    return articles, sets


def cpu_first_sight(*, size: int = 8, limit: int | None = None) -> dict[str, list[float]]:
    """CPU milliseconds of a worker's first check of each demo set (no claim vectors in memory; parses
    warm): embedding the claims, against reading the vectors the index sync stored per article version
    (articles.claim_vectors.StoredFirstEncoder; its one database query per turn is not in this figure)."""
    import time

    from agents.claims.analysis import VECTOR_CACHE_ARTICLES
    from articles.claim_texts import texts_key
    from articles.claim_vectors import StoredFirstEncoder
    from bench.demo_detection import NOW
    from conflicts.services.detection import claim_texts_of

    articles, sets = demo_cpu_sets(size=size, limit=limit)
    stored = {}
    for number, article in enumerate(articles.values()):  # as the index sync stores them
        texts = claim_texts_of(article.title, article.body, year=NOW.year)
        stored[number] = (texts_key(texts), embed_texts(texts))
    samples: dict[str, list[float]] = {"embedded": [], "stored": []}
    for refs in sets:
        for name in samples:
            encoder = StoredFirstEncoder(lambda texts: embed_texts(list(texts)), max_entries=VECTOR_CACHE_ARTICLES)
            if name == "stored":
                encoder.keep(stored)
            started = time.process_time()
            detect_claim_conflicts(articles=[articles[r] for r in refs], now=NOW, vectors=ClaimVectors(encoder))
            samples[name].append((time.process_time() - started) * 1000)
    return samples


def cpu_per_set(store: ClaimVectors, *, size: int = 8, limit: int | None = None, judge=None) -> dict[str, list[float]]:
    """CPU milliseconds of one check of an 8-article demo retrieval set, one sample per question: "warm" with
    every cache warm (vectors and parses once per article text, as in the product; the judge's scores per pair
    of statement texts), and, with a judge, "judge cold": the same check with an empty judge cache."""
    import dataclasses
    import time

    from agents.judge import CachedJudge
    from bench.demo_detection import NOW

    articles, sets = demo_cpu_sets(size=size, limit=limit)
    for refs in sets:  # warm: each article parsed and embedded once
        detect_claim_conflicts(articles=[articles[r] for r in refs], now=NOW, vectors=store, judge=judge)
    samples: dict[str, list[float]] = {"warm": []} | ({"judge cold": []} if judge is not None else {})
    for refs in sets:
        for name in samples:
            setup = judge if name == "warm" else dataclasses.replace(judge, judge=CachedJudge(judge.judge.score_pairs))
            started = time.process_time()
            detect_claim_conflicts(articles=[articles[r] for r in refs], now=NOW, vectors=store, judge=setup)
            samples[name].append((time.process_time() - started) * 1000)
    return samples


def judge_vs_encoder_ms(judge, *, batch: int = 32, rounds: int = 5) -> tuple[float, float]:
    """Wall milliseconds (median of `rounds`) of the judge's ONNX run on `batch` statement pairs (both orders:
    2 x batch sequences, as the detector scores them) and of the encoder on `batch` statements."""
    import statistics
    import time

    from agents.judge import StatementPair

    texts = [f"Item {i} of the price list costs {i + 3} euros and ships within {i % 5 + 1} days." for i in range(batch)]
    pairs = [StatementPair(texts[i], texts[(i + 1) % batch], "Prices", "Delivery") for i in range(batch)]
    judge_ms, encoder_ms = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        judge.score_pairs(pairs + [p.swapped() for p in pairs])
        judge_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        embed_texts(texts)
        encoder_ms.append((time.perf_counter() - started) * 1000)
    return statistics.median(judge_ms), statistics.median(encoder_ms)


def values_differ(articles: list[ArticleText], now: dt.date) -> set[tuple[str, str]]:
    """The naive anchor: two articles that both state a value of one kind and share none of them."""
    values = {a.ref: extract_values(a.title + "\n" + a.body, year=now.year) for a in articles}
    flagged = set()
    for a, b in combinations(articles, 2):
        pairs = [(x, y) for x in values[a.ref] for y in values[b.ref] if comparable(x, y)]
        if pairs and not any(equal_values(x, y) for x, y in pairs):
            flagged.add(pair_key(a.ref, b.ref))
    return flagged


def score(sets: list[dict], predict) -> dict:
    tp = fp = fn = 0
    misses, false_alarms = Counter(), []
    hits_by_type, total_by_type = Counter(), Counter()
    for item in sets:
        found = predict(item)
        for key, ctype in item["gold"].items():
            total_by_type[ctype] += 1
            if key in found:
                tp += 1
                hits_by_type[ctype] += 1
            else:
                fn += 1
                misses[ctype] += 1
        for key in found:
            if key not in item["gold"]:
                fp += 1
                false_alarms.append((item["id"], key, found[key] if isinstance(found, dict) else ""))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"tp": tp, "fp": fp, "fn": fn, "p": precision, "r": recall, "f1": f1, "false_alarms": false_alarms,
            "by_type": {t: (hits_by_type[t], n) for t, n in sorted(total_by_type.items())}}


class MeasuredAuto:
    """`auto` with a real LLM, set by set, as the product's check runs it; counts its calls, tokens and errors."""

    def __init__(self, config: LLMConfig, store: ClaimVectors, judge=None) -> None:
        self.config, self.store, self.judge = config, store, judge
        self.calls = self.tokens = self.sets_asked = 0
        self.errors: Counter = Counter()
        self.dropped: Counter = Counter()

    def __call__(self, item: dict) -> set[tuple[str, str]]:
        try:
            outcome = run_detection(articles=item["articles"], detector="auto", now=item["now"],
                                    llm_config=self.config, claim_vectors=self.store, claim_judge=self.judge)
        except LLMError as error:
            self.errors[error.reason] += 1
            self.calls += error.calls
            return set()  # fail open: the product records no conflicts for the turn
        self.calls += outcome.llm_calls
        self.tokens += outcome.tokens
        self.sets_asked += bool(outcome.llm_calls)
        self.dropped.update(invented_refs=outcome.dropped_invented_refs, bad_snippets=outcome.dropped_bad_snippets)
        return {pair_key(*finding.refs) for finding in outcome.findings}

    def summary(self, sets: int) -> str:
        text = (f"{self.config.model} at {self.config.base_url}: {self.calls} calls for {sets} sets "
                f"({self.sets_asked} sets asked), {self.tokens} tokens; dropped {self.dropped['invented_refs']} "
                f"invented refs, {self.dropped['bad_snippets']} quotes not in their article")
        if self.errors:
            text += "; errors (recorded as no conflicts): " + ", ".join(
                f"{kind} {count}" for kind, count in sorted(self.errors.items()))
        return text


def business(item: dict) -> str:
    """The business a labelled set is from: its articles' ref prefix ("gym-3" is the gym's)."""
    return item["articles"][0].ref.split("-", 1)[0] if item["articles"] else ""


def select_businesses(sets: list[dict], spec: str) -> list[dict]:
    names = [n.strip() for n in spec.split(",") if n.strip()]
    left_out = {n[1:] for n in names if n.startswith("-")}
    kept = {n for n in names if not n.startswith("-")}
    return [s for s in sets if business(s) not in left_out and (not kept or business(s) in kept)]


def closest_claims(a: ArticleText, b: ArticleText, now: dt.date, store: ClaimVectors, n: int = 3) -> list[tuple]:
    """The n most similar claim pairs of two articles: (similarity, claim of a, claim of b)."""
    from agents.claims.analysis import analyse_text

    facts_a, facts_b = analyse_text(a.title, a.body, now.year), analyse_text(b.title, b.body, now.year)
    if not facts_a or not facts_b:
        return []
    similarity = store.vectors(facts_a) @ store.vectors(facts_b).T
    order = similarity.ravel().argsort()[::-1][:n]
    return [(float(similarity.ravel()[k]), facts_a[k // similarity.shape[1]].claim.text,
             facts_b[k % similarity.shape[1]].claim.text) for k in order]


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def show_errors(sets: list[dict], findings: dict, false_alarms: list, store: ClaimVectors, limit: int) -> None:
    by_id = {item["id"]: item for item in sets}
    shown = 0
    for item in sets:
        by_ref = {a.ref: a for a in item["articles"]}
        for key, ctype in item["gold"].items():
            if key in findings[item["id"]] or shown >= limit:
                continue
            shown += 1
            print(f"  MISS {item['id']} {key} [{ctype}] {_clip(item.get('why', {}).get(key, ''), 200)}")
            for sim, left, right in closest_claims(by_ref[key[0]], by_ref[key[1]], item["now"], store):
                print(f"      {sim:.2f}  A: {_clip(left)}\n            B: {_clip(right)}")
    for set_id, key, _ in false_alarms[:limit]:
        item = by_id[set_id]
        finding = findings[set_id][key]
        label = item.get("why", {}).get(key)
        print(f"  FALSE {set_id} {key} [{finding.type} {finding.confidence:.2f}]"
              + (f" near-miss: {_clip(label, 200)}" if label else " (unlabelled pair)"))
        print(f"      A: {_clip(finding.snippets.get(key[0], ''))}\n      B: {_clip(finding.snippets.get(key[1], ''))}")


def by_business(sets: list[dict], findings: dict) -> None:
    """Precision / recall per business, when a data set holds several."""
    names = sorted({business(s) for s in sets})
    if len(names) < 2:
        return
    for name in names:
        tp = fp = fn = 0
        for item in (s for s in sets if business(s) == name):
            found = findings[item["id"]]
            tp += sum(1 for key in item["gold"] if key in found)
            fn += sum(1 for key in item["gold"] if key not in found)
            fp += sum(1 for key in found if key not in item["gold"])
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn) if tp + fn else 0.0
        print(f"    {name:10s} P {p:.2f}  R {r:.2f}   (TP {tp}, FP {fp}, FN {fn})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="report,kb-dev,ramdocs,demo")
    parser.add_argument("--show", type=int, default=0, help="print this many misses / false positives per data set")
    parser.add_argument("--quick", action="store_true", help="the first 40 sets of each data set")
    parser.add_argument("--businesses", default="", help="keep these businesses' sets (ref prefixes), or leave out "
                                                          "those written '-name'; comma-separated")
    parser.add_argument("--no-cpu", action="store_true", help="skip the CPU measurement")
    parser.add_argument("--llm", action="store_true", help="also measure `auto` with a real LLM (the detection "
                                                           "LLM setting, or --base-url / --model)")
    parser.add_argument("--base-url", help="LLM endpoint for --llm (overrides the detection LLM setting)")
    parser.add_argument("--model", help="LLM model name for --llm (overrides the setting)")
    parser.add_argument("--json-mode", choices=JSON_MODES, help="JSON mode for --llm (overrides the setting)")
    parser.add_argument("--judge-dir", default=settings.JUDGE_DIR, help="the judge's artefact (default: JUDGE_DIR)")
    parser.add_argument("--judge-modes", default="rules,veto,judge,judge+rules",
                        help="the claim detector's arms, side by side (the rules alone always run)")
    args = parser.parse_args()
    llm_config = None
    if not args.llm and (args.base_url or args.model or args.json_mode):
        parser.error("--base-url, --model and --json-mode choose the LLM of --llm: add --llm")
    if args.llm:
        llm_config = llm_config_for("detection", base_url=args.base_url, model=args.model, json_mode=args.json_mode)
        if llm_config is None:
            parser.error("--llm needs an LLM: set OPENAI_BASE_URL (or DETECTION_LLM_BASE_URL) or pass --base-url")
    store = ClaimVectors(lambda texts: embed_texts(list(texts)))
    # The rules alone, the judge alone, and the judge with the rules it does not veto, side by side; the
    # product's mode (JUDGE_MODE) is the one `auto` is derived from.
    setups = {"rules": None}
    for mode in [m for m in args.judge_modes.split(",") if m != "rules"]:
        setup = judge_setup(args.judge_dir, mode=mode)
        if setup is not None:
            setups[mode] = setup
    product_mode = settings.JUDGE_MODE if settings.JUDGE_MODE in setups else "rules"
    confirm_below = JUDGED_CONFIRM_BELOW if product_mode in ("judge", "judge+rules") else CONFIRM_BELOW
    if len(setups) == 1:
        print(f"(no judge artefact at {args.judge_dir}: the rules alone)")
    else:
        card = load_card(Path(args.judge_dir))
        print(f"judge: {card.get('pairs')} corpus pairs; its own validation split ({card.get('validation_pairs')} "
              f"pairs, businesses unseen in training): " + ", ".join(
                  f"{label} P {row['precision']:.2f} R {row['recall']:.2f}"
                  for label, row in card.get("validation", {}).get("all", {}).get("labels", {}).items()))
    loaders = {
        "report": lambda: labelled_sets(BROAD / "report.jsonl"),
        "dev": lambda: labelled_sets(BROAD / "dev.jsonl"),
        "kb-dev": lambda: labelled_sets(SHARED / "kb-conflicts-dev" / "dev.jsonl"),
        "ramdocs": lambda: ramdocs_sets(SHARED / "ramdocs" / "RAMDocs_test.jsonl", None),
        "demo": demo_sets,
    }
    figures = []
    cpu_p95 = None
    cpu_cold_p95 = None
    if not args.no_cpu:
        product_setup = setups.get(product_mode)
        by_cache = cpu_per_set(store, limit=40 if args.quick else None, judge=product_setup)
        cpu = sorted(by_cache["warm"])
        cpu_p50, cpu_p95 = cpu[len(cpu) // 2], cpu[min(len(cpu) - 1, int(len(cpu) * 0.95))]
        print(f"detection CPU per 8-article set (warm caches, {len(cpu)} demo sets, claims: {product_mode}): "
              f"p50 {cpu_p50:.1f} ms, p95 {cpu_p95:.1f} ms")
        if "judge cold" in by_cache:
            cold = sorted(by_cache["judge cold"])
            cpu_cold_p95 = cold[min(len(cold) - 1, int(len(cold) * 0.95))]
            print(f"  judge cache empty: p50 {cold[len(cold) // 2]:.1f} ms, p95 {cpu_cold_p95:.1f} ms")
            judge_ms, encoder_ms = judge_vs_encoder_ms(product_setup.judge)
            print(f"  judge ONNX on 32 statement pairs (64 sequences, both orders): {judge_ms:.1f} ms; "
                  f"encoder on 32 statements: {encoder_ms:.1f} ms")
        for name, samples in cpu_first_sight(limit=40 if args.quick else None).items():
            samples.sort()
            print(f"  first sight in a worker, claim vectors {name}: p50 {samples[len(samples) // 2]:.1f} ms, "
                  f"p95 {samples[min(len(samples) - 1, int(len(samples) * 0.95))]:.1f} ms")
    for name in args.sets.split(","):
        sets = loaders[name]()
        if args.businesses:
            sets = select_businesses(sets, args.businesses)
        if args.quick:
            sets = sets[:40]
        findings = {}
        unrelated = {}

        def claims(item, setup=None, record=False):
            result = detect_claim_conflicts(articles=item["articles"], now=item["now"], vectors=store, judge=setup)
            if record:
                findings[item["id"]] = {f.refs: f for f in result.findings}
                # Pairs auto does not send: about different things (or settled apart by the judge), or
                # (agents.excerpts) with no aligned claim left to show once the claims both state word for word
                # and one template's lines on two products' pages are set aside.
                by_ref = {a.ref: a for a in item["articles"]}
                unrelated[item["id"]] = result.unrelated_pairs() | {
                    key for key in item["gold"]
                    if not PairAlignment(by_ref[key[0]], by_ref[key[1]], vectors=store, year=item["now"].year).related}
            return {f.refs: f.explanation for f in result.findings}

        by_mode = {mode: score(sets, lambda item, setup=setup, mode=mode: claims(item, setup, mode == product_mode))
                   for mode, setup in setups.items()}
        detector = by_mode[product_mode]
        # What `auto` does with the same findings: those at CONFIRM_BELOW or above reach the queue as they are,
        # the others only once the LLM confirms them. Without an LLM answer they wait (sure findings only); with
        # a confirmer that is always right, the unsure true ones are added (an upper bound, not a measurement).
        sure = score(sets, lambda item: {k for k, f in findings[item["id"]].items() if f.confidence >= confirm_below})
        confirmed = score(sets, lambda item: {k for k, f in findings[item["id"]].items()
                                              if f.confidence >= confirm_below or k in item["gold"]})
        # And with that LLM judging every pair `auto` sends it (every unsure finding, and every other pair but those
        # settled without a call: about different things, or with no aligned claim left to show): the most `auto` can
        # find, however good the model.
        judged = score(sets, lambda item: {k for k, f in findings[item["id"]].items() if f.confidence >= confirm_below}
                       | {k for k in item["gold"] if k not in unrelated[item["id"]] or k in findings[item["id"]]})
        measured_auto = MeasuredAuto(llm_config, store, setups.get(product_mode)) if llm_config is not None else None
        measured = score(sets, measured_auto) if measured_auto is not None else None
        every = score(sets, lambda item: {pair_key(a.ref, b.ref) for a, b in combinations(item["articles"], 2)})
        naive = score(sets, lambda item: values_differ(item["articles"], item["now"]))
        gold_pairs = sum(len(s["gold"]) for s in sets)
        print(f"\n== {name}: {len(sets)} sets, {gold_pairs} conflicting pairs")
        arms = [(f"claims: {mode}" + (" (product)" if mode == product_mode else ""), res)
                for mode, res in by_mode.items()]
        arms += [("flag every pair", every), ("values differ", naive),
                 ("auto, sure only", sure), ("auto, confirmed*", confirmed), ("auto, judged*", judged)]
        for label, res in arms + ([("auto, measured", measured)] if measured is not None else []):
            print(f"  {label:26s} P {res['p']:.2f}  R {res['r']:.2f}  F1 {res['f1']:.2f}"
                  f"   (TP {res['tp']}, FP {res['fp']}, FN {res['fn']})")
        if measured_auto is not None:
            print(f"    ({measured_auto.summary(len(sets))})")
        print(f"  (auto: findings at confidence >= {confirm_below} reach the queue as they are, the others once the LLM "
              "confirms them; *with an LLM that is always right: an upper bound; \"judged\": that LLM also judges every pair "
              "with an aligned claim, as auto sends them)")
        print("  recall by type: " + ", ".join(f"{t} {h}/{n}" for t, (h, n) in detector["by_type"].items()))
        if name in ("dev", "report"):  # their refs name the business
            by_business(sets, findings)
        if args.show:
            show_errors(sets, findings, detector["false_alarms"], store, args.show)
        figures.append((name, by_mode, sure, measured))
    if cpu_p95 is not None:
        print(f"figure: detection_cpu_p95_ms {cpu_p95:.1f} ms target <= 50")
    if cpu_cold_p95 is not None:
        print(f"figure: detection_cpu_cold_p95_ms {cpu_cold_p95:.1f} ms target <= 300")
    for name, by_mode, sure, measured in figures:
        slug = name.replace("-", "_")
        target_p, target_f1 = TARGETS.get(name, (None, None))
        arms = [(f"{slug}_{mode.replace('+', '_')}", res) for mode, res in by_mode.items()]
        arms += [(f"{slug}_auto_sure", sure), (f"{slug}_auto_measured", measured)]
        for arm, figures_of in arms:
            if figures_of is None:
                continue
            print(f"figure: {arm}_precision {figures_of['p']:.2f} ratio" + (f" target >= {target_p}" if target_p else ""))
            print(f"figure: {arm}_f1 {figures_of['f1']:.2f} ratio" + (f" target >= {target_f1}" if target_f1 else ""))


if __name__ == "__main__":
    main()
