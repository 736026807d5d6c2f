"""Check the kb-conflicts-broad files and print the counts its README quotes.

    python3 bench/data/validate_corpus.py [DIR]      (default: bench/data/kb-conflicts-broad)

Checks every line of dev.jsonl and report.jsonl: valid JSON with the expected keys, 2-8 articles with ISO dates no
later than the set's `now`, conflict and near-miss refs present in the set, two different refs in sorted order, a
known conflict type, `correct` one of the pair or null; across the files: unique set ids, the same ref always with
the same article, the same pair always with the same label, and no business (the ref prefix) in both files.
Exits 1 and lists the problems when any check fails. Stdlib only.
"""
from __future__ import annotations

import datetime as dt
import json
import sys
from collections import Counter
from pathlib import Path

DEFAULT_DIR = Path(__file__).resolve().parent / "kb-conflicts-broad"
FILES = ("dev.jsonl", "report.jsonl")
TYPES = ("price", "policy", "eligibility", "contact", "procedure", "hours", "date", "quantity", "location")
NON_NUMERIC = {"policy", "eligibility", "procedure", "location"}
SOURCES = {"faq", "pdf", "web"}
SET_KEYS = {"id", "question", "now", "articles", "conflicts", "near_misses"}
ARTICLE_KEYS = {"ref", "title", "body", "updated_at", "source"}


def business_of(ref: str) -> str:
    return ref.rsplit("-", 1)[0]


def _iso_date(value, where: str, problems: list[str]) -> str | None:
    try:
        dt.date.fromisoformat(value)
        return value
    except (TypeError, ValueError):
        problems.append(f"{where}: {value!r} is not a YYYY-MM-DD date")
        return None


def _check_pair(entry: dict, refs_in_set: set[str], where: str, problems: list[str]) -> tuple[str, str] | None:
    refs = entry.get("refs")
    if not isinstance(refs, list) or len(refs) != 2 or refs[0] == refs[1]:
        problems.append(f"{where}: refs must be two different refs, got {refs!r}")
        return None
    if refs != sorted(refs):
        problems.append(f"{where}: refs {refs} are not sorted")
    missing = [ref for ref in refs if ref not in refs_in_set]
    if missing:
        problems.append(f"{where}: refs {missing} are not articles of the set")
    if not str(entry.get("why", "")).strip():
        problems.append(f"{where}: empty why")
    return tuple(sorted(refs))


def check_set(item: dict, where: str, problems: list[str]) -> None:
    if set(item) != SET_KEYS:
        problems.append(f"{where}: keys {sorted(item)} should be {sorted(SET_KEYS)}")
        return
    now = _iso_date(item["now"], f"{where} now", problems)
    if not str(item["question"]).strip():
        problems.append(f"{where}: empty question")
    articles = item["articles"]
    if not 2 <= len(articles) <= 8:
        problems.append(f"{where}: {len(articles)} articles, expected 2-8")
    for article in articles:
        if set(article) != ARTICLE_KEYS:
            problems.append(f"{where}: article keys {sorted(article)} should be {sorted(ARTICLE_KEYS)}")
            continue
        if article["source"] not in SOURCES:
            problems.append(f"{where} {article['ref']}: source {article['source']!r}")
        updated = _iso_date(article["updated_at"], f"{where} {article['ref']} updated_at", problems)
        if updated and now and updated > now:
            problems.append(f"{where} {article['ref']}: updated {updated}, after the set's now {now}")
        if not article["title"].strip() or not article["body"].strip():
            problems.append(f"{where} {article['ref']}: empty title or body")
    refs = [article.get("ref") for article in articles]
    if len(set(refs)) != len(refs):
        problems.append(f"{where}: an article appears twice")
    if len({business_of(ref) for ref in refs}) != 1:
        problems.append(f"{where}: articles from more than one business: {refs}")
    for conflict in item["conflicts"]:
        pair = _check_pair(conflict, set(refs), f"{where} conflict", problems)
        if set(conflict) != {"refs", "type", "correct", "why"}:
            problems.append(f"{where} conflict {pair}: keys {sorted(conflict)}")
        if conflict.get("type") not in TYPES:
            problems.append(f"{where} conflict {pair}: type {conflict.get('type')!r} not in {TYPES}")
        if conflict.get("correct") is not None and conflict.get("correct") not in (pair or ()):
            problems.append(f"{where} conflict {pair}: correct {conflict.get('correct')!r} is not one of its refs")
    for near in item["near_misses"]:
        _check_pair(near, set(refs), f"{where} near-miss", problems)


def validate(directory: Path) -> tuple[list[str], dict]:
    problems: list[str] = []
    texts: dict[str, dict] = {}
    labels: dict[tuple[str, str], tuple] = {}
    ids: set[str] = set()
    halves: dict[str, dict] = {}
    for name in FILES:
        half = halves[name] = {"sets": 0, "with_conflict": 0, "articles": set(), "businesses": set(),
                               "conflicts": Counter(), "distinct_conflicts": {}, "near_misses": 0,
                               "distinct_near_misses": set(), "trusted_unknown": 0, "pairs": 0}
        path = directory / name
        if not path.exists():
            problems.append(f"{name}: missing")
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            where = f"{name}:{number}"
            try:
                item = json.loads(line)
            except json.JSONDecodeError as error:
                problems.append(f"{where}: not JSON ({error})")
                continue
            if not isinstance(item, dict):
                problems.append(f"{where}: not a JSON object")
                continue
            before = len(problems)
            check_set(item, where, problems)
            if len(problems) > before and set(item) != SET_KEYS:
                continue
            if item["id"] in ids:
                problems.append(f"{where}: duplicate id {item['id']}")
            ids.add(item["id"])
            half["sets"] += 1
            half["with_conflict"] += bool(item["conflicts"])
            half["pairs"] += len(item["articles"]) * (len(item["articles"]) - 1) // 2
            for article in item["articles"]:
                ref = article.get("ref")
                half["articles"].add(ref)
                half["businesses"].add(business_of(ref))
                if texts.setdefault(ref, article) != article:
                    problems.append(f"{where}: {ref} differs from its first appearance")
            for conflict in item["conflicts"]:
                pair = tuple(sorted(conflict["refs"]))
                label = ("conflict", conflict["type"], conflict["correct"])
                if labels.setdefault(pair, label) != label:
                    problems.append(f"{where}: pair {pair} labelled {label}, elsewhere {labels[pair]}")
                half["conflicts"][conflict["type"]] += 1
                half["distinct_conflicts"][pair] = conflict["type"]
                half["trusted_unknown"] += conflict["correct"] is None
            for near in item["near_misses"]:
                pair = tuple(sorted(near["refs"]))
                if labels.setdefault(pair, ("near-miss",)) != ("near-miss",):
                    problems.append(f"{where}: pair {pair} is a near-miss here, elsewhere {labels[pair]}")
                half["near_misses"] += 1
                half["distinct_near_misses"].add(pair)
    shared = halves[FILES[0]]["businesses"] & halves[FILES[1]]["businesses"]
    if shared:
        problems.append(f"businesses in both files: {sorted(shared)}")
    return problems, halves


def _share(counter: Counter) -> str:
    total = sum(counter.values())
    non_numeric = sum(n for kind, n in counter.items() if kind in NON_NUMERIC)
    return f"{non_numeric}/{total} = {non_numeric / total:.0%}" if total else "0/0"


def report(halves: dict) -> None:
    for name, half in halves.items():
        conflicts = half["conflicts"]
        distinct = Counter(half["distinct_conflicts"].values())
        print(f"{name}: {half['sets']} sets ({half['with_conflict']} with a conflict, "
              f"{half['sets'] - half['with_conflict']} without), {len(half['articles'])} articles, "
              f"{len(half['businesses'])} businesses ({', '.join(sorted(half['businesses']))})")
        print(f"  conflicting pairs (per set): {sum(conflicts.values())}; by type: "
              + ", ".join(f"{kind} {conflicts[kind]}" for kind in TYPES if conflicts[kind])
              + f"; non-numeric {_share(conflicts)}; trusted side unknown (null) {half['trusted_unknown']}")
        print(f"  distinct conflicting pairs: {sum(distinct.values())}; by type: "
              + ", ".join(f"{kind} {distinct[kind]}" for kind in TYPES if distinct[kind])
              + f"; non-numeric {_share(distinct)}")
        print(f"  near-misses (per set): {half['near_misses']}; distinct near-miss pairs: "
              f"{len(half['distinct_near_misses'])}")
        if half["pairs"]:
            precision = sum(conflicts.values()) / half["pairs"]
            f1 = 2 * precision / (precision + 1) if precision else 0.0
            print(f"  article pairs (per set): {half['pairs']}; flagging every pair: precision {precision:.2f}, "
                  f"recall 1.00, F1 {f1:.2f}")


def main() -> int:
    directory = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR
    problems, halves = validate(directory)
    report(halves)
    if problems:
        print(f"FAILED: {len(problems)} problem(s)")
        for problem in problems:
            print("  " + problem)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
