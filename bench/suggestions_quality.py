"""Benchmark: MACR suggestions with executable rules only vs the naive "newer updated_at wins" rule.

Runs on ../shared/datasets/kb-conflicts-dev/dev.jsonl (relative to the repository), through the same
parsing and reasoning code as `manage.py suggest_resolutions`, and prints for both methods, side by side:
accuracy on pairs whose `correct` is a ref (a side is determinable) and abstention rate on pairs whose
`correct` is null (the texts and dates cannot tell). No LLM is called.

    .venv/bin/python bench/suggestions_quality.py [--quick] [--dataset PATH] [--show-errors]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agents.macr.rules import executable_rules  # noqa: E402
from agents.macr.sets import parse_set_line, suggest_for_set  # noqa: E402
from agents.types import ArticleText  # noqa: E402

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "kb-conflicts-dev" / "dev.jsonl"


def naive_newer_wins(a: ArticleText, b: ArticleText) -> str | None:
    """The anchor: the newer `updated_at` wins; same (or missing) date → cannot tell."""
    if a.updated_at is None or b.updated_at is None or a.updated_at == b.updated_at:
        return None
    return a.ref if a.updated_at > b.updated_at else b.ref


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--quick", action="store_true", help="accepted for uniformity; the full run takes well under a minute")
    parser.add_argument("--show-errors", action="store_true", help="print each wrong or non-abstaining suggestion")
    options = parser.parse_args()
    if not options.dataset.is_file():
        print(f"dataset not found: {options.dataset}", file=sys.stderr)
        return 2

    rules = executable_rules()
    counts = {"determinable": 0, "undeterminable": 0, "macr_right": 0, "macr_abstained": 0,
              "macr_abstained_determinable": 0, "naive_right": 0, "naive_abstained": 0, "suggestions": 0}
    rule_use: dict[str, int] = {}
    llm_calls = 0  # executable rules only: no LLM is wired into this path
    started = time.perf_counter()
    for line_number, text in enumerate(options.dataset.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        labels = {tuple(sorted(conflict["refs"])): conflict for conflict in json.loads(text).get("conflicts", [])}
        retrieval_set = parse_set_line(line=text, line_number=line_number, today=dt.date.today())
        for suggestion in suggest_for_set(retrieval_set=retrieval_set, rules=rules):
            counts["suggestions"] += 1
            for rule_id in suggestion.rules:
                rule_use[rule_id] = rule_use.get(rule_id, 0) + 1
            correct = labels[suggestion.refs].get("correct")
            a, b = (retrieval_set.articles[ref] for ref in suggestion.refs)
            naive = naive_newer_wins(a, b)
            if correct is None:
                counts["undeterminable"] += 1
                counts["macr_abstained"] += suggestion.winner is None
                counts["naive_abstained"] += naive is None
                if options.show_errors and suggestion.winner is not None:
                    print(f"  answered where null: {retrieval_set.id} {suggestion.refs} -> {suggestion.winner}: {suggestion.explanation}")
            else:
                counts["determinable"] += 1
                counts["macr_right"] += suggestion.winner == correct
                counts["macr_abstained_determinable"] += suggestion.winner is None
                counts["naive_right"] += naive == correct
                if options.show_errors and suggestion.winner != correct:
                    print(f"  wrong: {retrieval_set.id} {suggestion.refs} want {correct} got {suggestion.winner}: {suggestion.explanation}")
    elapsed = time.perf_counter() - started

    def ratio(numerator: int, denominator: int) -> float:
        return numerator / denominator if denominator else 0.0

    macr_accuracy = ratio(counts["macr_right"], counts["determinable"])
    macr_abstention = ratio(counts["macr_abstained"], counts["undeterminable"])
    naive_accuracy = ratio(counts["naive_right"], counts["determinable"])
    naive_abstention = ratio(counts["naive_abstained"], counts["undeterminable"])
    print(f"dataset: {options.dataset}")
    print(f"conflicts: {counts['suggestions']} ({counts['determinable']} with a determinable side, "
          f"{counts['undeterminable']} where the texts cannot tell); {elapsed * 1000:.0f} ms")
    rows = [
        ("MACR, executable rules only", macr_accuracy, counts["macr_right"], macr_abstention, counts["macr_abstained"]),
        ("naive: newer updated_at wins", naive_accuracy, counts["naive_right"], naive_abstention, counts["naive_abstained"]),
    ]
    print(f"{'method':<32}{'accuracy (determinable)':>26}{'abstention (null)':>22}")
    for name, accuracy, right, abstention, abstained in rows:
        accuracy_cell = f"{accuracy:.3f} ({right}/{counts['determinable']})"
        abstention_cell = f"{abstention:.3f} ({abstained}/{counts['undeterminable']})"
        print(f"{name:<32}{accuracy_cell:>26}{abstention_cell:>22}")
    print(f"MACR abstained on {counts['macr_abstained_determinable']} determinable pairs (counted as not right)")
    print("deciding rules: " + ", ".join(f"{rule_id} {count}" for rule_id, count in sorted(rule_use.items())))
    print(f"LLM calls per suggestion: {ratio(llm_calls, counts['suggestions']):.1f}")
    print(f"figure: macr_accuracy {macr_accuracy:.3f} ratio target >= 0.95")
    print(f"figure: macr_abstention {macr_abstention:.3f} ratio target >= 0.9")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
