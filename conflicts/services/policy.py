"""Answers that know what staff have not fixed yet: the open conflicts among a turn's retrieved articles, and what
the knowledge base's answer policy does about them (AnswerPolicy).

- off: nothing (the open conflicts are still reported to the chatbot);
- caveat: a reply citing an article in an open conflict carries the knowledge base's caveat sentence;
- prefer_suggested: when both sides of an open conflict are retrieved and its suggestion names a side with confidence
  at or above the knowledge base's threshold, the other side is left out of that answer's context;
- quarantine: the suggested losing side is left out of every answer while the conflict is open, whether or not its
  opponent was retrieved.

A suggestion acts only while it is current: computed on the articles' current versions and after staff's last
decision on the conflict (reviewed_at). So resolving or dismissing lifts a quarantine (the conflict is no longer
open), and reopening lifts it too: the suggestion from before staff's decision no longer acts, until one is computed
again on new evidence (the articles change, or a reviewer asks for it).

`conflict_check` is one round trip: a PL/pgSQL function (migration 0024, its plan kept for the session) over the
partial indexes on open conflicts (conflict_open_by_low / _high) with the settings row and the suggestions joined in,
which also decides the suggested side and the side held back (so its LIMIT keeps the conflicts the turn is told
about). It fails open: any database error, or the look-up running past CONFLICT_LOOKUP_TIMEOUT_MS, gives status
"unknown" and the turn goes on as under "off".
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import Error, transaction
from django.utils import timezone
from psycopg import pq

from agents.citations import cited_refs
from articles.models import KnowledgeBase
from conflicts.models import (
    CAVEAT_MAX_LENGTH,
    DEFAULT_CAVEAT,
    DEFAULT_PREFER_THRESHOLD,
    AnswerMode,
    AnswerPolicy,
    ConflictCheckStatus,
    PolicyAction,
    PolicyDecision,
    Turn,
)
from kbreview.input_limits import text_problem

logger = logging.getLogger(__name__)

CHECK_OK = ConflictCheckStatus.OK
CHECK_UNKNOWN = ConflictCheckStatus.UNKNOWN
# At most this many open conflicts are read per look-up (most impactful first): a retrieval set is a handful of
# articles, and a reply cannot carry more.
MAX_CONFLICTS_PER_CHECK = 50

# One message, one round trip: the look-up's timeout (local to its transaction), the look-up — a PL/pgSQL function whose
# plan PostgreSQL keeps for the session (migration 0024 says why, and what it decides: the settings row, then the open
# conflicts the turn is told about with their current suggested side and the side held back, if any) — and the
# statements that end it, wrapped in a transaction of its own (or a savepoint in a caller's transaction). The refs are
# found inside this knowledge base only.
#
# Why the wrapping travels in the same message: the timeout can fire as the look-up finishes, and the cancel it raises
# is then taken by the server's next interrupt check. Within one simple-query message that is the check before the
# message's next statement (PostgreSQL >= 13 times each statement apart and checks for a cancel before each), so it
# fails this look-up's own COMMIT (or ROLLBACK TO) and the look-up fails open; after the message's last statement it
# is the next message, which must never be the caller's — a turn's INSERT failed that way (bench/reply_overhead.py,
# 24 callers) when the look-up ended its message. The statement after the look-up restores the timeout, so the
# last statement runs without the look-up's short timer.
_LOOKUP_SQL = (
    "SELECT set_config('statement_timeout', %(timeout)s, true); "
    "/* conflict_check */ SELECT * FROM conflict_check_rows(%(kb)s, %(refs)s, %(limit)s, %(default_threshold)s); "
)
_SAVEPOINT = "conflict_check"
# Outside a transaction: BEGIN .. COMMIT (the timeout's reset ahead of COMMIT, local like the timeout).
_ALONE_SQL = "BEGIN; " + _LOOKUP_SQL + "SET LOCAL statement_timeout TO DEFAULT; COMMIT"
# Inside a caller's transaction: a savepoint, always rolled back (the look-up writes nothing; the rollback restores the
# timeout), so neither a failure nor the timeout outlives the look-up.
_NESTED_SQL = (f"SAVEPOINT {_SAVEPOINT}; " + _LOOKUP_SQL
               + f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}; RELEASE SAVEPOINT {_SAVEPOINT}")


@dataclass(frozen=True)
class OpenConflict:
    id: int
    refs: list[str]  # the pair, sorted (one ref for a finding about one article)
    type: str
    explanation: str
    suggested: str | None  # the side a current suggestion names, else None
    confidence: float | None  # that suggestion's confidence
    held_back: str | None = None  # the ref this policy leaves out of the answer, if any
    held_back_id: int | None = None
    article_ids: tuple[int, ...] = ()
    ref_by_id: dict = field(default_factory=dict, compare=False)


@dataclass
class ConflictCheck:
    """What the answer path (or a chatbot) is told about the open conflicts among the retrieved refs."""

    status: str  # "ok" | "unknown" (the look-up failed: answer as under "off")
    policy: str | None  # None when unknown
    caveat: str | None = None  # the sentence to add (policy caveat only)
    threshold: float | None = None  # the suggestion confidence prefer_suggested / quarantine act at
    conflicts: list[OpenConflict] = field(default_factory=list)
    # The knowledge base's default answer mode, read with the policy (None when unknown): the answer path's own
    # query for it saved.
    default_mode: str | None = None

    @property
    def held_back(self) -> list[str]:
        """Refs to leave out of the answer's context."""
        return sorted({c.held_back for c in self.conflicts if c.held_back})

    @property
    def caveat_refs(self) -> list[str]:
        """Refs whose citation calls for the caveat (policy caveat only)."""
        if self.policy != AnswerPolicy.CAVEAT:
            return []
        return sorted({ref for c in self.conflicts for ref in c.refs})

    def caveat_due(self, cited: list[str] | set[str]) -> bool:
        return bool(self.caveat) and bool(set(cited) & set(self.caveat_refs))

    def as_dict(self) -> dict:
        return {
            "status": self.status,
            "policy": self.policy,
            "caveat": self.caveat,
            "threshold": self.threshold,
            "held_back": self.held_back,
            "caveat_refs": self.caveat_refs,
            "conflicts": [
                {"id": c.id, "refs": c.refs, "type": c.type, "explanation": c.explanation, "suggested": c.suggested,
                 "confidence": c.confidence, "held_back": c.held_back}
                for c in self.conflicts
            ],
        }


def unknown_check() -> ConflictCheck:
    return ConflictCheck(status=CHECK_UNKNOWN, policy=None)


def _lookup_rows(*, knowledge_base_id: int, refs: list[str]) -> list[tuple]:
    connection = transaction.get_connection()
    params = {"timeout": str(int(settings.CONFLICT_LOOKUP_TIMEOUT_MS)), "kb": knowledge_base_id, "refs": list(refs),
              "limit": MAX_CONFLICTS_PER_CHECK, "default_threshold": DEFAULT_PREFER_THRESHOLD}
    alone = connection.get_autocommit()
    try:
        with connection.cursor() as cursor:
            cursor.execute(_ALONE_SQL if alone else _NESTED_SQL, params)
            cursor.nextset()  # past BEGIN (or SAVEPOINT)
            cursor.nextset()  # past set_config's row
            return cursor.fetchall()
    except Error:  # DatabaseError or InterfaceError (a closed connection)
        _lookup_undo(connection, alone=alone)
        raise


def _lookup_undo(connection, *, alone: bool) -> None:
    """After a failed look-up message: end what it left open (the server skips a message's statements after a failing
    one), so the caller's connection or transaction goes on as before. Costs a round trip on failure only."""
    if connection.connection is None or connection.connection.closed:
        return  # no connection (the server is down or went away): nothing was left open, and the failure stands
    status = connection.connection.info.transaction_status
    with connection.wrap_database_errors, connection.connection.cursor() as cursor:
        if alone and status != pq.TransactionStatus.IDLE:
            cursor.execute("ROLLBACK")
        elif not alone and status == pq.TransactionStatus.INERROR:  # else the message never reached the server
            cursor.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}; RELEASE SAVEPOINT {_SAVEPOINT}")


def conflict_check(*, knowledge_base: KnowledgeBase, refs: list[str]) -> ConflictCheck:
    """The open conflicts among the retrieved refs and what the knowledge base's policy does about them. Never
    raises for a database error: the answer is then "unknown" (fail open)."""
    try:
        rows = _lookup_rows(knowledge_base_id=knowledge_base.pk, refs=refs)
    except Error as exc:
        logger.warning("open-conflict look-up failed for %s (%s); answering as under 'off'", knowledge_base.slug, exc)
        return unknown_check()
    policy, caveat, threshold, default_mode = rows[0][:4]
    policy = policy or AnswerPolicy.OFF
    threshold = threshold if threshold is not None else DEFAULT_PREFER_THRESHOLD
    conflicts = []
    for (_, _, _, _, conflict_id, conflict_type, explanation, low_id, low_ref, high_id, high_ref,
         suggested_id, confidence, held_back_id) in rows:
        if conflict_id is None:
            continue  # no open conflict: the settings row alone
        ref_by_id = {low_id: low_ref, high_id: high_ref}
        conflicts.append(OpenConflict(
            id=conflict_id, refs=sorted(r for r in (low_ref, high_ref) if r is not None), type=conflict_type,
            explanation=explanation,
            suggested=ref_by_id[suggested_id] if suggested_id is not None else None,
            confidence=confidence if suggested_id is not None else None,
            held_back=ref_by_id[held_back_id] if held_back_id is not None else None,
            held_back_id=held_back_id,
            article_ids=tuple(a for a in (low_id, high_id) if a is not None),
            ref_by_id=ref_by_id,
        ))
    return ConflictCheck(
        status=CHECK_OK, policy=policy, caveat=(caveat or DEFAULT_CAVEAT) if policy == AnswerPolicy.CAVEAT else None,
        threshold=threshold, conflicts=conflicts, default_mode=default_mode or AnswerMode.STRICT,
    )


def reply_with_caveat(*, reply: str, caveat: str) -> str:
    return f"{reply.rstrip()} {caveat}"


def caveat_problem(text: str) -> str:
    """Why a caveat sentence cannot be used, or "" (one line of plain text; no citation tags, which would make the
    reply cite articles it did not use)."""
    problem = text_problem(text)
    if problem:
        return problem
    if not text.strip():
        return "the caveat must not be blank"
    if len(text) > CAVEAT_MAX_LENGTH:
        return f"the caveat is {len(text)} characters; at most {CAVEAT_MAX_LENGTH}"
    if "[[" in text or "]]" in text:
        return "the caveat must not contain [[ or ]] (citation tags)"
    return ""


def policy_decision_rows(*, knowledge_base_id: int, check: ConflictCheck, cited: list[str] | set[str] | None,
                         caveat_added: bool | None = None, turn: Turn | None = None) -> list[PolicyDecision]:
    """What the policy did on the turn, as unsaved rows: a side held back per conflict, and — when the reply is known
    (`cited`) and carried the caveat (built-in path) or the policy is caveat (a chatbot's reply) — a caveat per
    conflict whose article it cites. Without `turn`, for a turn not written yet (turn_report writes them with it)."""
    if check.status != CHECK_OK or check.policy in (None, AnswerPolicy.OFF) or not check.conflicts:
        return []
    cited = set(cited or ())
    rows = []
    for conflict in check.conflicts:
        if conflict.held_back_id is not None:
            rows.append(PolicyDecision(
                knowledge_base_id=knowledge_base_id, turn=turn, conflict_id=conflict.id, policy=check.policy,
                action=PolicyAction.HELD_BACK, held_back_id=conflict.held_back_id, confidence=conflict.confidence,
            ))
        elif check.policy == AnswerPolicy.CAVEAT and (caveat_added is None or caveat_added) and cited & set(conflict.refs):
            rows.append(PolicyDecision(
                knowledge_base_id=knowledge_base_id, turn=turn, conflict_id=conflict.id, policy=check.policy,
                action=PolicyAction.CAVEAT,
            ))
    return rows


# Plain SQL, as for a turn's own rows (turns.py): bulk_create's building of a one-row INSERT cost as much as the INSERT
# (about 0.4 of 0.8 ms per reply in the profile).
_DECISIONS_INSERT = (
    "INSERT INTO conflicts_policydecision "
    "(knowledge_base_id, turn_id, conflict_id, policy, action, held_back_id, confidence, created_at) VALUES {rows} "
    "ON CONFLICT (turn_id, conflict_id) DO NOTHING"
)


def policy_decisions_write(rows: list[PolicyDecision]) -> None:
    """One INSERT; repeats change nothing."""
    if not rows:
        return
    now = timezone.now()
    params = [value for row in rows for value in (row.knowledge_base_id, row.turn_id, row.conflict_id, row.policy,
                                                  row.action, row.held_back_id, row.confidence, now)]
    with transaction.get_connection().cursor() as cursor:
        cursor.execute(_DECISIONS_INSERT.format(rows=", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s)"] * len(rows))), params)


def _reply_citations(reply: str) -> list[str]:
    return cited_refs(reply=reply, pattern=settings.CITATION_PATTERN)


def turn_policy_decisions(*, knowledge_base_id: int, check: ConflictCheck, reply: str | None) -> list[PolicyDecision]:
    """What the policy did on a chatbot's turn, as unsaved rows for turn_report to write with the turn: a side held
    back per conflict, and, when the turn comes with its reply, a caveat per open conflict the reply cites."""
    cited = _reply_citations(reply) if reply is not None else None
    return policy_decision_rows(knowledge_base_id=knowledge_base_id, check=check, cited=cited)


def reply_policy_decisions(*, turn: Turn, reply: str) -> list[PolicyDecision]:
    """A chatbot's reply to a turn reported under the caveat policy: a caveat decision per open conflict whose article
    the reply cites (looked up now, before the reply's transaction; a failed look-up gives none), as unsaved rows for
    turn_reply_record to write with the reply."""
    if turn.answer_policy != AnswerPolicy.CAVEAT:
        return []
    cited = _reply_citations(reply)
    if not cited:
        return []
    check = conflict_check(knowledge_base=turn.knowledge_base, refs=cited)
    if check.policy != AnswerPolicy.CAVEAT:
        return []
    return policy_decision_rows(knowledge_base_id=turn.knowledge_base_id, turn=turn, check=check, cited=cited)


__all__ = [
    "CHECK_OK", "CHECK_UNKNOWN", "ConflictCheck", "OpenConflict", "caveat_problem", "conflict_check",
    "policy_decision_rows", "policy_decisions_write", "reply_policy_decisions", "reply_with_caveat",
    "turn_policy_decisions", "unknown_check",
]
