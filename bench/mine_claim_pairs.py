"""Mine statement pairs for the judge from the dev half of kb-conflicts-broad, in the form the detector hands
them to the judge (its aligned statement pairs: a cell's row label before its text, the heading it sits under).

    .venv/bin/python bench/mine_claim_pairs.py [--out bench/data/claim-pairs/mined/mined-dev-negatives.jsonl]
        [--hard 0.15] [--easy-share 0.25] [--seed 13]
    .venv/bin/python bench/mine_claim_pairs.py --positives [--out bench/data/claim-pairs/mined/mined-dev-positives.jsonl]
        [--match 0.8] [--cover 0.2] [--apart 0]

Negatives (default). The hand-written corpus pairs two statements about one thing; the detector hands the judge
the closest claims of two articles, most often about two different things that share words or a kind of value.
Those pairs are what the judge gets wrong in the product, so they are mined here, where the labels decide: every
aligned statement pair of an article pair that is neither a conflict nor unlabelled-in-conflict is labelled
`not_contradicts` (the labels say the articles do not contradict each other; whether a pair is consistent,
different scope or unrelated is not known, so only "not a contradiction" is taught). Kept: every pair the
current judge scores at `--hard` or more, and a seeded `--easy-share` of the others. Near misses are marked.

Positives (`--positives`). For every conflicting article pair, the aligned statement pairs (all of them, not only
the first TOP_ALIGNED the judge reads in `judge` mode: in `veto` it reads the pair a rule flagged, wherever it
ranks) that carry the labelled contradiction are labelled `contradicts`. Which ones do is read from the
hand-copied `contradicts` rows of mined-dev.jsonl for that article pair (the sentence or two in each body that
state the fact): a pair is taken when each side's words (content words of the row label and text) are contained
in that article's hand-copied statement at `--match` or more and say at least `--cover` of its words (a bare
"Cancellation." is not the statement about how to cancel); a hand-copied table row matched by several of its
cells on one side is left out (which cell carries the contradiction, the words cannot tell). With `--apart` (0 turns it off), the other aligned
pairs of a conflicting article pair whose sides both share at most that share of their words with every
hand-copied statement of their article are labelled `not_contradicts` (they are about something else than the
labelled contradiction; the conflicting article pair may still hide an unlabelled one, so only clear misses).

Only the dev half is read (the report half stays held out); the output's business is the ref prefix.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from agents.claims import ClaimVectors, aligned_statement_pairs  # noqa: E402
from agents.claims.judged import TOP_ALIGNED  # noqa: E402
from agents.claims.words import STOPWORDS  # noqa: E402
from agents.judge import CachedJudge, StatementPair  # noqa: E402
from agents.judge_onnx import OnnxJudge  # noqa: E402
from agents.types import pair_key  # noqa: E402
from articles.embeddings import embed_texts  # noqa: E402
from bench.detection_quality import BROAD, business, labelled_sets  # noqa: E402

MINED = REPO / "bench/data/claim-pairs/mined"
NOT_CONTRADICTS = "not_contradicts"
CONTRADICTS = "contradicts"
ALL_ALIGNED = 10_000  # per article pair: every aligned statement pair
WORD_RE = re.compile(r"\w+")


def dev_aligned_pairs(store: ClaimVectors, *, conflicts: bool, per_pair: int | None = None):
    """(labelled set, article pair key, its aligned statement pairs best first) for the conflicting article pairs
    of every dev set (`conflicts`) or the others, each distinct text pair once over the whole half (the first
    set that aligns it keeps it); article pairs with no aligned statement pair are left out."""
    seen: set = set()
    options = {} if per_pair is None else {"per_pair": per_pair}
    for item in labelled_sets(BROAD / "dev.jsonl"):
        for key, pairs in aligned_statement_pairs(articles=item["articles"], now=item["now"], vectors=store,
                                                  **options).items():
            if (key in item["gold"]) != conflicts or not pairs:
                continue
            fresh = []
            for pair in pairs:
                text_key = frozenset({(pair.heading_a, pair.text_a), (pair.heading_b, pair.text_b)})
                if text_key not in seen:
                    seen.add(text_key)
                    fresh.append(pair)
            yield item, key, fresh


def mined_row(number: int, prefix: str, item: dict, key: tuple[str, str], pair: StatementPair, *, label: str,
              kind: str, note: str, numeric: bool = False) -> dict:
    """One mined pair in the corpus's fields (plus `set` and `refs`), as the detector words it."""
    return {"id": f"{prefix}-{number}", "business": f"dev-{business(item)}", "sector": "",
            "a": {"heading": pair.heading_a, "text": pair.text_a},
            "b": {"heading": pair.heading_b, "text": pair.text_b},
            "label": label, "kind": kind, "numeric": numeric, "set": item["id"], "refs": list(key), "note": note}


def content_words(text: str) -> set[str]:
    return {w for w in WORD_RE.findall(text.lower()) if w not in STOPWORDS}


def contained(part: str, whole: str) -> float:
    """The share of `part`'s content words that occur in `whole` (0 when it has none)."""
    words = content_words(part)
    return len(words & content_words(whole)) / len(words) if words else 0.0


def hand_statements(path: Path) -> dict[tuple[str, str], list[dict]]:
    """The hand-copied `contradicts` rows of mined-dev.jsonl by article pair, each as {ref: statement, "row": row}."""
    out: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line.strip() else None
        if row and row["label"] == CONTRADICTS:
            ref_a, ref_b = row["refs"]
            out[pair_key(ref_a, ref_b)].append({ref_a: row["a"]["text"], ref_b: row["b"]["text"], "row": row})
    return out


def mine_negatives(args, store: ClaimVectors) -> list[dict]:
    judge = CachedJudge(OnnxJudge(Path(settings.JUDGE_DIR)))
    rng = random.Random(args.seed)
    rows, sets = [], set()
    counts = Counter()
    for item, key, pairs in dev_aligned_pairs(store, conflicts=False):
        sets.add(item["id"])
        counts["article_pairs"] += 1
        near_miss = key in item["why"]
        for pair, verdict in zip(pairs, judge.judge(pairs)):
            counts["aligned"] += 1
            hard = verdict.contradicts >= args.hard
            if not hard and rng.random() >= args.easy_share:
                continue
            counts["hard" if hard else "easy"] += 1
            rows.append(mined_row(
                len(rows) + 1, "mined-neg", item, key, pair, label=NOT_CONTRADICTS,
                kind="near_miss" if near_miss else "aligned",
                note=f"aligned in an article pair the labels call {'a near miss' if near_miss else 'not conflicting'}; "
                     f"judge before mining: contradicts {verdict.contradicts:.2f}"))
    print(f"{len(sets)} dev sets with such pairs, {counts['article_pairs']} non-conflicting article pairs, {counts['aligned']} distinct "
          f"aligned statement pairs; kept {counts['hard']} hard (judge >= {args.hard}) + {counts['easy']} easy")
    return rows


def covers(side: str, statement: str, *, match: float, cover: float) -> bool:
    """Whether an aligned side says (part of) a hand-copied statement: at least `match` of its words are in the
    statement, and it covers at least `cover` of the statement's (so that "Cancellation." is not taken for a
    statement about how to cancel)."""
    return contained(side, statement) >= match and contained(statement, side) >= cover


def mine_positives(args, store: ClaimVectors) -> list[dict]:
    hand = hand_statements(MINED / "mined-dev.jsonl")
    rows, done = [], set()
    counts = Counter()
    ranks: Counter = Counter()
    missed = []
    for item, key, pairs in dev_aligned_pairs(store, conflicts=True, per_pair=ALL_ALIGNED):
        if key in done:
            continue  # a conflicting article pair carries the same text in every set: mined once
        done.add(key)
        statements = hand.get(key, [])
        counts["conflicts"] += 1
        counts["no_hand_row"] += not statements
        ref_a, ref_b = key
        matches: dict[int, list[tuple[int, StatementPair]]] = defaultdict(list)  # hand row -> (rank, pair)
        best = (0.0, None)
        for rank, pair in enumerate(pairs):
            hit = False
            for number, statement in enumerate(statements):
                score = min(contained(pair.text_a, statement[ref_a]), contained(pair.text_b, statement[ref_b]))
                if score > best[0]:
                    best = (score, pair)
                if all(covers(text, statement[ref], match=args.match, cover=args.cover)
                       for text, ref in ((pair.text_a, ref_a), (pair.text_b, ref_b))):
                    matches[number].append((rank, pair))
                    hit = True
            side_a = f"{pair.heading_a}\n{pair.text_a}"  # for the 'apart' reading: the heading may name the topic
            side_b = f"{pair.heading_b}\n{pair.text_b}"
            if not hit and args.apart and statements and max(
                    max(contained(side_a, s[ref_a]), contained(side_b, s[ref_b])) for s in statements) <= args.apart:
                counts["apart"] += 1
                rows.append(mined_row(
                    len(rows) + 1, "mined-pos-apart", item, key, pair, label=NOT_CONTRADICTS, kind="in_conflict",
                    note=f"aligned pair {rank + 1} of a conflicting article pair; neither side shares more than "
                         f"{args.apart:.2f} of its words with the labelled contradiction's statements"))
        found = 0
        for number, hits in sorted(matches.items()):
            row = statements[number]["row"]
            # A hand-copied table row gives several cells (label: cell) that all match it; which cell carries the
            # contradiction the words cannot tell, so a table row matched by more than one cell is left out.
            table_sides = [i for i, ref in enumerate(key) if statements[number][ref].lstrip().startswith("|")]
            if any(len({(pair.text_a, pair.text_b)[i] for _, pair in hits}) > 1 for i in table_sides):
                counts["ambiguous"] += 1
                continue
            for rank, pair in hits:
                found += 1
                ranks["top" if rank < TOP_ALIGNED else "later"] += 1
                rows.append(mined_row(
                    len(rows) + 1, "mined-pos", item, key, pair, label=CONTRADICTS, kind=row.get("kind", ""),
                    note=f"aligned pair {rank + 1} of a conflicting article pair; both sides say part of the "
                         f"hand-copied statements of {row['id']}", numeric=bool(row.get("numeric"))))
        counts["with_positive"] += found > 0
        counts["positives"] += found
        if not found:
            missed.append((item["id"], key, len(pairs), round(best[0], 2), best[1]))
    unaligned = len(set(hand) - done)  # every conflicting article pair has a hand-copied row
    print(f"{counts['conflicts'] + unaligned} distinct conflicting article pairs: {unaligned} with no aligned "
          f"statement pair, {counts['conflicts']} with ({counts['no_hand_row']} without a hand-copied row): "
          f"{counts['with_positive']} with a positive, {counts['conflicts'] - counts['with_positive']} without; "
          f"{counts['positives']} positives ({ranks['top']} within the first {TOP_ALIGNED} aligned, {ranks['later']} "
          f"later); {counts['ambiguous']} hand-copied table rows matched by several cells left out; "
          f"{counts['apart']} clear misses labelled {NOT_CONTRADICTS}")
    if args.show_missed:
        for set_id, key, aligned, score, pair in missed:
            print(f"  none: {set_id} {key} ({aligned} aligned; best match {score})"
                  + (f"\n      A {pair.text_a!r}\n      B {pair.text_b!r}" if pair else ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--positives", action="store_true", help="mine the conflicts' statement pairs (see above)")
    parser.add_argument("--out", type=Path, help="default: mined/mined-dev-negatives.jsonl or -positives.jsonl")
    parser.add_argument("--hard", type=float, default=0.15, help="keep every pair the current judge scores this high")
    parser.add_argument("--easy-share", type=float, default=0.25, help="share of the other pairs kept (seeded)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--match", type=float, default=0.8,
                        help="positives: share of each side's words the hand-copied statement must contain")
    parser.add_argument("--cover", type=float, default=0.2,
                        help="positives: share of the hand-copied statement's words each side must say")
    parser.add_argument("--apart", type=float, default=0.0,
                        help="positives: also label pairs of a conflicting article pair whose sides share at most "
                             "this with the hand-copied statements not_contradicts (0: no)")
    parser.add_argument("--show-missed", action="store_true", help="positives: print the conflicts without one")
    args = parser.parse_args()
    out = args.out or MINED / ("mined-dev-positives.jsonl" if args.positives else "mined-dev-negatives.jsonl")
    store = ClaimVectors(lambda texts: embed_texts(list(texts)))
    rows = (mine_positives if args.positives else mine_negatives)(args, store)
    out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    print(f"{len(rows)} rows -> {out}")


if __name__ == "__main__":
    main()
