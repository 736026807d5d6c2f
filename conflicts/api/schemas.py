"""What the API takes and gives: field types with their limits (each stated in the OpenAPI document too), and
the request and response schemas of every operation."""
from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from django.conf import settings
from ninja import Field, Schema
from pydantic import AfterValidator

from conflicts.models import (
    STATUS_ALIASES,
    AnswerMode,
    AnswerPolicy,
    ArticleUsage,
    ConflictCheckStatus,
    ConflictStatus,
    DetectionOutcome,
    PolicyAction,
    Turn,
)
from kbreview.input_limits import (
    PG_INTEGER_MAX,
    URL_SAFE_ID_PATTERN,
    required_text_pattern,
    text_problem,
    timestamp_problem,
    year_range_pattern,
)

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
