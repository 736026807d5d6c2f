"""MACR step 3, the Analyzer: an answer from each source alone, then the contradictions between them.

1. For C₀ and each source, one call answers the question from that source alone (with the sentence
   it rests on). Answering per source keeps one source from colouring the reading of another.
2. One call compares the answers (and sees the sources, to quote them) and lists the conflicting
   pairs as triplets ⟨cᵢ, cⱼ, T⟩ with the exact conflicting snippet from each side.

Nothing the model writes is believed unchecked: refs that are not among the sources drop the item,
and a snippet that does not occur in its source (up to whitespace) is dropped; both are counted.
The comparison call is skipped when fewer than two sources give distinct answers: nothing can conflict.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.llm import LLMConfig, with_max_items
from agents.macr.calls import CallMeter, json_call
from agents.macr.prompts import (
    CANNOT_TELL,
    COMPARE_SCHEMA,
    COMPARE_SCHEMA_NAME,
    COMPARE_SYSTEM,
    MACR_CONFLICT_TYPES,
    SOURCE_ANSWER_SCHEMA,
    SOURCE_ANSWER_SCHEMA_NAME,
    SOURCE_ANSWER_SYSTEM,
    date_line,
    quote_source,
    quote_sources,
)
from agents.quotes import find_in_article, verified_quotes
from agents.types import ArticleText, pair_key


@dataclass(frozen=True)
class SourceAnswer:
    ref: str
    answer: str
    quote: str | None  # the source's own text for the quoted sentence; None when missing or made up

    @property
    def informative(self) -> bool:
        return bool(normalise_answer(self.answer)) and normalise_answer(self.answer) != normalise_answer(CANNOT_TELL)


@dataclass(frozen=True)
class Triplet:
    """⟨cᵢ, cⱼ, T⟩: two sources that contradict each other on the question, with their snippets."""

    refs: tuple[str, str]  # sorted
    type: str
    explanation: str
    snippets: dict[str, str] = field(default_factory=dict)


@dataclass
class Analysis:
    answers: dict[str, SourceAnswer]
    triplets: list[Triplet]
    dropped_bad_snippets: int = 0
    dropped_invented_refs: int = 0


_PUNCTUATION = re.compile(r"[^\w\s]")


def normalise_answer(text: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", text.lower()).split())


def answer_from_source(
    *, question: str, source: ArticleText, now: dt.date, config: LLMConfig, meter: CallMeter
) -> tuple[SourceAnswer, int]:
    """(the answer, 1 if its quote was made up and dropped else 0)."""
    user = "\n\n".join([date_line(now), quote_source(source), f"Question: {question}"])
    parsed = json_call(meter=meter, step="analyzer_answers", config=config, system=SOURCE_ANSWER_SYSTEM, user=user,
                       schema=SOURCE_ANSWER_SCHEMA, schema_name=SOURCE_ANSWER_SCHEMA_NAME)
    raw_quote = parsed["quote"].strip()
    quote = find_in_article(quote=raw_quote, article=source) if raw_quote else None
    return SourceAnswer(ref=source.ref, answer=parsed["answer"].strip(), quote=quote), int(bool(raw_quote) and quote is None)


def check_triplets(*, parsed: dict, sources: dict[str, ArticleText]) -> tuple[list[Triplet], int, int]:
    """(triplets, dropped snippets, dropped items with invented refs)."""
    triplets: dict[tuple[str, str], Triplet] = {}
    bad_snippets = invented = 0
    for item in parsed.get("conflicts", []):
        refs = [ref.strip() for ref in item["refs"]]
        if len(refs) != 2 or refs[0] == refs[1] or not all(ref in sources for ref in refs):
            invented += 1
            continue
        key = pair_key(refs[0], refs[1])
        if key in triplets:
            continue  # a second item for the same pair: the first stands
        snippets, dropped = verified_quotes(items=item["snippets"], articles=sources, allowed_refs=key)
        bad_snippets += dropped
        conflict_type = item["type"] if item["type"] in MACR_CONFLICT_TYPES else "other"
        triplets[key] = Triplet(refs=key, type=conflict_type, explanation=item["explanation"].strip(), snippets=snippets)
    return list(triplets.values()), bad_snippets, invented


def analyze(
    *, question: str, sources: Sequence[ArticleText], now: dt.date, config: LLMConfig, meter: CallMeter | None = None
) -> Analysis:
    """Raises LLMError when a call fails; `sources` must have distinct refs."""
    meter = meter if meter is not None else CallMeter()
    by_ref = {source.ref: source for source in sources}
    if len(by_ref) != len(sources):
        raise ValueError("sources must have distinct refs")
    answers: dict[str, SourceAnswer] = {}
    bad_quotes = 0
    for source in sources:
        answers[source.ref], dropped = answer_from_source(question=question, source=source, now=now, config=config, meter=meter)
        bad_quotes += dropped

    distinct = {normalise_answer(answer.answer) for answer in answers.values() if answer.informative}
    if len(distinct) < 2:
        return Analysis(answers=answers, triplets=[], dropped_bad_snippets=bad_quotes)

    listing = "\n".join(f"- {ref}: {answer.answer}" for ref, answer in answers.items())
    user = "\n\n".join([
        date_line(now), "Sources:", quote_sources(sources), f"Question: {question}",
        "Answer given by each source alone:\n" + listing,
    ])
    pairs = len(sources) * (len(sources) - 1) // 2  # at most one triplet per pair of sources
    parsed = json_call(meter=meter, step="analyzer_compare", config=config, system=COMPARE_SYSTEM, user=user,
                       schema=with_max_items(COMPARE_SCHEMA, "conflicts", pairs), schema_name=COMPARE_SCHEMA_NAME)
    triplets, bad_snippets, invented = check_triplets(parsed=parsed, sources=by_ref)
    return Analysis(answers=answers, triplets=triplets, dropped_bad_snippets=bad_quotes + bad_snippets,
                    dropped_invented_refs=invented)
