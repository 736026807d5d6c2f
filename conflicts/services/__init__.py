"""Every write of the conflicts app, one module per concern; import from here."""
from conflicts.services.answering import AnswerResponse, answer_question
from conflicts.services.detection import turn_detect
from conflicts.services.review import (
    ArticleFix,
    ConflictStateError,
    conflict_assign,
    conflict_comment,
    conflict_dismiss,
    conflict_reopen,
    conflict_resolve,
    conflict_snooze,
    conflict_transition,
    conflict_unsnooze,
    conflicts_bulk,
)
from conflicts.services.tokens import api_token_authenticate, api_token_create, api_token_revoke
from conflicts.services.turns import (
    ReplyAlreadyRecorded,
    TurnMismatch,
    UnknownArticleRefs,
    turn_reply_record,
    turn_report,
)

__all__ = [
    "AnswerResponse",
    "ArticleFix",
    "ConflictStateError",
    "ReplyAlreadyRecorded",
    "TurnMismatch",
    "UnknownArticleRefs",
    "answer_question",
    "api_token_authenticate",
    "api_token_create",
    "api_token_revoke",
    "conflict_dismiss",
    "conflict_assign",
    "conflict_comment",
    "conflict_reopen",
    "conflict_resolve",
    "conflict_snooze",
    "conflict_transition",
    "conflict_unsnooze",
    "conflicts_bulk",
    "turn_detect",
    "turn_reply_record",
    "turn_report",
]
