"""Mine the judge's hard negatives from the dev half of kb-conflicts-broad: the statement pairs the detector
aligns, as the judge reads them, in article pairs the labels say do not conflict.

    .venv/bin/python bench/mine_claim_pairs.py [--out bench/data/claim-pairs/mined/mined-dev-negatives.jsonl]
        [--hard 0.15] [--easy-share 0.25] [--seed 13]

The hand-written corpus pairs two statements about one thing; the detector hands the judge the closest claims
of two articles, most often about two different things that share words or a kind of value. Those pairs are
what the judge gets wrong in the product, so they are mined here, where the labels decide: every aligned
statement pair of an article pair that is neither a conflict nor unlabelled-in-conflict is labelled
`not_contradicts` (the labels say the articles do not contradict each other; whether a pair is consistent,
different scope or unrelated is not known, so only "not a contradiction" is taught). Kept: every pair the
current judge scores at `--hard` or more, and a seeded `--easy-share` of the others. Near misses are marked.

Only the dev half is read (the report half stays held out); the output's business is the ref prefix.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from agents.claims import ClaimVectors, aligned_statement_pairs  # noqa: E402
from agents.judge import CachedJudge  # noqa: E402
from agents.judge_onnx import OnnxJudge  # noqa: E402
from articles.embeddings import embed_texts  # noqa: E402
from bench.detection_quality import BROAD, business, labelled_sets  # noqa: E402

NOT_CONTRADICTS = "not_contradicts"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=REPO / "bench/data/claim-pairs/mined/mined-dev-negatives.jsonl")
    parser.add_argument("--hard", type=float, default=0.15, help="keep every pair the current judge scores this high")
    parser.add_argument("--easy-share", type=float, default=0.25, help="share of the other pairs kept (seeded)")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    store = ClaimVectors(lambda texts: embed_texts(list(texts)))
    judge = CachedJudge(OnnxJudge(Path(settings.JUDGE_DIR)))
    rng = random.Random(args.seed)
    rows, seen = [], set()
    counts = {"sets": 0, "article_pairs": 0, "aligned": 0, "hard": 0, "easy": 0}
    for item in labelled_sets(BROAD / "dev.jsonl"):
        counts["sets"] += 1
        near_misses = set(item["why"]) - set(item["gold"])
        for key, pairs in aligned_statement_pairs(articles=item["articles"], now=item["now"], vectors=store).items():
            if key in item["gold"] or not pairs:
                continue
            counts["article_pairs"] += 1
            for pair, verdict in zip(pairs, judge.judge(pairs)):
                text_key = frozenset({(pair.heading_a, pair.text_a), (pair.heading_b, pair.text_b)})
                if text_key in seen:
                    continue
                seen.add(text_key)
                counts["aligned"] += 1
                hard = verdict.contradicts >= args.hard
                if not hard and rng.random() >= args.easy_share:
                    continue
                counts["hard" if hard else "easy"] += 1
                rows.append({
                    "id": f"mined-neg-{len(rows) + 1}", "business": f"dev-{business(item)}", "sector": "",
                    "a": {"heading": pair.heading_a, "text": pair.text_a},
                    "b": {"heading": pair.heading_b, "text": pair.text_b},
                    "label": NOT_CONTRADICTS, "kind": "near_miss" if key in near_misses else "aligned",
                    "numeric": False, "set": item["id"], "refs": list(key),
                    "note": f"aligned in an article pair the labels call {'a near miss' if key in near_misses else 'not conflicting'}; "
                            f"judge before mining: contradicts {verdict.contradicts:.2f}",
                })
    args.out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    print(f"{counts['sets']} dev sets, {counts['article_pairs']} non-conflicting article pairs, {counts['aligned']} distinct "
          f"aligned statement pairs; kept {counts['hard']} hard (judge >= {args.hard}) + {counts['easy']} easy "
          f"-> {args.out}")


if __name__ == "__main__":
    main()
