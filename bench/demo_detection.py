"""Precision / recall / F1 of the claim-based detector on the demo KB (a KB it was never tuned on).

    .venv/bin/python bench/demo_detection.py [--all-pairs] [--show-agreeing]

Retrieval sets are rebuilt without a database: for each question in questions.jsonl, its expect_refs plus
3 more articles, once chosen at random (seeded) and once the 3 lexically nearest to the question (tf-idf
cosine, closer to what real retrieval returns, hence harder). A pair counts once, however many sets flag it;
planted pairs are the positives, every other flagged pair (near-miss or not) is a false positive and is
listed so a human can check whether it is a real, unplanted conflict. `--all-pairs` also runs the detector
on the whole KB at once (every pair of articles). The last two lines are machine-readable figures.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import random
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import os  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")
import django  # noqa: E402

django.setup()

from agents.claims import ClaimVectors, detect_claim_conflicts  # noqa: E402
from agents.types import ArticleText, pair_key  # noqa: E402
from articles.embeddings import embed_texts  # noqa: E402
from articles.ingest import parse_path  # noqa: E402

DEMO = REPO / "articles" / "fixtures" / "demo"
ARTICLE_FILES = ["faq.json", "faq-legacy.csv", "pages", "guides", "docs"]
NOW = dt.date(2026, 11, 29)  # the demo KB's "present" (see its README)
EXTRA = 3
SEED = 20261129


def load_articles() -> dict[str, ArticleText]:
    out = {}
    for name in ARTICLE_FILES:
        for p in parse_path(DEMO / name):
            out[p.ref] = ArticleText(ref=p.ref, title=p.title, body=p.body, updated_at=p.updated_at, source=p.source)
    return out


def _tokens(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2]


class Lexical:
    """tf-idf cosine between a question and every article: a stand-in for the product's retrieval."""

    def __init__(self, articles: dict[str, ArticleText]):
        docs = {ref: Counter(_tokens(a.title + " " + a.body)) for ref, a in articles.items()}
        df = Counter(w for c in docs.values() for w in c)
        self.idf = {w: math.log(len(docs) / n) for w, n in df.items()}
        self.vectors = {ref: self._unit(c) for ref, c in docs.items()}

    def _unit(self, counts: Counter) -> dict[str, float]:
        v = {w: (1 + math.log(n)) * self.idf.get(w, 0.0) for w, n in counts.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {w: x / norm for w, x in v.items()}

    def nearest(self, question: str, *, exclude: set[str], k: int) -> list[str]:
        q = self._unit(Counter(_tokens(question)))
        scored = sorted(((-sum(x * vec.get(w, 0.0) for w, x in q.items()), ref)
                         for ref, vec in self.vectors.items() if ref not in exclude))
        return [ref for _, ref in scored[:k]]


def build_sets(articles: dict[str, ArticleText], questions: list[dict]) -> dict[str, list[list[str]]]:
    rng = random.Random(SEED)
    lexical = Lexical(articles)
    refs = sorted(articles)
    sets = {"random": [], "lexical": []}
    for q in questions:
        expected = list(q["expect_refs"])
        others = [r for r in refs if r not in expected]
        sets["random"].append(expected + rng.sample(others, EXTRA))
        sets["lexical"].append(expected + lexical.nearest(q["question"], exclude=set(expected), k=EXTRA))
    return sets


def flagged_pairs(articles: dict[str, ArticleText], sets: list[list[str]]) -> dict:
    found = {}
    store = ClaimVectors(embed_texts)
    for refs in sets:
        for f in detect_claim_conflicts(articles=[articles[r] for r in refs], now=NOW, vectors=store).findings:
            found.setdefault(f.refs, f)
    return found


def score(found: dict, planted: dict, candidates: set) -> dict:
    """`candidates`: planted pairs that appear together in at least one set (recall's denominator)."""
    tp = sorted(r for r in found if r in planted)
    fp = sorted(r for r in found if r not in planted)
    fn = sorted(r for r in candidates if r not in found)
    p = len(tp) / len(found) if found else 0.0
    r = len(tp) / len(candidates) if candidates else 0.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def _together(sets: list[list[str]]) -> set:
    return {pair_key(a, b) for s in sets for i, a in enumerate(s) for b in s[i + 1:] if a != b}


def main() -> None:
    articles = load_articles()
    truth = json.loads((DEMO / "planted.json").read_text())
    planted = {pair_key(*c["refs"]): c for c in truth["conflicts"]}
    near = {pair_key(*c["refs"]): c for c in truth["near_misses"]}
    questions = [json.loads(x) for x in (DEMO / "questions.jsonl").read_text().splitlines() if x.strip()]
    sets = build_sets(articles, questions)
    pooled_sets = sets["random"] + sets["lexical"]
    if "--all-pairs" in sys.argv:
        sets["all-pairs"] = [sorted(articles)]
    results = {}
    for name, group in list(sets.items()) + [("pooled", pooled_sets)]:
        found = flagged_pairs(articles, group)
        together = _together(group)
        results[name] = (found, score(found, planted, {p for p in planted if p in together}))
        res = results[name][1]
        print(f"{name:9s} sets {len(group):3d}  flagged {len(found):3d}  TP {len(res['tp']):2d}  FP {len(res['fp']):3d}"
              f"  FN {len(res['fn']):2d}  P {res['precision']:.2f}  R {res['recall']:.2f}  F1 {res['f1']:.2f}")
    show = "all-pairs" if "all-pairs" in results else "pooled"
    found, res = results[show]
    print(f"misses ({show}):")
    for refs in res["fn"]:
        print(f"  {refs[0]}/{refs[1]} [{planted[refs]['type']}] {planted[refs]['why'][:100]}")
    print(f"false positives ({show}; 'near-miss' = planted as agreeing, else check by hand):")
    for refs in res["fp"]:
        label = "near-miss" if refs in near else "unplanted"
        print(f"  [{label}] [{found[refs].type}] {found[refs].explanation[:170]}")
    if "--show-agreeing" in sys.argv:
        print("true positives:")
        for refs in res["tp"]:
            print(f"  [{found[refs].type}] {found[refs].explanation[:170]}")
    res = results["pooled"][1]
    print(f"figure: demo_claims_precision {res['precision']:.2f} ratio target >= 0.9")
    print(f"figure: demo_claims_f1 {res['f1']:.2f} ratio target >= 0.8")


if __name__ == "__main__":
    main()
