"""The built-in answer path: retrieve, rerank, answer — with conflict detection running beside it."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from django.utils import timezone

from agents.answer import Passage, extractive_answer, generate_answer
from agents.llm import LLMError, llm_config_for
from articles.models import KnowledgeBase
from articles.selectors import SearchHit, search
from conflicts.models import Turn, TurnSource
from conflicts.services.turns import RetrievedRef, turn_reply_record, turn_report


@dataclass
class AnswerResponse:
    turn: Turn
    reply: str
    citations: list[str]
    hits: list[SearchHit] = field(default_factory=list)
    answer_error: str = ""


def rerank(hits: list[SearchHit]) -> list[SearchHit]:
    """Order by embedding similarity of the best chunk to the question (fusion decides what is retrieved,
    similarity what the answer reads first). Kept apart from detection, which sees every retrieved article."""
    return sorted(hits, key=lambda h: (-(h.similarity or 0.0), -h.score))


def answer_question(
    *, knowledge_base: KnowledgeBase, question: str, external_id: str | None = None, mode: str = "strict"
) -> AnswerResponse:
    hits = rerank(search(knowledge_base=knowledge_base, question=question))
    # Recording the turn commits before generation starts, so detection runs in parallel with it.
    turn, _ = turn_report(
        knowledge_base=knowledge_base,
        external_id=external_id or f"answer-{uuid.uuid4().hex}",
        question=question,
        retrieved=[RetrievedRef(ref=h.external_ref, rank=i) for i, h in enumerate(hits, 1)],
        source=TurnSource.ANSWER,
    )
    passages = [Passage(ref=h.external_ref, title=h.title, text=h.chunk_text) for h in hits]
    answer_error = ""
    try:
        answer = generate_answer(question=question, passages=passages, config=llm_config_for("answer"))
    except LLMError as exc:
        # The customer still gets the best passage rather than an error.
        answer_error = f"LLM {exc}; answered extractively"
        answer = extractive_answer(question=question, passages=passages)
    turn = turn_reply_record(turn=turn, reply=answer.reply, sent_at=timezone.now())
    return AnswerResponse(turn=turn, reply=answer.reply, citations=answer.citations, hits=hits, answer_error=answer_error)
