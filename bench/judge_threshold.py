"""Choose, on the DEV half only, the confidence from which the judge's finding on an article pair is reported.

    .venv/bin/python bench/judge_threshold.py [--quick]

The judge is calibrated per statement pair (on its own validation split); an article pair is judged by its
most contradictory aligned statement pair, a maximum over several, so it needs its own, higher bar. This
sweeps that bar on bench/data/kb-conflicts-broad/dev.jsonl (never the report half) for `judge` and for
`judge+rules` (rule findings the judge does not veto, plus judge findings at or above the bar) and prints
precision / recall / F1 for each, and the best bar by F1 with precision >= 0.80 (else by F1).
The chosen value is agents.claims.judged.PAIR_MIN_CONFIDENCE.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agents.claims import ClaimVectors, detect_claim_conflicts  # noqa: E402
from agents.judge_onnx import judge_setup  # noqa: E402
from articles.embeddings import embed_texts  # noqa: E402
from bench.detection_quality import BROAD, labelled_sets, score, settings  # noqa: E402  (sets up Django)

BARS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.93)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="the first 60 sets")
    args = parser.parse_args()
    sets = labelled_sets(BROAD / "dev.jsonl")[: 60 if args.quick else None]
    store = ClaimVectors(lambda texts: embed_texts(list(texts)))
    judge = judge_setup(settings.JUDGE_DIR, mode="judge")
    if judge is None:
        sys.exit(f"no judge artefact at {settings.JUDGE_DIR}")
    judge = dataclasses.replace(judge, pair_min_confidence=0.0)  # every judge finding; the sweep sets the bar
    # The rules as judge+rules keeps them (the judge's veto applied), without any judge finding of its own.
    vetoed_rules = dataclasses.replace(judge, mode="judge+rules",
                                       calibration=dataclasses.replace(judge.calibration, report_score=1.01))
    judged, rules = {}, {}
    for item in sets:
        judged[item["id"]] = {f.refs: f.confidence for f in detect_claim_conflicts(
            articles=item["articles"], now=item["now"], vectors=store, judge=judge, min_confidence=0.0).findings}
        rules[item["id"]] = {f.refs for f in detect_claim_conflicts(
            articles=item["articles"], now=item["now"], vectors=store, judge=vetoed_rules).findings}
    print(f"dev half: {len(sets)} sets, {sum(len(s['gold']) for s in sets)} conflicting pairs")
    best = {}
    for mode in ("judge", "judge+rules"):
        rows = []
        for bar in BARS:
            def predict(item, bar=bar, mode=mode):
                found = {key for key, confidence in judged[item["id"]].items() if confidence >= bar}
                return found | rules[item["id"]] if mode == "judge+rules" else found
            result = score(sets, predict)
            rows.append((bar, result))
            print(f"  {mode:12s} bar {bar:.2f}: P {result['p']:.2f} R {result['r']:.2f} F1 {result['f1']:.2f}")
        precise = [row for row in rows if row[1]["p"] >= 0.80] or rows
        best[mode] = max(precise, key=lambda row: row[1]["f1"])
    for mode, (bar, result) in best.items():
        print(f"best for {mode}: bar {bar:.2f} (P {result['p']:.2f} R {result['r']:.2f} F1 {result['f1']:.2f})")


if __name__ == "__main__":
    main()
