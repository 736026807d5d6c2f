"""MACR Observer, the generation half: the LLM proposes candidate textual rules from staff decisions.

The verification half is observer.py: every candidate is kept only if it validates on held-out
decisions (coverage / support). `induce_with_llm` wires the two together:

1. observer.split_decisions → training / validation (deterministic);
2. the LLM reads the training decisions in batches (pairs + staff outcomes) and proposes rules
   ⟨Type, Condition, Resolution⟩; feedback cases (conflicts no rule covered, with the principle the
   model's provisional judgment used) are folded in as candidates of their own and shown to the
   generator as cases the rule base misses;
3. observer.validate_rules on the validation decisions, applying textual candidates with the LLM
   judge (one call per validation decision for all textual candidates, see reasoning.py).

Candidates are plain text from the model: empty, duplicate or ref-naming ones are discarded before
anything is spent validating them.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from agents.llm import LLMConfig
from agents.macr.calls import CallMeter, json_call
from agents.macr.observer import (
    DEFAULT_MIN_COVERAGE,
    DEFAULT_MIN_SUPPORT,
    DEFAULT_VALIDATION_SHARE,
    Decision,
    InductionResult,
    induce_rules,
)
from agents.macr.prompts import INDUCTION_SCHEMA, INDUCTION_SCHEMA_NAME, INDUCTION_SYSTEM, quote_source
from agents.macr.reasoning import FeedbackCase, LLMTextualJudge
from agents.macr.rules import ANY_TYPE, Rule

DEFAULT_BATCH_SIZE = 12
INDUCED_PRIORITY = 35  # between the specific executable templates (10–30) and "newer wins" (40)
MAX_EXCERPT_CHARS = 600


def induced_rule_id(*, type: str, condition: str, resolution: str) -> str:  # noqa: A002 - the rule's field
    """A stable id from the rule's words, so the same rule induced twice is one rule."""
    text = "|".join(" ".join(part.lower().split()) for part in (type, condition, resolution))
    return "induced-" + hashlib.sha256(text.encode()).hexdigest()[:10]


def _excerpt(text: str) -> str:
    return text if len(text) <= MAX_EXCERPT_CHARS else text[:MAX_EXCERPT_CHARS] + " [...]"


def demonstration_text(decision: Decision, index: int) -> str:
    parts = [f"Demonstration {index} (decided on {decision.decided_on.isoformat()}, conflict type: {decision.type})"]
    for article in (decision.a, decision.b):
        shown = article.__class__(ref=article.ref, title=article.title, body=_excerpt(article.body),
                                  updated_at=article.updated_at, source=article.source)
        parts.append(quote_source(shown))
        if decision.snippets.get(article.ref):
            parts.append(f'Conflicting statement of {article.ref}: "{decision.snippets[article.ref]}"')
    parts.append(f"Staff outcome: {decision.outcome}")
    return "\n".join(parts)


def feedback_text(case: FeedbackCase, index: int) -> str:
    return (
        f"Uncovered case {index} (type {case.pair.type}): {case.pair.a.ref} vs {case.pair.b.ref}; the model judged "
        f"{case.provisional_winner or 'cannot tell'} using: if {case.principle_condition} then {case.principle_resolution}"
    )


def _mentions_a_ref(text: str, refs: set[str]) -> bool:
    return any(re.search(rf"(?<![\w-]){re.escape(ref)}(?![\w-])", text) for ref in refs if ref)


def candidate_from_words(*, type: str, condition: str, resolution: str, known_types: set[str]) -> Rule | None:  # noqa: A002
    type_ = type.strip() or ANY_TYPE
    condition, resolution = " ".join(condition.split()), " ".join(resolution.split())
    if not condition or not resolution:
        return None
    if type_ != ANY_TYPE and known_types and type_ not in known_types:
        type_ = ANY_TYPE  # a type no decision has would never be covered: widen rather than waste it
    return Rule(
        id=induced_rule_id(type=type_, condition=condition, resolution=resolution), type=type_, condition=condition,
        resolution=resolution, origin="induced", kind="textual", priority=INDUCED_PRIORITY,
    )


def generate_candidate_rules(
    *,
    decisions: Sequence[Decision],
    config: LLMConfig,
    feedback: Sequence[FeedbackCase] = (),
    batch_size: int = DEFAULT_BATCH_SIZE,
    meter: CallMeter | None = None,
) -> tuple[list[Rule], int]:
    """(candidate rules, candidates discarded before validation). Raises LLMError on a failed call."""
    meter = meter if meter is not None else CallMeter()
    known_types = {decision.type for decision in decisions}
    refs = {ref for decision in decisions for ref in decision.refs} | {
        ref for case in feedback for ref in case.pair.refs
    }
    candidates: dict[str, Rule] = {}
    discarded = 0

    def take(type_: str, condition: str, resolution: str) -> None:
        nonlocal discarded
        if _mentions_a_ref(condition + " " + resolution, refs):
            discarded += 1  # a rule about particular articles is a memorised case, not a rule
            return
        rule = candidate_from_words(type=type_, condition=condition, resolution=resolution, known_types=known_types)
        if rule is None or rule.id in candidates:
            discarded += 1
            return
        candidates[rule.id] = rule

    # Feedback principles are candidates in their own right: validation decides whether they hold.
    for case in feedback:
        take(case.pair.type, case.principle_condition, case.principle_resolution)

    uncovered = "\n".join(feedback_text(case, index) for index, case in enumerate(feedback, start=1))
    for start in range(0, len(decisions), max(1, batch_size)):
        batch = decisions[start:start + batch_size]
        parts = [demonstration_text(decision, start + offset + 1) for offset, decision in enumerate(batch)]
        if uncovered:
            parts.append("Cases the current rules did not cover:\n" + uncovered)
        parsed = json_call(meter=meter, step="induction", config=config, system=INDUCTION_SYSTEM,
                           user="\n\n".join(parts), schema=INDUCTION_SCHEMA, schema_name=INDUCTION_SCHEMA_NAME)
        for item in parsed["rules"]:
            take(item["type"], item["condition"], item["resolution"])
    return list(candidates.values()), discarded


def induce_with_llm(
    *,
    decisions: Sequence[Decision],
    candidates: Sequence[Rule],
    config: LLMConfig,
    feedback: Sequence[FeedbackCase] = (),
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    min_support: float = DEFAULT_MIN_SUPPORT,
    validation_share: float = DEFAULT_VALIDATION_SHARE,
    batch_size: int = DEFAULT_BATCH_SIZE,
    meter: CallMeter | None = None,
) -> InductionResult:
    """One induction run with LLM-generated candidates. Raises LLMError when a call fails (the run is
    then recorded as failed and the previous rule base stays active)."""
    meter = meter if meter is not None else CallMeter()
    judge = LLMTextualJudge(config=config, meter=meter)
    judge.register(candidates)

    def generate(training: Sequence[Decision]) -> list[Rule]:
        generated, _discarded = generate_candidate_rules(
            decisions=training, config=config, feedback=feedback, batch_size=batch_size, meter=meter
        )
        known = {rule.id for rule in candidates}
        fresh = [rule for rule in generated if rule.id not in known]
        judge.register(fresh)
        return fresh

    return induce_rules(
        decisions=decisions, candidates=candidates, generate_candidates=generate, min_coverage=min_coverage,
        min_support=min_support, validation_share=validation_share, judge=judge,
    )
