"""The LLM half of MACR's Reasoner: textual rules applied by the model, the provisional judgment when
no rule fits, and the final synthesis. The rule-ordering logic itself stays in reasoner.py.

- `LLMTextualJudge` applies textual rules (Condition / Resolution in words) to one pair. It asks
  once per pair for every registered textual rule of that pair's type and caches the verdicts, so
  the Reasoner (per rule) and the Observer's validation (per rule × decision) cost one call per pair,
  not per rule. Following observer.py's protocol, it raises LookupError when a rule's Condition does
  not hold; `as_reasoner_judge()` turns that into "no verdict" for reasoner.suggest.
- `provisional_judgment`: no rule fits → the model judges from its own knowledge; the case goes back
  to the Observer as a `FeedbackCase` (with the principle the model says it used).
- `synthesize`: combine the local judgments into the final answer / winner, a proposed edit, an
  explanation naming the rules, and a confidence.

Failures are LLMError and propagate: the pipeline turns them into "no suggestion, because …".
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.llm import LLMConfig, with_max_items
from agents.macr.calls import CallMeter, json_call
from agents.macr.prompts import (
    APPLY_RULES_SCHEMA,
    APPLY_RULES_SCHEMA_NAME,
    APPLY_RULES_SYSTEM,
    CANNOT_TELL,
    PROVISIONAL_SCHEMA,
    PROVISIONAL_SCHEMA_NAME,
    PROVISIONAL_SYSTEM,
    SYNTHESIS_SCHEMA_NAME,
    SYNTHESIS_SYSTEM,
    date_line,
    quote_sources,
    synthesis_schema,
)
from agents.macr.reasoner import suggest
from agents.macr.rules import ConflictPair, Rule
from agents.types import ArticleText

PROVISIONAL_RULE_ID = "llm-provisional"
# A judgment no validated rule backs is worth at most this much confidence.
PROVISIONAL_MAX_CONFIDENCE = 0.5

# Manual textual rules for the conflict natures the Analyzer names (the product's induced rules come
# from staff decisions through induction.py; these seed the evaluation and a knowledge base with none).
SEED_TEXTUAL_RULES: tuple[Rule, ...] = (
    Rule(id="other-period-statement-loses", type="temporal", origin="manual", kind="textual", priority=15,
         condition="one statement places the fact in a period that has not started yet or has already ended at the "
         "current date, and the other states it without such a limit or for a period including the current date",
         resolution="the statement that holds at the current date wins"),
    Rule(id="different-entities-both-right", type="ambiguity", origin="manual", kind="textual", priority=15,
         condition="the two sources describe different entities (people, places, organisations or things) that "
         "share a name",
         resolution="both are right about their own entity: no single winner (cannot tell); keep both answers"),
    Rule(id="corroborated-statement-wins", type="misinformation", origin="manual", kind="textual", priority=35,
         condition="one statement is supported by the reference context C0 or by more of the other sources than the "
         "other statement is",
         resolution="the better-corroborated statement wins"),
    Rule(id="primary-source-wins", type="authority", origin="manual", kind="textual", priority=35,
         condition="one source is an official or primary document (a policy, a register, the entity's own "
         "publication) and the other a secondary account (news story, blog, narrative)",
         resolution="the official or primary source wins"),
)


def _pair_prompt(*, pair: ConflictPair, now: dt.date, question: str, background: str) -> list[str]:
    parts = [date_line(now)]
    if question:
        parts.append(f"Question the sources were retrieved for: {question}")
    parts.append(f"Conflict type: {pair.type}")
    parts.append(quote_sources(list(pair.articles)))
    for article in pair.articles:
        if pair.snippets.get(article.ref):
            parts.append(f'Conflicting statement of {article.ref}: "{pair.snippets[article.ref]}"')
    if background:
        parts.append("Other evidence (answers given by the other sources alone):\n" + background)
    return parts


def _winner(text: str, pair: ConflictPair) -> tuple[bool, str | None]:
    """(valid, winner): a ref of the pair, None for "cannot tell"/"both", invalid otherwise."""
    value = text.strip()
    if value in pair.refs:
        return True, value
    if value.lower() in (CANNOT_TELL, "both", "neither", "none", ""):
        return True, None
    return False, None


@dataclass
class LLMTextualJudge:
    """Applies textual rules with the LLM; one call per (pair, type, date) for all registered rules."""

    config: LLMConfig
    rules: list[Rule] = field(default_factory=list)
    meter: CallMeter = field(default_factory=CallMeter)
    question: str = ""
    background: str = ""
    invalid_verdicts: int = 0
    # (refs, type, now) → {rule id: (holds, winner)}
    _cache: dict[tuple, dict[str, tuple[bool, str | None]]] = field(default_factory=dict, repr=False)

    def register(self, rules: Sequence[Rule]) -> None:
        known = {rule.id for rule in self.rules}
        self.rules.extend(rule for rule in rules if not rule.is_executable and rule.id not in known)

    def __call__(self, rule: Rule, pair: ConflictPair, now: dt.date) -> str | None:
        holds, winner = self.verdict(rule, pair, now)
        if not holds:
            raise LookupError(f"condition of {rule.id} does not hold")
        return winner

    def as_reasoner_judge(self):
        """The reasoner's protocol: a winner, or None for both "cannot tell" and "does not apply"."""
        return lambda rule, pair, now: self.verdict(rule, pair, now)[1]

    def applied_without_winner(self, pair: ConflictPair, now: dt.date) -> list[str]:
        """Ids of textual rules whose Condition held on this pair but whose Resolution named no side."""
        cached = self._cache.get(self._key(pair, now), {})
        return [rule_id for rule_id, (holds, winner) in cached.items() if holds and winner is None]

    def verdict(self, rule: Rule, pair: ConflictPair, now: dt.date) -> tuple[bool, str | None]:
        if rule.is_executable or not rule.matches_type(pair.type):
            return False, None
        self.register([rule])
        cached = self._cache.setdefault(self._key(pair, now), {})
        if rule.id not in cached:
            missing = [r for r in self.rules if r.matches_type(pair.type) and r.id not in cached]
            cached.update(self._ask(pair=pair, now=now, rules=missing))
        return cached.get(rule.id, (False, None))

    @staticmethod
    def _key(pair: ConflictPair, now: dt.date) -> tuple:
        return (pair.refs, pair.type, now, tuple(sorted(pair.snippets.items())))

    def _ask(self, *, pair: ConflictPair, now: dt.date, rules: Sequence[Rule]) -> dict[str, tuple[bool, str | None]]:
        listing = "\n".join(
            f"- rule_id: {rule.id}\n  Condition: {rule.condition}\n  Resolution: {rule.resolution}" for rule in rules
        )
        user = "\n\n".join(_pair_prompt(pair=pair, now=now, question=self.question, background=self.background)
                           + ["Rules to apply (one verdict per rule_id):\n" + listing])
        parsed = json_call(meter=self.meter, step="reasoner_rules", config=self.config, system=APPLY_RULES_SYSTEM,
                           user=user, schema=with_max_items(APPLY_RULES_SCHEMA, "verdicts", len(rules)),
                           schema_name=APPLY_RULES_SCHEMA_NAME)
        wanted = {rule.id for rule in rules}
        verdicts: dict[str, tuple[bool, str | None]] = {rule_id: (False, None) for rule_id in wanted}
        seen: set[str] = set()
        for item in parsed["verdicts"]:
            rule_id = item["rule_id"].strip()
            if rule_id not in wanted or rule_id in seen:
                self.invalid_verdicts += 1
                continue
            seen.add(rule_id)
            if not item["holds"]:
                continue
            valid, winner = _winner(item["winner"], pair)
            if not valid:
                # A side the pair does not have: the verdict is not believed, the rule is not applied.
                self.invalid_verdicts += 1
                continue
            verdicts[rule_id] = (True, winner)
        return verdicts


@dataclass(frozen=True)
class FeedbackCase:
    """A conflict no rule covered, with the model's provisional judgment: material for the next induction."""

    pair: ConflictPair
    now: dt.date
    question: str
    provisional_winner: str | None
    reasoning: str
    principle_condition: str
    principle_resolution: str


@dataclass(frozen=True)
class LocalJudgment:
    refs: tuple[str, str]
    type: str
    winner: str | None
    rules: tuple[str, ...]
    explanation: str
    provisional: bool = False
    confidence: float = 0.0


def provisional_judgment(
    *, pair: ConflictPair, now: dt.date, config: LLMConfig, meter: CallMeter, question: str = "", background: str = ""
) -> tuple[LocalJudgment, FeedbackCase]:
    user = "\n\n".join(_pair_prompt(pair=pair, now=now, question=question, background=background))
    parsed = json_call(meter=meter, step="reasoner_provisional", config=config, system=PROVISIONAL_SYSTEM, user=user,
                       schema=PROVISIONAL_SCHEMA, schema_name=PROVISIONAL_SCHEMA_NAME)
    valid, winner = _winner(parsed["winner"], pair)
    reasoning = parsed["reasoning"].strip()
    if not valid:
        winner, reasoning = None, f"the model named a side the pair does not have ({parsed['winner']!r}); cannot tell"
    judgment = LocalJudgment(
        refs=pair.refs, type=pair.type, winner=winner, rules=(PROVISIONAL_RULE_ID,),
        explanation=f"No rule applies; provisional judgment from the model's own knowledge: {reasoning}",
        provisional=True, confidence=PROVISIONAL_MAX_CONFIDENCE if winner else 0.0,
    )
    feedback = FeedbackCase(
        pair=pair, now=now, question=question, provisional_winner=winner, reasoning=reasoning,
        principle_condition=parsed["principle_condition"].strip(),
        principle_resolution=parsed["principle_resolution"].strip(),
    )
    return judgment, feedback


def judge_pair(
    *,
    pair: ConflictPair,
    now: dt.date,
    rules: Sequence[Rule],
    judge: LLMTextualJudge | None,
    config: LLMConfig | None,
    meter: CallMeter,
    question: str = "",
    background: str = "",
) -> tuple[LocalJudgment, FeedbackCase | None]:
    """Rules first (executable in code, textual by the LLM); no rule fits → provisional LLM judgment.

    Without an LLM (`config` None) only executable rules run and "no rule" stays "cannot tell".
    """
    if judge is not None:
        judge.register(rules)
    suggestion = suggest(
        a=pair.a, b=pair.b, conflict_type=pair.type, now=now, rules=rules, snippets=pair.snippets,
        textual_judge=judge.as_reasoner_judge() if judge is not None else None,
    )
    if suggestion.rules:
        return LocalJudgment(refs=pair.refs, type=pair.type, winner=suggestion.winner, rules=suggestion.rules,
                             explanation=suggestion.explanation, confidence=suggestion.confidence), None
    undecided = judge.applied_without_winner(pair, now) if judge is not None else []
    if undecided:
        return LocalJudgment(
            refs=pair.refs, type=pair.type, winner=None, rules=tuple(undecided),
            explanation="Cannot tell a single winner by rule " + ", ".join(undecided) + ".",
        ), None
    if config is None:
        return LocalJudgment(refs=pair.refs, type=pair.type, winner=None, rules=(),
                             explanation=suggestion.explanation), None
    return provisional_judgment(pair=pair, now=now, config=config, meter=meter, question=question, background=background)


@dataclass(frozen=True)
class Synthesis:
    answer: str
    winner: str | None
    proposed_edit: str | None
    delete_loser: bool
    explanation: str
    confidence: float


class SynthesisError(ValueError):
    """The synthesis named a focus side that does not exist: not believed, no suggestion."""


def synthesize(
    *,
    question: str,
    sources: Sequence[ArticleText],
    answers: dict[str, str],
    judgments: Sequence[LocalJudgment],
    now: dt.date,
    config: LLMConfig,
    meter: CallMeter,
    focus: tuple[str, str] | None = None,
) -> Synthesis:
    lines = []
    for judgment in judgments:
        verdict = judgment.winner or CANNOT_TELL
        origin = "provisional" if judgment.provisional else "rules " + ", ".join(judgment.rules) if judgment.rules else "no rule"
        lines.append(f"- {judgment.refs[0]} vs {judgment.refs[1]} ({judgment.type}): {verdict} [{origin}] — {judgment.explanation}")
    parts = [
        date_line(now), f"Question: {question}", "Sources:", quote_sources(sources),
        "Answer given by each source alone:\n" + "\n".join(f"- {ref}: {text}" for ref, text in answers.items()),
        "Local judgments:\n" + ("\n".join(lines) if lines else "(no conflicting pairs found)"),
    ]
    if focus:
        parts.append(f"Focus sources (say which is right): {focus[0]} and {focus[1]}")
    parsed = json_call(meter=meter, step="synthesis", config=config, system=SYNTHESIS_SYSTEM, user="\n\n".join(parts),
                       schema=synthesis_schema(focus), schema_name=SYNTHESIS_SCHEMA_NAME)
    winner: str | None = None
    if focus:
        raw = parsed["winner"].strip()
        if raw in focus:
            winner = raw
        elif raw.lower() not in (CANNOT_TELL, "both", "neither", "none", ""):
            raise SynthesisError(f"the synthesis named {raw!r}, which is not one of {list(focus)}")
    edit = parsed["proposed_edit"].strip()
    confidence = parsed["confidence"]
    return Synthesis(
        answer=parsed["answer"].strip(),
        winner=winner,
        proposed_edit=edit if edit and edit.upper() != "DELETE" else None,
        delete_loser=edit.upper() == "DELETE",
        explanation=parsed["explanation"].strip(),
        confidence=min(1.0, max(0.0, float(confidence))),
    )


def source_background(*, answers: dict[str, str], exclude: Sequence[str]) -> str:
    return "\n".join(f"- {ref}: {text}" for ref, text in answers.items() if ref not in exclude)
