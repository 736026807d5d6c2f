"""Benchmark: the extractive answer (no generator configured) on the demo's questions, before and after.

Before: the first retrieved chunk of the best-reranked article, quoted and cited (the old answer).
After: agents.answer.extractive_answer — the sentences of the top articles most similar to the question (MiniLM),
in reading order, each article cited. Both read the same retrieval (the product's hybrid search and rerank on the
demo knowledge base, in a database of the benchmark's own). Prints the share of replies whose citations include one
of the question's expect_refs, for both, and 10 sampled question / reply pairs.

    .venv/bin/python bench/extractive_answer.py [--quick] [--samples 10]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Figure, log, print_figures, setup_django, teardown  # noqa: E402

SEED = 20261201


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first 40 questions only")
    parser.add_argument("--samples", type=int, default=10)
    args = parser.parse_args()

    setup_django(database="extractive")
    from agents.answer import Passage, extractive_answer
    from agents.citations import citation_tag
    from articles.demo import demo_paths, demo_questions
    from articles.embeddings import embed_texts
    from articles.selectors import search
    from articles.services import articles_import_paths, knowledge_base_get_or_create
    from conflicts.services.answering import answer_passages, rerank

    kb = knowledge_base_get_or_create(slug="bench-extractive", name="Demo (bench)")
    articles_import_paths(knowledge_base=kb, paths=demo_paths())
    questions = demo_questions()[: 40 if args.quick else None]
    log(f"{len(questions)} demo questions")

    rows = []
    started = time.perf_counter()
    for item in questions:
        hits = rerank(search(knowledge_base=kb, question=item["question"]))
        passages: list[Passage] = answer_passages(hits)
        before = (f"{passages[0].text} {citation_tag(passages[0].ref)}", [passages[0].ref]) if passages else ("", [])
        after = extractive_answer(question=item["question"], passages=passages, embed=embed_texts)
        expected = set(item["expect_refs"])
        rows.append({
            "question": item["question"], "expected": sorted(expected),
            "before": before[0], "before_ok": bool(expected & set(before[1])),
            "after": after.reply, "after_ok": bool(expected & set(after.citations)),
        })
    seconds = time.perf_counter() - started
    share_before = sum(r["before_ok"] for r in rows) / len(rows)
    share_after = sum(r["after_ok"] for r in rows) / len(rows)
    log(f"answered {len(rows)} questions in {seconds:.1f}s")
    log(f"replies citing an expected article: before {share_before:.3f} "
        f"({sum(r['before_ok'] for r in rows)}/{len(rows)}), after {share_after:.3f} ({sum(r['after_ok'] for r in rows)}/{len(rows)})")
    for r in random.Random(SEED).sample(rows, min(args.samples, len(rows))):
        log(f"\nQ: {r['question']}  (expect {', '.join(r['expected'])})")
        log(f"  before{' ' if r['before_ok'] else ' [miss] '}{r['before'][:300]}")
        log(f"  after {' ' if r['after_ok'] else ' [miss] '}{r['after'][:300]}")
    teardown([kb])
    print_figures([
        Figure("extractive_expect_ref_share", share_after, "share", ">=", round(share_before, 3)),
    ])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
