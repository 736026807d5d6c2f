"""The JSON API for chatbots (django-ninja; OpenAPI at /api/v1/openapi.json).

A token acts for one knowledge base; every ref and id resolves inside it.
"""
from __future__ import annotations

import datetime as dt
from typing import Literal

from django.db import InterfaceError, OperationalError
from django.http import Http404
from ninja import Field, NinjaAPI, Query, Schema
from ninja.security import HttpBearer

from conflicts import selectors, services
from conflicts.models import STATUS_ALIASES, AnswerMode, ConflictStatus, DetectionOutcome, Turn
from conflicts.services.turns import RetrievedRef
from kbreview.middleware import database_unavailable_response


class TokenAuth(HttpBearer):
    def authenticate(self, request, token):
        api_token = services.api_token_authenticate(secret=token)
        if api_token is None:
            return None
        request.knowledge_base = api_token.knowledge_base
        return api_token


api = NinjaAPI(title="kbreview API", version="1", auth=TokenAuth(), urls_namespace="api")


class RetrievedIn(Schema):
    ref: str = Field(min_length=1, max_length=200)
    rank: int = Field(ge=1)


class TurnIn(Schema):
    external_id: str = Field(min_length=1, max_length=200)
    question: str = Field(min_length=1, max_length=10_000)
    retrieved: list[RetrievedIn] = Field(default_factory=list, max_length=200)
    reply: str | None = Field(default=None, max_length=100_000)
    sent_at: dt.datetime | None = None


class TurnAccepted(Schema):
    turn_id: int
    detection: Literal["queued", "skipped"]


class ReplyIn(Schema):
    reply: str = Field(min_length=1, max_length=100_000)
    sent_at: dt.datetime | None = None


class ReplyOut(Schema):
    turn_id: int
    cited: list[str]


class ConflictOut(Schema):
    id: int
    refs: list[str]
    status: str
    type: str
    explanation: str
    times_seen: int
    times_cited: int
    recurred_after_review: bool
    first_seen: dt.datetime
    last_seen: dt.datetime


class DetectionOut(Schema):
    outcome: str
    reason: str
    latency_ms: int | None
    llm_calls: int
    conflicts_found: int


class TurnOut(Schema):
    turn_id: int
    external_id: str
    question: str
    reply: str
    detection: DetectionOut | None
    conflicts: list[ConflictOut]


class AnswerIn(Schema):
    question: str = Field(min_length=1, max_length=10_000)
    mode: AnswerMode | None = Field(default=None, description="default: the knowledge base's answer mode")
    external_id: str | None = Field(default=None, min_length=1, max_length=200)


class AnswerArticle(Schema):
    ref: str
    title: str
    score: float
    similarity: float | None


class AnswerOut(Schema):
    turn_id: int
    reply: str
    citations: list[str]
    articles: list[AnswerArticle]
    mode: AnswerMode
    answer_source: Literal["igd_context", "igd_memory", "igd_user", "plain"]


class ErrorOut(Schema):
    detail: str | list


def _conflict_out(conflict) -> dict:
    return {
        "id": conflict.pk,
        "refs": sorted([conflict.article_low.external_ref, conflict.article_high.external_ref]),
        "status": conflict.status,
        "type": conflict.type,
        "explanation": conflict.explanation,
        "times_seen": conflict.times_seen,
        "times_cited": conflict.times_cited,
        "recurred_after_review": conflict.recurred_after_review,
        "first_seen": conflict.first_seen,
        "last_seen": conflict.last_seen,
    }


def _turn(request, external_id: str) -> Turn:
    try:
        return selectors.turn_get(knowledge_base=request.knowledge_base, external_id=external_id)
    except Turn.DoesNotExist:
        raise Http404(f"No turn with external_id {external_id!r}") from None


# Ninja would answer these itself (a traceback under DEBUG); the project's 503 answer applies here too.
api.add_exception_handler(OperationalError, database_unavailable_response)
api.add_exception_handler(InterfaceError, database_unavailable_response)


@api.exception_handler(services.UnknownArticleRefs)
def _unknown_refs(request, exc: services.UnknownArticleRefs):
    detail = [{"loc": ["body", "retrieved"], "msg": f"unknown article refs: {', '.join(exc.refs)}", "refs": exc.refs}]
    return api.create_response(request, {"detail": detail}, status=422)


@api.post("/turns", response={200: TurnAccepted, 202: TurnAccepted, 422: ErrorOut})
def turn_create(request, payload: TurnIn):
    """Report a turn at retrieval time (detection starts beside your answer generation), or afterwards with its reply."""
    turn, created = services.turn_report(
        knowledge_base=request.knowledge_base,
        external_id=payload.external_id,
        question=payload.question,
        retrieved=[RetrievedRef(ref=r.ref, rank=r.rank) for r in payload.retrieved],
        reply=payload.reply,
        sent_at=payload.sent_at,
    )
    detection = "skipped" if turn.detection.outcome == DetectionOutcome.SKIPPED else "queued"
    return (202 if created else 200), {"turn_id": turn.pk, "detection": detection}


@api.post("/turns/{external_id}/reply", response={200: ReplyOut, 404: ErrorOut})
def turn_reply(request, external_id: str, payload: ReplyIn):
    """Record the reply that was sent and the articles it cites ([[ref]] tags)."""
    turn = services.turn_reply_record(turn=_turn(request, external_id), reply=payload.reply, sent_at=payload.sent_at)
    cited = sorted(turn.usages.filter(cited=True).values_list("article__external_ref", flat=True))
    return 200, {"turn_id": turn.pk, "cited": cited}


@api.get("/turns/{external_id}", response={200: TurnOut, 404: ErrorOut})
def turn_detail(request, external_id: str):
    """The detection outcome and the conflicts found for one turn."""
    turn = _turn(request, external_id)
    run = getattr(turn, "detection", None)
    return 200, {
        "turn_id": turn.pk,
        "external_id": turn.external_id,
        "question": turn.question,
        "reply": turn.reply,
        "detection": None
        if run is None
        else {
            "outcome": run.outcome,
            "reason": run.reason,
            "latency_ms": run.latency_ms,
            "llm_calls": run.llm_calls,
            "conflicts_found": run.conflicts_found,
        },
        "conflicts": [_conflict_out(c) for c in selectors.conflicts_for_turn(turn=turn)],
    }


@api.post("/answer", response={200: AnswerOut})
def answer(request, payload: AnswerIn):
    """The built-in answer path: hybrid search, rerank, answer with citations; detection runs beside it."""
    result = services.answer_question(
        knowledge_base=request.knowledge_base, question=payload.question, external_id=payload.external_id, mode=payload.mode
    )
    return 200, {
        "turn_id": result.turn.pk,
        "reply": result.reply,
        "citations": result.citations,
        "articles": [
            {"ref": h.external_ref, "title": h.title, "score": h.score, "similarity": h.similarity} for h in result.hits
        ],
        "mode": result.mode,
        "answer_source": f"igd_{result.igd.result.winner}" if result.igd else "plain",
    }


@api.get("/conflicts", response={200: list[ConflictOut]})
def conflict_list(
    request,
    status: Literal["open", "processed", "resolved", "dismissed"] | None = None,
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0),
):
    """Conflicts of this knowledge base, most impactful first. `resolved` (the console's word) = `processed`."""
    status = STATUS_ALIASES.get(status, status)
    conflicts = selectors.conflict_list(knowledge_base=request.knowledge_base, status=status)
    return 200, [_conflict_out(c) for c in conflicts[offset : offset + limit]]
