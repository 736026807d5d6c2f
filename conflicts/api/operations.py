"""The API's operations: report a turn and its reply, check a retrieval before answering, read a turn's
outcome, answer with the built-in path, list conflicts."""
from __future__ import annotations

from django.http import Http404
from ninja import Query

from conflicts import selectors, services
from conflicts.api.auth import TokenAuth, TokenRateLimit
from conflicts.api.errors import FieldProblem, KbreviewApi, error_handlers_add
from conflicts.api.schemas import (
    COMMON_ERRORS,
    AnswerIn,
    AnswerOut,
    ConflictCheckOut,
    ConflictOut,
    ConflictStatusFilter,
    ErrorOut,
    ExternalId,
    MismatchOut,
    ReplyIn,
    ReplyOut,
    RetrievalCheckIn,
    RetrievedIn,
    TurnAccepted,
    TurnIn,
    TurnOut,
)
from conflicts.models import STATUS_ALIASES, DetectionOutcome, PolicyDecision, TokenScope, Turn
from conflicts.services.policy import conflict_check, reply_policy_decisions, turn_policy_decisions
from conflicts.services.turns import RetrievedRef
from kbreview.input_limits import PG_INTEGER_MAX, text_problem, url_id_problem

api = KbreviewApi(title="kbreview API", version="1", throttle=[TokenRateLimit()], urls_namespace="api")
error_handlers_add(api)
TURNS = TokenAuth(TokenScope.TURNS_WRITE)


def _conflict_out(conflict) -> dict:
    return {
        "id": conflict.pk,
        "refs": sorted(a.external_ref for a in (conflict.article_low, conflict.article_high) if a is not None),
        "status": conflict.status,
        "type": conflict.type,
        "explanation": conflict.explanation,
        "times_seen": conflict.times_seen,
        "times_cited": conflict.times_cited,
        "recurred_after_review": conflict.recurred_after_review,
        "detector": conflict.detector,
        "first_seen": conflict.first_seen,
        "last_seen": conflict.last_seen,
    }


def _turn(request, external_id: str) -> Turn:
    reason = text_problem(external_id) or url_id_problem(external_id)
    if reason:
        raise FieldProblem("path", ("external_id",), reason)
    try:
        return selectors.turn_get(knowledge_base=request.knowledge_base, external_id=external_id)
    except Turn.DoesNotExist:
        raise Http404(f"No turn with external_id {external_id!r}") from None


def _refuse_duplicate_refs(retrieved: list[RetrievedIn]) -> None:
    first_at: dict[str, int] = {}
    for index, item in enumerate(retrieved):
        earlier = first_at.setdefault(item.ref, index)
        if earlier != index:
            raise FieldProblem(
                "body", ("retrieved", index, "ref"), f"duplicate ref {item.ref!r} (also retrieved[{earlier}].ref)"
            )


@api.post("/turns", auth=TURNS, response={200: TurnAccepted, 202: TurnAccepted, 409: MismatchOut, **COMMON_ERRORS})
def turn_create(request, payload: TurnIn):
    """Report a turn at retrieval time (detection starts beside your answer generation), or afterwards with its reply.

    The same external_id with the same body again is 200 and changes nothing; with a different body, 409 naming what differs."""
    _refuse_duplicate_refs(payload.retrieved)
    check = conflict_check(knowledge_base=request.knowledge_base, refs=[r.ref for r in payload.retrieved])
    # What the policy did, written by the turn's own statement (no statement or commit of its own).
    decisions = turn_policy_decisions(knowledge_base_id=request.knowledge_base.pk, check=check, reply=payload.reply)
    turn, created = services.turn_report(
        knowledge_base=request.knowledge_base,
        external_id=payload.external_id,
        question=payload.question,
        retrieved=[RetrievedRef(ref=r.ref, rank=r.rank) for r in payload.retrieved],
        reply=payload.reply,
        sent_at=payload.sent_at,
        answer_policy=check.policy or "",
        conflict_check=check.status,
        policy_decisions=decisions,
    )
    skipped = turn.detection.outcome == DetectionOutcome.SKIPPED
    detection = (DetectionOutcome.SKIPPED if skipped else DetectionOutcome.QUEUED).value
    return (202 if created else 200), {"turn_id": turn.pk, "detection": detection, "open_conflicts": check.as_dict()}


@api.post("/retrieval-check", auth=TURNS, response={200: ConflictCheckOut, **COMMON_ERRORS})
def retrieval_check(request, payload: RetrievalCheckIn):
    """Before answering: the open conflicts among these retrieved refs and what the knowledge base's answer policy
    does about them. Records nothing. Refs this knowledge base does not hold have no conflicts; a ref given
    twice counts once.

    A failed look-up answers 200 with status "unknown" (answer as under "off"), never an error."""
    # A read: the same article retrieved twice (two chunks) is one article, as in a turn's check.
    refs = list(dict.fromkeys(item if isinstance(item, str) else item.ref for item in payload.retrieved))
    return 200, conflict_check(knowledge_base=request.knowledge_base, refs=refs).as_dict()


@api.post("/turns/{external_id}/reply", auth=TURNS, response={200: ReplyOut, 404: ErrorOut, 409: MismatchOut, **COMMON_ERRORS})
def turn_reply(request, external_id: ExternalId, payload: ReplyIn):
    """Record the reply that was sent and the articles it cites ([[ref]] tags).

    The same reply again changes nothing; a different one is 409 unless `replaces` is true."""
    turn = _turn(request, external_id)
    # Under caveat, what the policy did is written in the reply's own transaction (no commit of its own).
    turn = services.turn_reply_record(
        turn=turn, reply=payload.reply, sent_at=payload.sent_at, replaces=payload.replaces,
        policy_decisions=reply_policy_decisions(turn=turn, reply=payload.reply),
    )
    cited = sorted(turn.usages.filter(cited=True).values_list("article__external_ref", flat=True))
    return 200, {"turn_id": turn.pk, "cited": cited}


@api.get("/turns/{external_id}", auth=TURNS, response={200: TurnOut, 404: ErrorOut, **COMMON_ERRORS})
def turn_detail(request, external_id: ExternalId):
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
            "batch_turns": run.batch_turns,
            "unrelated_pairs": run.unrelated_pairs,
            "known_claim_pairs": run.known_claim_pairs,
            "llm_confirmed": run.llm_confirmed,
            "llm_rejected": run.llm_rejected,
        },
        "conflicts": [_conflict_out(c) for c in selectors.conflicts_for_turn(turn=turn)],
        "answer_policy": turn.answer_policy or None,
        "conflict_check": turn.conflict_check or None,
        "policy_decisions": [
            {"conflict_id": d.conflict_id, "policy": d.policy, "action": d.action,
             "held_back": d.held_back.external_ref if d.held_back_id else None}
            for d in PolicyDecision.objects.filter(turn=turn).select_related("held_back").order_by("conflict_id")
        ],
    }


@api.post("/answer", auth=TokenAuth(TokenScope.ANSWER), response={200: AnswerOut, 409: MismatchOut, **COMMON_ERRORS})
def answer(request, payload: AnswerIn):
    """The built-in answer path: hybrid search, rerank, answer with citations; detection runs beside it.

    An external_id already used by another turn is 409 (its recorded reply would not be this one)."""
    if payload.external_id is not None and Turn.objects.filter(
        knowledge_base=request.knowledge_base, external_id=payload.external_id
    ).exists():
        raise services.TurnMismatch(payload.external_id, ["external_id"])
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
        "open_conflicts": result.check.as_dict(),
        "held_back": result.held_back,
        "caveat_added": result.caveat_added,
    }


@api.get("/conflicts", auth=TokenAuth(TokenScope.CONFLICTS_READ), response={200: list[ConflictOut], **COMMON_ERRORS})
def conflict_list(
    request,
    status: ConflictStatusFilter | None = None,
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=PG_INTEGER_MAX),
):
    """Conflicts of this knowledge base, most impactful first. `resolved` (the console's word) = `processed`."""
    status = STATUS_ALIASES.get(status, status)
    conflicts = selectors.conflict_list(knowledge_base=request.knowledge_base, status=status)
    return 200, [_conflict_out(c) for c in conflicts[offset : offset + limit]]
