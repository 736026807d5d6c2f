"""The JSON API for chatbots (django-ninja; OpenAPI at /api/v1/openapi.json).

A token acts for one knowledge base; every ref and id resolves inside it. Every value the database
cannot hold is refused here with a 422 naming the client's field (kbreview.input_limits).
"""
from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from typing import Annotated, Any, Literal

from django.conf import settings
from django.core.cache import cache
from django.db import InterfaceError, OperationalError
from django.http import Http404
from ninja import Field, NinjaAPI, Query, Schema
from ninja.errors import AuthenticationError, AuthorizationError, Throttled, ValidationError
from ninja.security import HttpBearer
from ninja.throttling import BaseThrottle
from pydantic import AfterValidator

from conflicts import selectors, services
from conflicts.models import (
    STATUS_ALIASES,
    AnswerMode,
    AnswerPolicy,
    ArticleUsage,
    ConflictCheckStatus,
    ConflictStatus,
    DetectionOutcome,
    PolicyAction,
    PolicyDecision,
    TokenScope,
    Turn,
)
from conflicts.services.policy import conflict_check, policy_decisions_record, turn_policy_refresh
from conflicts.services.turns import RetrievedRef
from kbreview.input_limits import (
    PG_INTEGER_MAX,
    URL_SAFE_ID_PATTERN,
    required_text_pattern,
    text_problem,
    timestamp_problem,
    url_id_problem,
    year_range_pattern,
)
from kbreview.middleware import database_unavailable_response

logger = logging.getLogger(__name__)


class TokenAuth(HttpBearer):
    """A live token of this knowledge base holding `scope` (else 403 naming it)."""

    def __init__(self, scope: str):
        self.scope = str(scope.value if hasattr(scope, "value") else scope)
        super().__init__()

    def authenticate(self, request, token):
        api_token = services.api_token_authenticate(secret=token)
        if api_token is None:
            return None
        if self.scope not in api_token.scopes:
            raise AuthorizationError(message=f"this token lacks the scope {self.scope!r}")
        request.knowledge_base = api_token.knowledge_base
        return api_token


def client_field(loc: tuple) -> str:
    """("retrieved", 2, "ref") -> "retrieved[2].ref": the field as the client wrote it."""
    name = ""
    for part in loc:
        if isinstance(part, int):
            name += f"[{part}]"
        else:
            name += f".{part}" if name else str(part)
    return name


class _ProcessWindowCounter:
    """Fixed-window counts held in this process: the limiter's fallback while the shared cache is down,
    so an outage of Redis neither refuses every request nor lifts the limit."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._window = -1

    def incr(self, key: str, window_index: int) -> int:
        with self._lock:
            if window_index != self._window:  # a new window: earlier counts are over
                self._counts.clear()
                self._window = window_index
            self._counts[key] = self._counts.get(key, 0) + 1
            return self._counts[key]


class TokenRateLimit(BaseThrottle):
    """At most API_RATE_LIMIT requests per API_RATE_WINDOW_S seconds per token (fixed windows, counted in
    Django's cache: Redis when REDIS_URL is set, so every web process shares the count). Over it: 429
    with Retry-After, the seconds until the window ends. While the cache cannot be reached the count
    is kept per process (logged once per outage), so turns are still accepted."""

    _fallback = _ProcessWindowCounter()
    _cache_down = False

    def allow_request(self, request) -> bool:
        limit, window = settings.API_RATE_LIMIT, settings.API_RATE_WINDOW_S
        if not limit or getattr(request, "auth", None) is None:
            return True
        window_index = int(time.time() // window)
        key = f"api-rate:{request.auth.pk}:{window_index}"
        try:
            count = self._shared_count(key, window)
        except Exception as exc:  # any cache backend error: Redis refused, timed out, or lost mid-call
            if not TokenRateLimit._cache_down:
                TokenRateLimit._cache_down = True
                logger.warning("rate limit: the shared cache is unavailable (%s); counting per process", exc)
            count = self._fallback.incr(key, window_index)
        else:
            if TokenRateLimit._cache_down:
                TokenRateLimit._cache_down = False
                logger.warning("rate limit: the shared cache is back; counting in it again")
        return count <= limit

    @staticmethod
    def _shared_count(key: str, window: int) -> int:
        cache.add(key, 0, timeout=window + 1)
        try:
            return cache.incr(key)
        except ValueError:  # expired between add and incr: a new window
            cache.add(key, 1, timeout=window + 1)
            return 1

    def wait(self) -> float:
        window = settings.API_RATE_WINDOW_S
        return window - (time.time() % window)


class KbreviewApi(NinjaAPI):
    def validation_error_from_error_contexts(self, error_contexts):
        """Locations name the client's fields (["body", "retrieved", 2, "ref"], field "retrieved[2].ref"),
        not this code's parameter names (["body", "payload", ...])."""
        errors = []
        for context in error_contexts:
            model = context.model
            source = model.__ninja_param_source__
            for error in context.pydantic_validation_error.errors(include_url=False, include_input=False):
                loc = tuple(model.__ninja_flatten_map_reverse__.get(error["loc"], error["loc"]))
                if source == "body" and len(model.model_fields) == 1 and loc and loc[0] in model.model_fields:
                    loc = loc[1:]
                errors.append(_error(source, loc, error["msg"].removeprefix("Value error, "), error["type"]))
        return ValidationError(errors)


def _error(source: str, loc: tuple, msg: str, kind: str = "value_error") -> dict[str, Any]:
    return {"loc": [source, *loc], "field": client_field(loc), "msg": msg, "type": kind}


class FieldProblem(Exception):
    """A value that passed the schema but cannot be accepted (e.g. a duplicate ref): 422 naming it."""

    def __init__(self, source: str, loc: tuple, msg: str):
        self.error = _error(source, loc, msg)
        super().__init__(msg)


api = KbreviewApi(title="kbreview API", version="1", throttle=[TokenRateLimit()], urls_namespace="api")
TURNS = TokenAuth(TokenScope.TURNS_WRITE)

EXTERNAL_ID_MAX = Turn._meta.get_field("external_id").max_length
REF_MAX = ArticleUsage._meta.get_field("article").related_model._meta.get_field("external_ref").max_length


def _checked(problem) -> AfterValidator:
    def check(value):
        if value is not None:
            reason = problem(value)
            if reason:
                raise ValueError(reason)
        return value

    return AfterValidator(check)


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    # A time without an offset is taken as UTC, the API's documented zone.
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=dt.timezone.utc)
    return value


# Checked by text_problem; the pattern only states the same rule in the OpenAPI document.
OneLineText = Annotated[str, _checked(text_problem),
                        Field(json_schema_extra={"pattern": required_text_pattern(multiline=False)})]
MultilineText = Annotated[str, _checked(lambda v: text_problem(v, multiline=True)),
                          Field(json_schema_extra={"pattern": required_text_pattern(multiline=True)})]
ExternalId = Annotated[
    str,
    Field(min_length=1, max_length=EXTERNAL_ID_MAX, pattern=URL_SAFE_ID_PATTERN),
]
Timestamp = Annotated[
    dt.datetime, _checked(timestamp_problem), AfterValidator(_aware),
    Field(json_schema_extra={
        "pattern": year_range_pattern(settings.INPUT_TIMESTAMP_MIN_YEAR, settings.INPUT_TIMESTAMP_MAX_YEAR),
        "description": (f"ISO 8601; a year from {settings.INPUT_TIMESTAMP_MIN_YEAR} to "
                        f"{settings.INPUT_TIMESTAMP_MAX_YEAR}; without an offset it is taken as UTC"),
    }),
]


class RetrievedIn(Schema):
    ref: Annotated[OneLineText, Field(min_length=1, max_length=REF_MAX)]
    rank: int = Field(ge=1, le=PG_INTEGER_MAX)


class TurnIn(Schema):
    external_id: ExternalId
    question: Annotated[MultilineText, Field(min_length=1, max_length=10_000)]
    retrieved: list[RetrievedIn] = Field(default_factory=list, max_length=200,
                                         description="the retrieved articles, each ref at most once")
    reply: Annotated[MultilineText, Field(max_length=100_000)] | None = None
    sent_at: Timestamp | None = None


class OpenConflictOut(Schema):
    id: int
    refs: list[str] = Field(description="the pair, sorted; one ref for a finding about one article (type model_disagrees)")
    type: str
    explanation: str = Field(description="one line: what the two articles disagree on")
    suggested: str | None = Field(description="the side a current suggestion names (computed on the articles' current "
                                              "texts, after staff's last decision on the conflict); null: none")
    confidence: float | None = Field(description="that suggestion's confidence (0..1); null without one")
    held_back: str | None = Field(description="the ref the policy leaves out of the answer (prefer_suggested: both "
                                              "sides retrieved and confidence >= threshold; quarantine: whenever "
                                              "retrieved); null: none")


def one_of(values):
    """A string type taking exactly these values (listed inline in the schema); the values come from the
    TextChoices that define them."""
    return Literal[tuple(str(value) for value in values)]


CheckStatusValue = one_of([ConflictCheckStatus.OK, ConflictCheckStatus.UNKNOWN])
# What POST /turns says of detection: queued (or already run), or skipped (fewer than two articles).
TurnDetectionValue = one_of([DetectionOutcome.QUEUED, DetectionOutcome.SKIPPED])
# The queue's statuses and the console's words for them ("resolved" = processed).
ConflictStatusFilter = one_of([*ConflictStatus.values, *STATUS_ALIASES])


class ConflictCheckOut(Schema):
    status: CheckStatusValue = Field(
        description='"unknown": the look-up failed; nothing is known, answer as under "off"')
    policy: AnswerPolicy | None = Field(description="the knowledge base's answer policy; null when unknown")
    caveat: str | None = Field(description="policy caveat: the sentence to add to a reply that cites any of caveat_refs "
                                           "(plain text, no citation tags); else null")
    threshold: float | None = Field(description="the suggestion confidence at or above which prefer_suggested and "
                                                "quarantine hold a side back")
    held_back: list[str] = Field(description="refs to leave out of the answer's context (never cite them)")
    caveat_refs: list[str] = Field(description="policy caveat: refs in an open conflict; a reply citing one carries the caveat")
    conflicts: list[OpenConflictOut] = Field(
        description="open conflicts among the retrieved refs (under caveat and quarantine also those with one side "
                    "retrieved), most impactful first, at most 50")


class TurnAccepted(Schema):
    turn_id: int
    detection: TurnDetectionValue
    open_conflicts: ConflictCheckOut


class RetrievalCheckIn(Schema):
    retrieved: list[Annotated[OneLineText, Field(min_length=1, max_length=REF_MAX)] | RetrievedIn] = Field(
        max_length=200, description='refs as strings, or {"ref", "rank"} items as in a turn')


class ReplyIn(Schema):
    reply: Annotated[MultilineText, Field(min_length=1, max_length=100_000)]
    sent_at: Timestamp | None = None
    replaces: bool = Field(
        default=False, description="true: this reply replaces a different one recorded earlier (audited)"
    )


class ReplyOut(Schema):
    turn_id: int
    cited: list[str]


class ConflictOut(Schema):
    id: int
    refs: list[str] = Field(description="the pair, sorted; one ref for a finding about one article (type model_disagrees)")
    status: str
    type: str
    explanation: str
    times_seen: int
    times_cited: int
    recurred_after_review: bool
    detector: str  # who found the pair: claims | llm | both
    first_seen: dt.datetime
    last_seen: dt.datetime


class DetectionOut(Schema):
    outcome: str
    reason: str
    latency_ms: int | None
    llm_calls: int  # calls this turn's run paid for (a shared call is on the turn that opened it)
    conflicts_found: int
    batch_turns: int  # turns judged in the LLM call(s) this turn's pairs went to, itself included; 0: no call
    unrelated_pairs: int  # pairs about different things: not sent to the LLM
    known_claim_pairs: int  # pairs whose statements the LLM had all judged consistent in other pairs: not sent
    llm_confirmed: int  # claim findings the LLM confirmed
    llm_rejected: int  # claim findings the LLM did not confirm (dropped)


class PolicyDecisionOut(Schema):
    conflict_id: int
    policy: AnswerPolicy
    action: one_of(PolicyAction.values) = Field(
        description="caveat: the reply carried (built-in path) or was told to carry (your reply cited an article of "
                    "the conflict under the caveat policy) the caveat; held_back: a side was left out of the answer")
    held_back: str | None = Field(description="the ref held back; null for a caveat")


class TurnOut(Schema):
    turn_id: int
    external_id: str
    question: str
    reply: str
    detection: DetectionOut | None
    conflicts: list[ConflictOut]
    answer_policy: AnswerPolicy | None = Field(description="the policy when the turn was reported; null: unknown "
                                                           "(the look-up failed) or a turn from before policies")
    conflict_check: CheckStatusValue | None = Field(description="how the open-conflict look-up went; null: before policies")
    policy_decisions: list[PolicyDecisionOut]


class AnswerIn(Schema):
    question: Annotated[MultilineText, Field(min_length=1, max_length=10_000)]
    mode: AnswerMode | None = Field(default=None, description="default: the knowledge base's answer mode")
    external_id: ExternalId | None = None


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
    open_conflicts: ConflictCheckOut
    held_back: list[str] = Field(description="retrieved refs the policy left out of this answer")
    caveat_added: bool = Field(description="the reply ends with the knowledge base's caveat sentence")


class ErrorOut(Schema):
    detail: str


class FieldErrorOut(Schema):
    loc: list[str | int] = Field(description='where: ["body" | "path" | "query", field, index, ...]')
    field: str = Field(description='the field as the request names it, e.g. "retrieved[2].ref"')
    msg: str
    type: str
    refs: list[str] | None = None


class ValidationErrorOut(Schema):
    detail: list[FieldErrorOut]


class MismatchOut(Schema):
    detail: str
    fields: list[str] = Field(description="what differs from the turn recorded under this external_id")


# Answers every operation can give besides its own (auth, limits, unreadable bodies, rate limits).
COMMON_ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 413: ErrorOut, 422: ValidationErrorOut, 429: ErrorOut}


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


# Ninja would answer these itself (a traceback under DEBUG); the project's 503 answer applies here too.
api.add_exception_handler(OperationalError, database_unavailable_response)
api.add_exception_handler(InterfaceError, database_unavailable_response)
def _refuse_duplicate_refs(retrieved: list[RetrievedIn]) -> None:
    first_at: dict[str, int] = {}
    for index, item in enumerate(retrieved):
        earlier = first_at.setdefault(item.ref, index)
        if earlier != index:
            raise FieldProblem(
                "body", ("retrieved", index, "ref"), f"duplicate ref {item.ref!r} (also retrieved[{earlier}].ref)"
            )


@api.exception_handler(AuthenticationError)
def _unauthenticated(request, exc: AuthenticationError):
    response = api.create_response(request, {"detail": "a valid API token is required (Authorization: Bearer <token>)"}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="kbreview"'
    return response


@api.exception_handler(Throttled)
def _throttled(request, exc: Throttled):
    return api.create_response(
        request, {"detail": f"rate limit of {settings.API_RATE_LIMIT} requests per {settings.API_RATE_WINDOW_S} s reached"}, status=429
    )


@api.exception_handler(FieldProblem)
def _field_problem(request, exc: FieldProblem):
    return api.create_response(request, {"detail": [exc.error]}, status=422)


@api.exception_handler(services.UnknownArticleRefs)
def _unknown_refs(request, exc: services.UnknownArticleRefs):
    detail = [
        {**_error("body", ("retrieved",), f"unknown article refs: {', '.join(exc.refs)}"), "refs": exc.refs}
    ]
    return api.create_response(request, {"detail": detail}, status=422)


@api.exception_handler(services.TurnMismatch)
def _turn_mismatch(request, exc: services.TurnMismatch):
    return api.create_response(request, {"detail": str(exc), "fields": exc.fields}, status=409)


@api.exception_handler(services.ReplyAlreadyRecorded)
def _reply_recorded(request, exc: services.ReplyAlreadyRecorded):
    return api.create_response(request, {"detail": str(exc), "fields": ["reply"]}, status=409)


@api.post("/turns", auth=TURNS, response={200: TurnAccepted, 202: TurnAccepted, 409: MismatchOut, **COMMON_ERRORS})
def turn_create(request, payload: TurnIn):
    """Report a turn at retrieval time (detection starts beside your answer generation), or afterwards with its reply.

    The same external_id with the same body again is 200 and changes nothing; with a different body, 409 naming what differs."""
    _refuse_duplicate_refs(payload.retrieved)
    check = conflict_check(knowledge_base=request.knowledge_base, refs=[r.ref for r in payload.retrieved])
    turn, created = services.turn_report(
        knowledge_base=request.knowledge_base,
        external_id=payload.external_id,
        question=payload.question,
        retrieved=[RetrievedRef(ref=r.ref, rank=r.rank) for r in payload.retrieved],
        reply=payload.reply,
        sent_at=payload.sent_at,
        answer_policy=check.policy or "",
        conflict_check=check.status,
    )
    if created and check.conflicts:
        cited = turn.usages.filter(cited=True).values_list("article__external_ref", flat=True) if payload.reply else None
        policy_decisions_record(turn=turn, check=check, cited=set(cited or ()))
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
    turn = services.turn_reply_record(
        turn=_turn(request, external_id), reply=payload.reply, sent_at=payload.sent_at, replaces=payload.replaces
    )
    cited = sorted(turn.usages.filter(cited=True).values_list("article__external_ref", flat=True))
    turn_policy_refresh(turn=turn, cited=cited)
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
