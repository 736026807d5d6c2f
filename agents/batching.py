"""Several turns' checks judged in one LLM call: turns that arrive close together share it.

Each turn's check is planned on its own (agents.detection.plan_detection: claims, cache, pairs about
different things); the pairs left for the LLM by the turns of a batch are then packed into as few calls
as the rules allow, and each call's verdicts go back to the turns whose pairs it judged:

- a call holds at most `max_articles` articles (MAX_ARTICLES_CHECKED, the per-turn cap) and one text per
  ref (an article edited between two turns is two texts: they go to different calls);
- a call holds at most `max_pairs` pairs, except a call holding a single turn's pairs: a turn's new pairs
  are never split over two calls;
- a pair two turns both need (same two texts) is asked once, in the call of the first turn that needs it;
- an article is shown as the union of its aligned claims over the call's pairs (agents.excerpts), or whole
  when one of its pairs has none;
- turns are packed first-fit in the order given (arrival order); the turn that opened a call pays for it
  (its run records the call, the tokens, the dropped items and the claim pairs the call found consistent),
  so totals over turns are exact; a call's claim pairs are those of the excerpts it showed.

A failed call (timeout, HTTP error, invalid JSON) is a failure of every turn that needs one of its
verdicts: the caller records each of them as failed open. Plain data only: no Django, no settings.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from agents.detection import DetectionPlan, shown_for
from agents.llm import LLMConfig
from agents.llm_detector import detect_with_llm, verdicts_from_result
from agents.types import (
    MAX_ARTICLES_CHECKED,
    ArticleText,
    ClaimPairsShown,
    ClaimsShown,
    ConflictFinding,
    DetectionResult,
)

# Two refs with the texts the turn saw: the same pair on other texts is another question for the LLM.
PairTexts = tuple[ArticleText, ArticleText]


@dataclass
class BatchCall:
    """One LLM call: the articles it shows (ref -> text, in order of first need) and the pairs it asks."""

    articles: dict[str, ArticleText] = field(default_factory=dict)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    excerpts: dict[tuple[str, str], dict[str, ClaimsShown]] = field(default_factory=dict)  # what is shown per pair
    claim_pairs: dict[tuple[str, str], ClaimPairsShown] = field(default_factory=dict)  # the claim pairs that shows
    members: list[int] = field(default_factory=list)  # plans needing a verdict of this call; the first pays
    now: dt.date | None = None

    def fits(self, *, texts: Mapping[str, ArticleText], pairs: int, max_articles: int, max_pairs: int) -> bool:
        if not self.pairs:
            return True
        if any(self.articles.get(ref, text) != text for ref, text in texts.items()):
            return False
        return len(self.articles.keys() | texts.keys()) <= max_articles and len(self.pairs) + pairs <= max_pairs


@dataclass
class Batch:
    plans: list[DetectionPlan]
    calls: list[BatchCall]
    where: dict[PairTexts, int]  # pair on its texts -> the call asking it

    def calls_of(self, index: int) -> list[int]:
        """The calls whose verdicts plan `index` needs."""
        return [number for number, call in enumerate(self.calls) if index in call.members]

    def pays_for(self, index: int) -> int | None:
        """The call plan `index` opened (and whose cost its run records), if any."""
        return next((number for number, call in enumerate(self.calls) if call.members[0] == index), None)

    def turns_sharing(self, index: int) -> int:
        """How many plans (this one included) had pairs judged in the calls this plan needs; 0 without a call."""
        return len({member for number in self.calls_of(index) for member in self.calls[number].members})

    def verdicts_for(self, index: int, results: Mapping[int, DetectionResult]) -> dict[tuple[str, str], ConflictFinding | None]:
        """Plan `index`'s verdicts from the calls' results (keyed by call number). Pairs a call left
        unsettled (a dropped item casting doubt on them) have no verdict, as in a single turn's call."""
        plan = self.plans[index]
        texts = _texts(plan)
        by_call = {number: verdicts_from_result(result) for number, result in results.items()}
        verdicts: dict[tuple[str, str], ConflictFinding | None] = {}
        for key in plan.unjudged:
            number = self.where[_pair_texts(key, texts)]
            if number in by_call and key in by_call[number]:
                verdicts[key] = by_call[number][key]
        return verdicts


def pack_calls(plans: Sequence[DetectionPlan], *, max_pairs: int,
               max_articles: int = MAX_ARTICLES_CHECKED) -> Batch:
    """Pack the plans' unjudged pairs into calls by the rules in the module docstring."""
    if max_pairs < 1 or not 2 <= max_articles <= MAX_ARTICLES_CHECKED:
        raise ValueError(f"max_pairs must be >= 1 and max_articles within 2..{MAX_ARTICLES_CHECKED}")
    batch = Batch(plans=list(plans), calls=[], where={})
    for index, plan in enumerate(batch.plans):
        if not plan.needs_llm:
            continue
        texts = _texts(plan)
        needed = {batch.where[_pair_texts(key, texts)] for key in plan.unjudged if _pair_texts(key, texts) in batch.where}
        new = [key for key in plan.unjudged if _pair_texts(key, texts) not in batch.where]
        if new:
            touched = {ref: texts[ref] for ref in texts if any(ref in key for key in new)}  # in the plan's rank order
            number = next((n for n, call in enumerate(batch.calls)
                           if call.fits(texts=touched, pairs=len(new), max_articles=max_articles, max_pairs=max_pairs)),
                          None)
            if number is None:
                batch.calls.append(BatchCall(now=plan.now))
                number = len(batch.calls) - 1
            call = batch.calls[number]
            for ref, text in touched.items():
                call.articles.setdefault(ref, text)
            call.pairs += new
            call.excerpts.update({key: plan.excerpts[key] for key in new if key in plan.excerpts})
            call.claim_pairs.update({key: plan.claim_pairs[key] for key in new if key in plan.claim_pairs})
            batch.where.update({_pair_texts(key, texts): number for key in new})
            needed.add(number)
        for number in sorted(needed):
            batch.calls[number].members.append(index)
    return batch


def judge_call(call: BatchCall, *, config: LLMConfig) -> DetectionResult:
    """One call for every pair of `call`. Raises LLMError on any call failure (the caller fails its turns open)."""
    return detect_with_llm(articles=list(call.articles.values()), pairs=call.pairs, config=config, now=call.now,
                           excerpts=shown_for(call.pairs, call.excerpts), claim_pairs=call.claim_pairs)


def _texts(plan: DetectionPlan) -> dict[str, ArticleText]:
    return {article.ref: article for article in plan.articles}


def _pair_texts(key: tuple[str, str], texts: Mapping[str, ArticleText]) -> PairTexts:
    return texts[key[0]], texts[key[1]]
