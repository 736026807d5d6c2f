"""MACR end to end over plain data: assessment → retrieval → Analyzer → Reasoner → synthesis.

`run_macr` answers a question from sources that may contradict each other and, when a `focus` pair
is given (the product's conflict), says which of the two is right with a proposed edit. Variants for
the evaluation: `use_kar=False` skips knowledge assessment & retrieval (no C₀); `reasoner="cot"`
replaces the Analyzer/Reasoner agents with one chain-of-thought call over C₀ and the sources.

No suggestion is better than a wrong one: any LLM failure (LLMError) or an answer that cannot be
believed stops the run with `failure` saying which step failed and why; `suggestion` and `answer`
are then None. The caller records the reason and shows no suggestion.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.llm import LLMConfig, LLMError
from agents.macr.analyzer import Analysis, analyze
from agents.macr.assessment import DEFAULT_SAMPLES, DEFAULT_THRESHOLD, Assessment, assess_knowledge
from agents.macr.calls import CallMeter, json_call
from agents.macr.entropy import Embed
from agents.macr.prompts import (
    CANNOT_TELL,
    COT_SCHEMA,
    COT_SCHEMA_NAME,
    COT_SYSTEM,
    SubjectHint,
    date_line,
    quote_sources,
)
from agents.macr.reasoner import proposed_edit
from agents.macr.reasoning import (
    PROVISIONAL_MAX_CONFIDENCE,
    FeedbackCase,
    LLMTextualJudge,
    LocalJudgment,
    SynthesisError,
    judge_pair,
    source_background,
    synthesize,
)
from agents.macr.retrieval import Retrieve, RetrievedKnowledge, retrieve_knowledge
from agents.macr.rules import ConflictPair, Rule
from agents.types import ArticleText, Suggestion, pair_key

REASONERS = ("agents", "cot")


@dataclass
class MACRRun:
    answer: str | None = None
    suggestion: Suggestion | None = None
    delete_loser: bool = False
    failure: str | None = None  # "<step>: <reason>" when the run stopped; nothing else is then believed
    assessment: Assessment | None = None
    knowledge: RetrievedKnowledge | None = None
    analysis: Analysis | None = None
    judgments: list[LocalJudgment] = field(default_factory=list)
    feedback: list[FeedbackCase] = field(default_factory=list)
    meter: CallMeter = field(default_factory=CallMeter)

    @property
    def llm_calls(self) -> int:
        return self.meter.calls


def run_macr(
    *,
    question: str,
    sources: Sequence[ArticleText],
    now: dt.date,
    config: LLMConfig,
    rules: Sequence[Rule],
    embed: Embed | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    retrieve: Retrieve | None = None,
    subject: SubjectHint | None = None,
    focus: tuple[str, str] | None = None,
    focus_type: str = "other",
    use_kar: bool = True,
    reasoner: str = "agents",
    samples: int = DEFAULT_SAMPLES,
    logprobs: bool = True,
) -> MACRRun:
    if reasoner not in REASONERS:
        raise ValueError(f"reasoner must be one of {REASONERS}")
    if use_kar and embed is None:
        raise ValueError("knowledge assessment needs an `embed` callable")
    by_ref = {source.ref: source for source in sources}
    if focus is not None and not all(ref in by_ref for ref in focus):
        raise ValueError(f"focus {focus} is not a pair of the sources")
    run = MACRRun()
    step = "assessment"
    try:
        if use_kar:
            run.assessment = assess_knowledge(
                question=question, now=now, config=config, embed=embed, threshold=threshold, subject=subject,
                samples=samples, logprobs=logprobs, meter=run.meter,
            )
            step = "retrieval"
            run.knowledge = retrieve_knowledge(
                question=question, assessment=run.assessment, now=now, config=config, retrieve=retrieve,
                exclude_refs=list(focus or ()), subject=subject, meter=run.meter,
            )
        reference = [run.knowledge.reference] if run.knowledge and run.knowledge.reference else []
        all_sources = reference + list(sources)

        if reasoner == "cot":
            step = "cot"
            parts = [date_line(now), "Sources:", quote_sources(all_sources), f"Question: {question}"]
            if focus:
                parts.append(f"The sources {focus[0]} and {focus[1]} contradict each other. Instead of answering the "
                             f"question, answer with the ref of the one that is right at the current date, or "
                             f"\"{CANNOT_TELL}\".")
            user = "\n\n".join(parts)
            parsed = json_call(meter=run.meter, step="cot", config=config, system=COT_SYSTEM, user=user,
                               schema=COT_SCHEMA, schema_name=COT_SCHEMA_NAME)
            run.answer = parsed["answer"].strip()
            return run

        step = "analyzer"
        run.analysis = analyze(question=question, sources=all_sources, now=now, config=config, meter=run.meter)
        answers = {ref: answer.answer for ref, answer in run.analysis.answers.items()}

        step = "reasoner"
        judge = LLMTextualJudge(config=config, meter=run.meter, question=question)
        all_by_ref = {source.ref: source for source in all_sources}
        pairs = [
            ConflictPair(a=all_by_ref[t.refs[0]], b=all_by_ref[t.refs[1]], type=t.type, snippets=t.snippets)
            for t in run.analysis.triplets
        ]
        focus_key = pair_key(*focus) if focus else None
        if focus_key and focus_key not in {pair.refs for pair in pairs}:
            # The detector flagged this pair even if the Analyzer's answers did not clash on this
            # question: judge it anyway, with the sentences each side answered from as snippets.
            snippets = {ref: run.analysis.answers[ref].quote for ref in focus_key if run.analysis.answers[ref].quote}
            pairs.append(ConflictPair(a=by_ref[focus_key[0]], b=by_ref[focus_key[1]], type=focus_type, snippets=snippets))
        for pair in pairs:
            judge.background = source_background(answers=answers, exclude=pair.refs)
            judgment, feedback = judge_pair(pair=pair, now=now, rules=rules, judge=judge, config=config, meter=run.meter,
                                            question=question, background=judge.background)
            run.judgments.append(judgment)
            if feedback is not None:
                run.feedback.append(feedback)

        step = "synthesis"
        synthesis = synthesize(question=question, sources=all_sources, answers=answers, judgments=run.judgments,
                               now=now, config=config, meter=run.meter, focus=focus_key)
        run.answer = synthesis.answer
        if focus_key:
            focus_pair = next(pair for pair in pairs if pair.refs == focus_key)
            focus_judgment = next(j for j in run.judgments if j.refs == focus_key)
            run.suggestion, run.delete_loser = _focus_suggestion(
                pair=focus_pair, judgment=focus_judgment, synthesis=synthesis, judgments=run.judgments
            )
        return run
    except LLMError as error:
        return _failed(run, f"{step}: LLM {error.reason}" + (f" ({error.detail})" if error.detail else ""))
    except SynthesisError as error:
        return _failed(run, f"{step}: {error}")


def _failed(run: MACRRun, reason: str) -> MACRRun:
    run.failure = reason
    run.answer = None
    run.suggestion = None
    run.delete_loser = False
    return run


def _focus_suggestion(*, pair: ConflictPair, judgment: LocalJudgment, synthesis, judgments) -> tuple[Suggestion, bool]:
    """The winner of the focus pair: validated rules decide; the synthesis may only agree with them.

    - rules named a winner: it stands if the synthesis agrees; if the synthesis disagrees → cannot tell;
    - rules applied but could not tell: cannot tell (the model does not overrule a rule's abstention);
    - no rule (provisional): the synthesis decides, with confidence capped at PROVISIONAL_MAX_CONFIDENCE.
    """
    related_rules = tuple(dict.fromkeys(
        rule for j in judgments if set(j.refs) & set(pair.refs) for rule in j.rules
    ))
    rule_based = bool(judgment.rules) and not judgment.provisional
    if rule_based and judgment.winner is not None and synthesis.winner != judgment.winner:
        winner, confidence = None, 0.0
        explanation = (f"Cannot tell: rule(s) {', '.join(judgment.rules)} pick {judgment.winner} but the synthesis "
                       f"of all evidence says {synthesis.winner or 'cannot tell'}. {judgment.explanation}")
    elif rule_based:
        winner, confidence = judgment.winner, judgment.confidence if judgment.winner else 0.0
        explanation = f"{synthesis.explanation} {judgment.explanation}".strip()
    else:
        winner = synthesis.winner
        confidence = min(synthesis.confidence, PROVISIONAL_MAX_CONFIDENCE) if winner else 0.0
        explanation = synthesis.explanation
    explanation += " Rules used: " + (", ".join(related_rules) if related_rules else "none") + "."
    if winner is None:
        return Suggestion(refs=pair.refs, winner=None, explanation=explanation, rules=related_rules, confidence=0.0), False
    loser = pair.b if winner == pair.a.ref else pair.a
    edit = proposed_edit(loser=loser, winner_ref=winner, snippets=pair.snippets) or synthesis.proposed_edit
    return Suggestion(refs=pair.refs, winner=winner, explanation=explanation, rules=related_rules,
                      confidence=round(confidence, 4), proposed_edit=edit), synthesis.delete_loser and edit is None


@dataclass
class ConflictSuggestion:
    """What the product stores for one conflict: a suggestion, or None with the reason why not."""

    suggestion: Suggestion | None
    failure: str | None
    delete_loser: bool
    feedback: list[FeedbackCase]
    llm_calls: int


def suggest_for_conflict(
    *,
    a: ArticleText,
    b: ArticleText,
    conflict_type: str,
    question: str,
    now: dt.date,
    config: LLMConfig,
    rules: Sequence[Rule],
    embed: Embed,
    threshold: float = DEFAULT_THRESHOLD,
    retrieve: Retrieve | None = None,
    business: str = "",
    other_articles: Sequence[ArticleText] = (),
) -> ConflictSuggestion:
    """Full MACR on one conflict of the product: `a` vs `b` (plus the turn's other articles as evidence).

    `question` is the customer question of an occurrence; `retrieve(question, exclude_refs)` is the
    knowledge-base search (the pair is excluded by the pipeline); the subject hint is the business
    name and the articles' titles.
    """
    sources = [a, b, *[article for article in other_articles if article.ref not in (a.ref, b.ref)]]
    subject = SubjectHint(business=business, titles=tuple(article.title for article in sources if article.title))
    run = run_macr(
        question=question, sources=sources, now=now, config=config, rules=rules, embed=embed, threshold=threshold,
        retrieve=retrieve, subject=subject, focus=(a.ref, b.ref), focus_type=conflict_type,
    )
    return ConflictSuggestion(suggestion=run.suggestion, failure=run.failure, delete_loser=run.delete_loser,
                              feedback=run.feedback, llm_calls=run.llm_calls)
