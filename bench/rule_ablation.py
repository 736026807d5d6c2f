"""What each rule family of the claim detector is worth: the detector's F1 with every family, then with each one
taken out, in the product's mode (the judge as JUDGE_MODE says), side by side in one run.

    .venv/bin/python bench/rule_ablation.py [--sets dev] [--mode veto] [--judge-dir DIR]

Issue 27 retires a family whose removal costs less than 0.01 F1 on the dev half (`figure: ablation_*` lines,
one per family: the F1 change when it is taken out; "retire" when above -0.01). Families are those of
agents.claims.compare.FAMILIES, the settlements that return a finding outright (a name swapped in a copy, one
thing in two named places) and the passes over whole articles (a transposed phone number, prices of one named
thing). A family is taken out for the run by replacing it with one that finds nothing; nothing else changes.
"""
from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

import agents.claims as claims  # noqa: E402
from agents.claims import ClaimVectors, compare, detect_claim_conflicts  # noqa: E402
from agents.judge_onnx import judge_setup  # noqa: E402
from articles.embeddings import embed_texts  # noqa: E402
from bench.detection_quality import BROAD, SHARED, demo_sets, labelled_sets, score  # noqa: E402

RETIRE_ABOVE = -0.01  # an F1 change above this when a family is taken out: the judge (or another family) covers it


def _nothing(*args, **kwargs):
    return None


def _without_name_swap(inner):
    def near_copy_difference(a, b):
        found = inner(a, b)
        return None if found is not None and found[3] else found
    return near_copy_difference


def ablations() -> dict[str, list[tuple[object, str, object]]]:
    """Family name -> the (module, attribute, replacement) patches that take it out."""
    out = {name: [(compare, "FAMILIES", tuple(f for f in compare.FAMILIES if f[0] != name))]
           for name, _ in compare.FAMILIES}
    out["name swap"] = [(compare, "near_copy_difference", _without_name_swap(compare.near_copy_difference))]
    out["two places"] = [(compare, "two_places", _nothing)]
    for name in ("transposed_contact", "same_subject_prices"):
        out[name.replace("_", " ")] = [(claims, name, _nothing)]
    return out


@contextmanager
def patched(patches):
    saved = [(module, attribute, getattr(module, attribute)) for module, attribute, _ in patches]
    try:
        for module, attribute, replacement in patches:
            setattr(module, attribute, replacement)
        yield
    finally:
        for module, attribute, original in saved:
            setattr(module, attribute, original)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="dev", help="dev, kb-dev or demo (comma-separated)")
    parser.add_argument("--mode", default=settings.JUDGE_MODE, help="the claim detector's judge mode")
    parser.add_argument("--judge-dir", default=settings.JUDGE_DIR)
    args = parser.parse_args()
    store = ClaimVectors(lambda texts: embed_texts(list(texts)))
    setup = judge_setup(args.judge_dir, mode=args.mode)
    loaders = {"dev": lambda: labelled_sets(BROAD / "dev.jsonl"),
               "kb-dev": lambda: labelled_sets(SHARED / "kb-conflicts-dev" / "dev.jsonl"), "demo": demo_sets}
    sets = [item for name in args.sets.split(",") for item in loaders[name]()]

    def f1() -> dict:
        return score(sets, lambda item: {f.refs for f in detect_claim_conflicts(
            articles=item["articles"], now=item["now"], vectors=store, judge=setup).findings})

    base = f1()
    print(f"{args.sets} ({len(sets)} sets), claims: {args.mode if setup else 'rules'}: "
          f"P {base['p']:.3f} R {base['r']:.3f} F1 {base['f1']:.3f} (TP {base['tp']}, FP {base['fp']})")
    rows = []
    for name, patches in ablations().items():
        with patched(patches):
            res = f1()
        rows.append((name, res, res["f1"] - base["f1"]))
        print(f"  without {name:26s} P {res['p']:.3f} R {res['r']:.3f} F1 {res['f1']:.3f}  "
              f"change {res['f1'] - base['f1']:+.3f}  (TP {res['tp'] - base['tp']:+d}, FP {res['fp'] - base['fp']:+d})"
              + ("  retire" if res["f1"] - base["f1"] > RETIRE_ABOVE else ""))
    for name, _, change in rows:
        print(f"figure: ablation_{name.replace(' ', '_')}_f1_change {change:+.3f} ratio retire above {RETIRE_ABOVE}")


if __name__ == "__main__":
    main()
