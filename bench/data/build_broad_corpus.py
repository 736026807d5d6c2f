"""Emit the kb-conflicts-broad corpus (dev.jsonl, report.jsonl) from its per-business sources.

    python3 bench/data/build_broad_corpus.py

Each business is one TOML file in kb-conflicts-broad/src/: its articles, the contradicting pairs and the
deliberate near-misses of its knowledge base, and the customer questions with the articles retrieved for each.
Labels belong to the knowledge base, not to a question: every set that retrieves both articles of a labelled
pair carries that label, so the same pair can never be a conflict in one set and unlabelled in another.
Stdlib only; the output is deterministic (byte-identical on every run).
"""
from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "kb-conflicts-broad"
HALVES = ("dev", "report")


class SourceError(ValueError):
    """A business source file breaks one of the corpus rules."""


def _pair(refs: list[str], where: str, known: dict) -> tuple[str, str]:
    if len(refs) != 2 or refs[0] == refs[1]:
        raise SourceError(f"{where}: refs must name two different articles, got {refs}")
    for ref in refs:
        if ref not in known:
            raise SourceError(f"{where}: unknown article {ref!r}")
    return tuple(sorted(refs))


def load_business(path: Path) -> dict:
    source = tomllib.loads(path.read_text(encoding="utf-8"))
    name = path.stem
    if source.get("half") not in HALVES:
        raise SourceError(f"{name}: half must be one of {HALVES}")
    articles = {}
    for article in source["article"]:
        ref = article["ref"]
        if ref in articles:
            raise SourceError(f"{name}: article {ref} defined twice")
        if article["source"] not in ("faq", "pdf", "web"):
            raise SourceError(f"{name}: {ref} has source {article['source']!r}")
        articles[ref] = {
            "ref": ref,
            "title": article["title"].strip(),
            "body": article["body"].strip(),
            "updated_at": article["updated_at"].isoformat(),
            "source": article["source"],
        }
    conflicts = {}
    for conflict in source.get("conflict", []):
        refs = _pair(conflict["refs"], f"{name} conflict", articles)
        correct = conflict.get("correct")
        if correct is not None and correct not in refs:
            raise SourceError(f"{name}: conflict {refs} trusts {correct!r}, not one of its refs")
        if refs in conflicts:
            raise SourceError(f"{name}: conflict {refs} labelled twice")
        conflicts[refs] = {"refs": list(refs), "type": conflict["type"], "correct": correct,
                           "why": " ".join(conflict["why"].split())}
    near_misses = {}
    for near in source.get("near_miss", []):
        refs = _pair(near["refs"], f"{name} near_miss", articles)
        if refs in conflicts or refs in near_misses:
            raise SourceError(f"{name}: near-miss {refs} is already labelled")
        near_misses[refs] = {"refs": list(refs), "why": " ".join(near["why"].split())}
    return {"name": name, "business": source["business"], "sector": source["sector"], "half": source["half"],
            "articles": articles, "conflicts": conflicts, "near_misses": near_misses, "sets": source["set"]}


def build_sets(business: dict) -> list[dict]:
    articles, rows, used = business["articles"], [], set()
    for number, item in enumerate(business["sets"], start=1):
        where = f"{business['name']} set {number}"
        refs = item["refs"]
        if not 2 <= len(refs) <= 8 or len(set(refs)) != len(refs):
            raise SourceError(f"{where}: needs 2-8 different articles, got {refs}")
        now = item["now"].isoformat()
        for ref in refs:
            if ref not in articles:
                raise SourceError(f"{where}: unknown article {ref!r}")
            if articles[ref]["updated_at"] > now:
                raise SourceError(f"{where}: {ref} is updated after the set's date {now}")
        present = set(refs)
        conflicts = [c for key, c in sorted(business["conflicts"].items()) if present.issuperset(key)]
        near_misses = [n for key, n in sorted(business["near_misses"].items()) if present.issuperset(key)]
        used.update(tuple(c["refs"]) for c in conflicts)
        used.update(tuple(n["refs"]) for n in near_misses)
        rows.append({"id": f"broad-{business['name']}-{number:02d}", "question": item["question"].strip(),
                     "now": now, "articles": [articles[ref] for ref in refs],
                     "conflicts": conflicts, "near_misses": near_misses})
    unused = (set(business["conflicts"]) | set(business["near_misses"])) - used
    if unused:
        raise SourceError(f"{business['name']}: labelled pairs never retrieved together: {sorted(unused)}")
    return rows


def main() -> int:
    businesses = [load_business(path) for path in sorted((CORPUS / "src").glob("*.toml"))]
    seen_refs: dict[str, str] = {}
    for business in businesses:
        for ref in business["articles"]:
            if ref in seen_refs:
                raise SourceError(f"ref {ref} used by both {seen_refs[ref]} and {business['name']}")
            seen_refs[ref] = business["name"]
    for half in HALVES:
        lines = [json.dumps(row, ensure_ascii=False)
                 for business in businesses if business["half"] == half for row in build_sets(business)]
        (CORPUS / f"{half}.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        print(f"{half}.jsonl: {len(lines)} sets from "
              f"{sum(b['half'] == half for b in businesses)} businesses")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SourceError as error:
        sys.exit(f"build_broad_corpus: {error}")
