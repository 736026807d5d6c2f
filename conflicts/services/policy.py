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

`conflict_check` is one statement over the partial indexes on open conflicts (conflict_open_by_low / _high) with the
settings row and the suggestions joined in. It fails open: any database error, or the look-up running past
CONFLICT_LOOKUP_TIMEOUT_MS, gives status "unknown" and the turn goes on as under "off".
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError, transaction

from articles.models import KnowledgeBase
from conflicts.models import (
    CAVEAT_MAX_LENGTH,
    DEFAULT_CAVEAT,
    DEFAULT_PREFER_THRESHOLD,
    AnswerPolicy,
    ConflictCheckStatus,
    ConflictStatus,
    PolicyAction,
    PolicyDecision,
    SuggestionStatus,
    Turn,
)
from kbreview.input_limits import text_problem

logger = logging.getLogger(__name__)

CHECK_OK = ConflictCheckStatus.OK
CHECK_UNKNOWN = ConflictCheckStatus.UNKNOWN
# At most this many open conflicts are read per look-up (most impactful first): a retrieval set is a handful of
# articles, and a reply cannot carry more.
MAX_CONFLICTS_PER_CHECK = 50

# One statement: the settings row (if any) left-joined to the open conflicts touching a retrieved article, each with
# its two articles and its suggestion. The retrieved articles are found by ref inside this knowledge base only.
_LOOKUP_SQL = f"""
/* conflict_check */
WITH r AS (
    SELECT id FROM articles_article WHERE knowledge_base_id = %(kb)s AND external_ref = ANY(%(refs)s)
), c AS (
    SELECT id FROM conflicts_conflict
    WHERE status = '{ConflictStatus.OPEN.value}' AND knowledge_base_id = %(kb)s AND article_low_id IN (SELECT id FROM r)
    UNION
    SELECT id FROM conflicts_conflict
    WHERE status = '{ConflictStatus.OPEN.value}' AND knowledge_base_id = %(kb)s AND article_high_id IN (SELECT id FROM r)
), found AS (
    SELECT c.id, c.type, c.explanation, c.impact, c.reviewed_at,
           c.article_low_id, lo.external_ref AS low_ref, lo.current_version_id AS low_version,
           c.article_high_id, hi.external_ref AS high_ref, hi.current_version_id AS high_version,
           s.status AS s_status, s.winner_id, s.confidence, s.version_low_id, s.version_high_id, s.computed_at
    FROM conflicts_conflict c
    JOIN articles_article lo ON lo.id = c.article_low_id
    LEFT JOIN articles_article hi ON hi.id = c.article_high_id
    LEFT JOIN conflicts_resolutionsuggestion s ON s.conflict_id = c.id
    WHERE c.id IN (SELECT id FROM c)
    ORDER BY c.impact DESC, c.id
    LIMIT %(limit)s
), st AS (
    SELECT policy, caveat_text, prefer_threshold FROM conflicts_answersettings WHERE knowledge_base_id = %(kb)s
)
SELECT st.policy, st.caveat_text, st.prefer_threshold,
       found.id, found.type, found.explanation, found.reviewed_at,
       found.article_low_id, found.low_ref, found.low_version,
       found.article_high_id, found.high_ref, found.high_version,
       found.s_status, found.winner_id, found.confidence, found.version_low_id, found.version_high_id, found.computed_at
FROM (SELECT 1) AS one
LEFT JOIN st ON TRUE
LEFT JOIN found ON TRUE
"""


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
    # Its own transaction (a savepoint inside a caller's): a failure rolls back only the look-up, and the timeout
    # (SET LOCAL) ends with it.
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [str(int(settings.CONFLICT_LOOKUP_TIMEOUT_MS))])
            cursor.execute(_LOOKUP_SQL, {"kb": knowledge_base_id, "refs": list(refs), "limit": MAX_CONFLICTS_PER_CHECK})
            return cursor.fetchall()


def _current_side(row: tuple, threshold: float) -> int | None:
    """The winner's article id when the conflict's suggestion is current and at or above the threshold."""
    (_, _, _, _, _, _, reviewed_at, low_id, _, low_version, high_id, _, high_version,
     s_status, winner_id, confidence, s_version_low, s_version_high, computed_at) = row
    if high_id is None or s_status != SuggestionStatus.SUGGESTED or winner_id not in (low_id, high_id):
        return None
    if confidence is None or confidence < threshold:
        return None
    if s_version_low != low_version or s_version_high != high_version:
        return None  # computed on other texts than those retrieved now
    if reviewed_at is not None and (computed_at is None or computed_at <= reviewed_at):
        return None  # made before staff's last decision on this conflict (a reopened one)
    return winner_id


def conflict_check(*, knowledge_base: KnowledgeBase, refs: list[str]) -> ConflictCheck:
    """The open conflicts among the retrieved refs and what the knowledge base's policy does about them. Never
    raises for a database error: the answer is then "unknown" (fail open)."""
    try:
        rows = _lookup_rows(knowledge_base_id=knowledge_base.pk, refs=refs)
    except DatabaseError as exc:
        logger.warning("open-conflict look-up failed for %s (%s); answering as under 'off'", knowledge_base.slug, exc)
        return unknown_check()
    first = rows[0]
    policy = first[0] or AnswerPolicy.OFF
    threshold = first[2] if first[2] is not None else DEFAULT_PREFER_THRESHOLD
    retrieved = set(refs)
    conflicts = []
    for row in rows:
        if row[3] is None:
            continue  # no open conflict: the settings row alone
        low_id, low_ref, high_id, high_ref = row[7], row[8], row[10], row[11]
        pair_refs = sorted(r for r in (low_ref, high_ref) if r is not None)
        ref_by_id = {low_id: low_ref, high_id: high_ref}
        both = high_ref is None or (low_ref in retrieved and high_ref in retrieved)
        winner_id = _current_side(row, threshold)
        held_back_id = None
        if winner_id is not None and policy in (AnswerPolicy.PREFER_SUGGESTED, AnswerPolicy.QUARANTINE):
            loser_id = high_id if winner_id == low_id else low_id
            if ref_by_id[loser_id] in retrieved and (policy == AnswerPolicy.QUARANTINE or both):
                held_back_id = loser_id
        if not both and held_back_id is None and policy != AnswerPolicy.CAVEAT:
            # One side retrieved and nothing to do about it. (Under caveat it stays: citing that side calls for
            # the caveat.)
            continue
        conflicts.append(OpenConflict(
            id=row[3], refs=pair_refs, type=row[4], explanation=row[5],
            suggested=ref_by_id[winner_id] if winner_id is not None else None,
            confidence=row[15] if winner_id is not None else None,
            held_back=ref_by_id[held_back_id] if held_back_id is not None else None,
            held_back_id=held_back_id,
            article_ids=tuple(a for a in (low_id, high_id) if a is not None),
            ref_by_id=ref_by_id,
        ))
    return ConflictCheck(
        status=CHECK_OK, policy=policy, caveat=(first[1] or DEFAULT_CAVEAT) if policy == AnswerPolicy.CAVEAT else None,
        threshold=threshold, conflicts=conflicts,
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


def policy_decisions_record(*, turn: Turn, check: ConflictCheck, cited: list[str] | set[str] | None,
                            caveat_added: bool | None = None) -> int:
    """Record on the turn what the policy did: a side held back per conflict, and — when the reply is known
    (`cited`) and carried the caveat (built-in path) or the policy is caveat (a chatbot's reply) — a caveat per
    conflict whose article it cites. Repeats change nothing. Returns the rows written."""
    if check.status != CHECK_OK or check.policy in (None, AnswerPolicy.OFF) or not check.conflicts:
        return 0
    cited = set(cited or ())
    rows = []
    for conflict in check.conflicts:
        if conflict.held_back_id is not None:
            rows.append(PolicyDecision(
                knowledge_base_id=turn.knowledge_base_id, turn=turn, conflict_id=conflict.id, policy=check.policy,
                action=PolicyAction.HELD_BACK, held_back_id=conflict.held_back_id, confidence=conflict.confidence,
            ))
        elif check.policy == AnswerPolicy.CAVEAT and (caveat_added is None or caveat_added) and cited & set(conflict.refs):
            rows.append(PolicyDecision(
                knowledge_base_id=turn.knowledge_base_id, turn=turn, conflict_id=conflict.id, policy=check.policy,
                action=PolicyAction.CAVEAT,
            ))
    if rows:
        PolicyDecision.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def turn_policy_refresh(*, turn: Turn, cited: list[str]) -> int:
    """A chatbot's reply was recorded for a turn reported under the caveat policy: record a caveat decision per open
    conflict whose article the reply cites (looked up now; a failed look-up records nothing)."""
    if turn.answer_policy != AnswerPolicy.CAVEAT or not cited:
        return 0
    check = conflict_check(knowledge_base=turn.knowledge_base, refs=list(cited))
    if check.policy != AnswerPolicy.CAVEAT:
        return 0
    return policy_decisions_record(turn=turn, check=check, cited=cited)


__all__ = [
    "CHECK_OK", "CHECK_UNKNOWN", "ConflictCheck", "OpenConflict", "caveat_problem", "conflict_check",
    "policy_decisions_record", "reply_with_caveat", "turn_policy_refresh", "unknown_check",
]
