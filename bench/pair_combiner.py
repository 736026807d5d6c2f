"""Can the judge's scores find what the rules miss? A learned article-pair combiner, measured (not shipped).

    .venv/bin/python bench/pair_combiner.py [--sets dev,kb-dev,demo] [--report]

For every article pair of a retrieval set (both articles with claims: the pairs the detector reads),
features the product already computes: the rules' finding (confidence, type) before and after the judge's
veto, the judge's scores of the best-aligned statement pairs (TOP_ALIGNED, both orders, the best one that the
typed values do not settle as equal), how many of them give differing values, and the alignment's strength.
A logistic regression (numpy, L2) learns from the dev half which pairs conflict:

- dev: leave-one-business-out (each business scored by a model and a threshold, the one of best F1, chosen on the
  other businesses), beside the product's veto on the same pairs;
- kb-dev and the demo (unseen): the model and threshold chosen on the whole dev half, beside veto;
- for each set, how well the judge's best score alone separates conflicting pairs from the others among the
  pairs the product does not flag (ROC AUC): what a combiner could recover at best;
- `--report`: the held-out half too, with the model and threshold fixed on dev (run once, never to choose).

Judge scores are cached per statement pair in var/bench/pair_combiner_judge_<artefact hash>.pkl.
"""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import pickle
import sys
from itertools import combinations
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from detection_quality import BROAD, SHARED, business, demo_sets, labelled_sets  # noqa: E402
from django.conf import settings  # noqa: E402

from agents.claims import ClaimVectors, _aligned, detect_claim_conflicts  # noqa: E402
from agents.claims.analysis import analyse_text  # noqa: E402
from agents.claims.judged import TOP_ALIGNED, statement_pair, values_agree  # noqa: E402
from agents.claims.values import comparable, equal_values  # noqa: E402
from agents.judge_onnx import judge_setup  # noqa: E402
from agents.types import CONFLICT_TYPES, pair_key  # noqa: E402
from articles.embeddings import embed_texts  # noqa: E402

CACHE_DIR = REPO / "var" / "bench"


def _values_differ(a, b) -> bool:
    pairs = [(x, y) for x in a.values for y in b.values if comparable(x, y)]
    return bool(pairs) and not any(equal_values(x, y) for x, y in pairs)


def pair_features(item: dict, store: ClaimVectors, veto) -> list[tuple[tuple[str, str], dict[str, float]]]:
    """(pair, features) for every article pair of the set whose articles both have claims."""
    articles, now = {a.ref: a for a in item["articles"]}, item["now"]
    rules = {f.refs: f for f in detect_claim_conflicts(articles=item["articles"], now=now, vectors=store).findings}
    product = {f.refs: f for f in detect_claim_conflicts(articles=item["articles"], now=now, vectors=store,
                                                         judge=veto).findings}
    facts = {ref: analyse_text(a.title, a.body, now.year) for ref, a in articles.items()}
    matrices = {ref: store.vectors(f) for ref, f in facts.items()}
    out = []
    for ref_a, ref_b in combinations(sorted(articles), 2):
        if not facts[ref_a] or not facts[ref_b]:
            continue
        similarity, rows, cols, order = _aligned(matrices[ref_a], matrices[ref_b])
        key = pair_key(ref_a, ref_b)
        top = [(facts[ref_a][int(rows[k])], facts[ref_b][int(cols[k])]) for k in order[:TOP_ALIGNED]]
        verdicts = veto.judge.judge([statement_pair(a, b) for a, b in top])
        scored = [(v, a, b) for v, (a, b) in zip(verdicts, top) if not values_agree(a, b)]
        best = max(scored, key=lambda s: s[0].contradicts, default=None)
        rule, kept = rules.get(key), product.get(key)
        features = {
            "similarity_max": float(similarity.max()),
            "aligned": float(len(order) > 0),
            "aligned_log": math.log1p(len(order)),
            "rule_confidence": rule.confidence if rule else 0.0,
            "product_confidence": kept.confidence if kept else 0.0,
            "best_contradicts": best[0].contradicts if best else 0.0,
            "best_apart": best[0].settles_apart if best else 1.0,
            "best_values_differ": float(_values_differ(best[1], best[2])) if best else 0.0,
            "mean_contradicts": float(np.mean([v.contradicts for v in verdicts])) if verdicts else 0.0,
            "min_apart": min((v.settles_apart for v in verdicts), default=1.0),
            "values_differ": float(sum(_values_differ(a, b) for a, b in top)),
            **{f"rule_{t}": float(rule is not None and rule.type == t) for t in CONFLICT_TYPES},
        }
        out.append((key, features))
    return out


def table(sets: list[dict], store: ClaimVectors, veto) -> dict:
    rows, labels, flagged, groups, names = [], [], [], [], []
    for item in sets:
        for key, features in pair_features(item, store, veto):
            names = list(features)
            rows.append(list(features.values()))
            labels.append(key in item["gold"])
            flagged.append(features["product_confidence"] > 0)
            groups.append(business(item))
    return {"x": np.array(rows), "y": np.array(labels), "product": np.array(flagged), "groups": np.array(groups),
            "names": names, "gold": sum(len(item["gold"]) for item in sets)}


class Logistic:
    """L2-regularised logistic regression on standardised features (Newton's method)."""

    def __init__(self, l2: float = 1.0) -> None:
        self.l2 = l2

    def fit(self, x: np.ndarray, y: np.ndarray) -> "Logistic":
        self.mean, self.scale = x.mean(axis=0), x.std(axis=0) + 1e-9
        z = np.hstack([(x - self.mean) / self.scale, np.ones((len(x), 1))])
        w = np.zeros(z.shape[1])
        penalty = np.eye(z.shape[1]) * self.l2
        penalty[-1, -1] = 0.0  # the intercept is not shrunk
        for _ in range(50):
            p = 1 / (1 + np.exp(-z @ w))
            gradient = z.T @ (p - y) + penalty @ w
            hessian = (z * (p * (1 - p))[:, None]).T @ z + penalty
            step = np.linalg.solve(hessian, gradient)
            w -= step
            if np.abs(step).max() < 1e-8:
                break
        self.w = w
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        z = np.hstack([(x - self.mean) / self.scale, np.ones((len(x), 1))])
        return 1 / (1 + np.exp(-z @ self.w))


def f1(chosen: np.ndarray, y: np.ndarray, gold: int) -> tuple[int, int, float, float, float]:
    tp, fp = int((chosen & y).sum()), int((chosen & ~y).sum())
    p, r = (tp / (tp + fp) if tp + fp else 0.0), tp / gold if gold else 0.0
    return tp, fp, p, r, (2 * p * r / (p + r) if p + r else 0.0)


def prf(chosen: np.ndarray, y: np.ndarray, gold: int) -> str:
    tp, fp, p, r, f = f1(chosen, y, gold)
    return f"P {p:.2f}  R {r:.2f}  F1 {f:.3f}  (TP {tp}, FP {fp}, FN {gold - tp})"


THRESHOLDS = np.round(np.arange(0.2, 0.95, 0.05), 2)


def best_threshold(scores: np.ndarray, y: np.ndarray) -> float:
    """The threshold of THRESHOLDS with the best F1 on these (training) scores."""
    return float(max(THRESHOLDS, key=lambda t: f1(scores >= t, y, int(y.sum()))[4]))


def roc_auc(scores: np.ndarray, y: np.ndarray) -> float:
    """The chance that a conflicting pair scores above a non-conflicting one (ties count half)."""
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    start = 0
    while start < len(scores):  # average ranks over ties
        end = start
        while end + 1 < len(scores) and sorted_scores[end + 1] == sorted_scores[start]:
            end += 1
        ranks[order[start:end + 1]] = (start + end) / 2 + 1
        start = end + 1
    positives = int(y.sum())
    negatives = len(y) - positives
    if not positives or not negatives:
        return float("nan")
    return float((ranks[y].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="dev,kb-dev,demo", help="dev first; the others are scored by the dev model")
    parser.add_argument("--report", action="store_true", help="also the held-out half (model fixed on dev)")
    parser.add_argument("--l2", type=float, default=1.0)
    args = parser.parse_args()
    names = [n for n in args.sets.split(",") if n != "dev"] + (["report"] if args.report else [])
    veto = judge_setup(settings.JUDGE_DIR, mode="veto")
    if veto is None:
        raise SystemExit(f"no judge artefact at {settings.JUDGE_DIR}")
    artefact = hashlib.sha256((Path(settings.JUDGE_DIR) / "model.onnx").read_bytes()).hexdigest()[:16]
    cache = CACHE_DIR / f"pair_combiner_judge_{artefact}.pkl"
    if cache.exists():
        veto.judge._cache.update(pickle.loads(cache.read_bytes()))
    store = ClaimVectors(lambda texts: embed_texts(list(texts)))
    loaders = {"dev": lambda: labelled_sets(BROAD / "dev.jsonl"), "report": lambda: labelled_sets(BROAD / "report.jsonl"),
               "kb-dev": lambda: labelled_sets(SHARED / "kb-conflicts-dev" / "dev.jsonl"), "demo": demo_sets}
    tables = {name: table(loaders[name](), store, veto) for name in ["dev", *names]}
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(dict(veto.judge._cache)))

    dev = tables["dev"]
    # Each held-out business is scored by a model and a threshold chosen on the other businesses alone.
    chosen_out_of_fold = np.zeros(len(dev["y"]), dtype=bool)
    fold_thresholds = []
    for group in np.unique(dev["groups"]):
        held = dev["groups"] == group
        fold = Logistic(args.l2).fit(dev["x"][~held], dev["y"][~held])
        fold_thresholds.append(best_threshold(fold.predict(dev["x"][~held]), dev["y"][~held]))
        chosen_out_of_fold[held] = fold.predict(dev["x"][held]) >= fold_thresholds[-1]
    model = Logistic(args.l2).fit(dev["x"], dev["y"])
    threshold = best_threshold(model.predict(dev["x"]), dev["y"])
    print("article pairs read: " + ", ".join(f"{n} {len(t['y'])} ({int(t['y'].sum())} conflicting)"
                                                           for n, t in tables.items()))
    print(f"\n== dev, leave one business out ({len(np.unique(dev['groups']))} businesses; each one's threshold chosen on "
          f"the others: {min(fold_thresholds):.2f}-{max(fold_thresholds):.2f})")
    print(f"  combiner        {prf(chosen_out_of_fold, dev['y'], dev['gold'])}")
    print(f"  veto (product)  {prf(dev['product'], dev['y'], dev['gold'])}")
    for name in names:
        t = tables[name]
        print(f"\n== {name}: the model and threshold ({threshold:.2f}) chosen on the whole dev half")
        print(f"  combiner        {prf(model.predict(t['x']) >= threshold, t['y'], t['gold'])}")
        print(f"  veto (product)  {prf(t['product'], t['y'], t['gold'])}")
    print("\nAmong the pairs with an aligned claim pair the product does not flag: ROC AUC of the judge's best statement-pair score "
          "(conflicting pairs against the rest)")
    for name, t in tables.items():
        column = t["names"].index("best_contradicts")
        unflagged = ~t["product"] & (t["x"][:, t["names"].index("aligned")] > 0)
        auc = roc_auc(t["x"][unflagged, column], t["y"][unflagged])
        print(f"  {name:7s} {auc:.3f}  ({int(t['y'][unflagged].sum())} conflicting of {int(unflagged.sum())})")
        print(f"figure: pair_combiner_{name.replace('-', '_')}_unflagged_auc {auc:.3f} auc (0.5: chance)")


if __name__ == "__main__":
    main()
