"""Precision / recall / F1 of the claim-based detector on the kb-conflicts dev set.

    .venv/bin/python bench/detection_quality.py [path/to/dev.jsonl]

A pair counts once per retrieval set. The last two lines are machine-readable figures.
"""
from __future__ import annotations

import datetime as dt
import json
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agents.claims import detect_claim_conflicts  # noqa: E402
from agents.types import ArticleText, pair_key  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "kb-conflicts-dev" / "dev.jsonl"


def _date(text: str | None) -> dt.date | None:
    return dt.date.fromisoformat(text) if text else None


def load_sets(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def evaluate(sets: list[dict]) -> dict:
    tp, fp, fn = [], [], []
    by_type_total, by_type_hit = Counter(), Counter()
    for item in sets:
        articles = [ArticleText(ref=a["ref"], title=a["title"], body=a["body"], updated_at=_date(a.get("updated_at")),
                                source=a.get("source", "faq")) for a in item["articles"]]
        gold = {pair_key(*c["refs"]): c for c in item["conflicts"]}
        found = {f.refs: f for f in detect_claim_conflicts(articles=articles, now=_date(item["now"]))}
        for refs, c in gold.items():
            by_type_total[c["type"]] += 1
            if refs in found:
                by_type_hit[c["type"]] += 1
                tp.append((item["id"], refs))
            else:
                fn.append((item["id"], refs, c["type"], c["why"]))
        for refs, f in found.items():
            if refs not in gold:
                fp.append((item["id"], refs, f.type, f.explanation))
    precision = len(tp) / (len(tp) + len(fp)) if tp or fp else 0.0
    recall = len(tp) / (len(tp) + len(fn)) if tp or fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": precision, "recall": recall, "f1": f1,
            "by_type": {t: (by_type_hit[t], n) for t, n in sorted(by_type_total.items())}}


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA
    result = evaluate(load_sets(path))
    print(f"sets: {path}")
    print(f"TP {len(result['tp'])}  FP {len(result['fp'])}  FN {len(result['fn'])}")
    print(f"precision {result['precision']:.2f}  recall {result['recall']:.2f}  F1 {result['f1']:.2f}"
          "   (naive 'values differ' baseline: P 0.18 R 0.61 F1 0.27)")
    print("recall by type:")
    for t, (hit, n) in result["by_type"].items():
        print(f"  {t:12s} {hit}/{n}")
    print("misses:")
    for set_id, refs, ctype, why in result["fn"]:
        print(f"  {set_id} {refs[0]}/{refs[1]} [{ctype}] {why[:110]}")
    print("false positives:")
    for set_id, refs, ctype, why in result["fp"]:
        print(f"  {set_id} {refs[0]}/{refs[1]} [{ctype}] {why[:140]}")
    print(f"figure: claims_precision {result['precision']:.2f} ratio target >= 0.9")
    print(f"figure: claims_f1 {result['f1']:.2f} ratio target >= 0.8")


if __name__ == "__main__":
    main()
