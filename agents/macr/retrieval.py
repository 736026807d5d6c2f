"""MACR step 2, knowledge retrieval: build the reference context C₀ and the initial answer A_init.

- Internal path (H < τ): the model writes down what it knows (key attributes, background, ancillary
  details, its knowledge cut-off) as C_int and answers from it.
- External path (H ≥ τ): C_ext comes from `retrieve(question, exclude_refs)` — the product passes a
  knowledge-base search that leaves out the conflicting articles (they are what is being judged) —
  and the model answers strictly from it. An empty retrieval gives no C₀ at all: an unrelated
  passage would only add noise to the Analyzer.

C₀ is returned as an ArticleText with ref `C0`, so the Analyzer and the rules treat it like any
other source (with `source` "model" or "external" saying where it came from).
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents.llm import LLMConfig
from agents.macr.assessment import Assessment
from agents.macr.calls import CallMeter, json_call
from agents.macr.prompts import (
    ANSWER_SCHEMA,
    ANSWER_SCHEMA_NAME,
    EXTERNAL_SYSTEM,
    INTERNAL_SCHEMA,
    INTERNAL_SCHEMA_NAME,
    INTERNAL_SYSTEM,
    SubjectHint,
    date_line,
    quote_source,
)
from agents.types import ArticleText

REFERENCE_REF = "C0"
Retrieve = Callable[[str, Sequence[str]], str]


@dataclass(frozen=True)
class RetrievedKnowledge:
    path: str  # internal | external
    initial_answer: str | None  # A_init; None when nothing was retrieved
    reference: ArticleText | None  # C₀
    knowledge_cutoff: str = ""


def internal_context(*, parsed: dict, now: dt.date) -> ArticleText:
    body = "\n".join([
        f"Key attributes: {parsed['key_attributes'].strip()}",
        f"Background: {parsed['background'].strip()}",
        f"Ancillary details: {parsed['ancillary_details'].strip()}",
        f"Knowledge cut-off: {parsed['knowledge_cutoff'].strip()}",
    ])
    return ArticleText(ref=REFERENCE_REF, title="The model's own knowledge", body=body, updated_at=None, source="model")


def retrieve_knowledge(
    *,
    question: str,
    assessment: Assessment,
    now: dt.date,
    config: LLMConfig,
    retrieve: Retrieve | None,
    exclude_refs: Sequence[str] = (),
    subject: SubjectHint | None = None,
    meter: CallMeter | None = None,
) -> RetrievedKnowledge:
    """Raises LLMError when the model's call fails."""
    meter = meter if meter is not None else CallMeter()
    hint = subject.as_text() if subject else ""
    if assessment.internal:
        user = "\n".join(part for part in (date_line(now), hint, f"Question: {question}") if part)
        parsed = json_call(meter=meter, step="retrieval", config=config, system=INTERNAL_SYSTEM, user=user,
                           schema=INTERNAL_SCHEMA, schema_name=INTERNAL_SCHEMA_NAME)
        return RetrievedKnowledge(
            path="internal",
            initial_answer=parsed["answer"].strip(),
            reference=internal_context(parsed=parsed, now=now),
            knowledge_cutoff=parsed["knowledge_cutoff"].strip(),
        )

    text = (retrieve(question, tuple(exclude_refs)) if retrieve is not None else "") or ""
    if not text.strip():
        return RetrievedKnowledge(path="external", initial_answer=None, reference=None)
    reference = ArticleText(ref=REFERENCE_REF, title="External reference", body=text.strip(), source="external")
    user = "\n\n".join(part for part in (date_line(now), hint, quote_source(reference), f"Question: {question}") if part)
    parsed = json_call(meter=meter, step="retrieval", config=config, system=EXTERNAL_SYSTEM, user=user,
                       schema=ANSWER_SCHEMA, schema_name=ANSWER_SCHEMA_NAME)
    return RetrievedKnowledge(path="external", initial_answer=parsed["answer"].strip(), reference=reference)
