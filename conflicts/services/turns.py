"""Turns reported by a chatbot (or the built-in answer path) and what their replies cite."""
from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, IntegrityError, OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from agents.citations import cited_refs
from articles.audit import audit_event_record
from articles.models import Article, ArticleStatus, AuditAction, KnowledgeBase
from conflicts.models import (
    ArticleUsage,
    Citation,
    Conflict,
    ConflictOccurrence,
    DetectionOutcome,
    DetectionRun,
    PolicyDecision,
    Turn,
    TurnSource,
)
from conflicts.services.policy import policy_decisions_write
from kbreview.jobs import enqueue

logger = logging.getLogger(__name__)


class UnknownArticleRefs(ValueError):
    def __init__(self, refs: list[str]):
        self.refs = refs
        super().__init__(f"unknown article refs: {', '.join(refs)}")


class TurnMismatch(ValueError):
    """A turn with this external id exists and the new report differs from it (fields named)."""

    def __init__(self, external_id: str, fields: list[str]):
        self.external_id = external_id
        self.fields = fields
        super().__init__(
            f"turn {external_id!r} was already reported with a different {', '.join(fields)}; "
            "use a new external_id for a new turn"
        )


class ReplyAlreadyRecorded(ValueError):
    """The turn already has a different reply; the caller must say it replaces it."""

    def __init__(self, external_id: str):
        self.external_id = external_id
        super().__init__(
            f"turn {external_id!r} already has a different reply; send \"replaces\": true to replace it"
        )


@dataclass(frozen=True)
class RetrievedRef:
    ref: str
    rank: int


@dataclass(frozen=True)
class _RetrievedArticle:
    id: int
    current_version_id: int
    status: str


# Plain SQL: the ORM's building of this query cost 6 times the query itself (0.59 ms against 0.10 ms of
# Python per API turn).
_RETRIEVED_ARTICLES_SQL = (
    "SELECT external_ref, id, current_version_id, status FROM articles_article "
    "WHERE knowledge_base_id = %s AND external_ref = ANY(%s) AND current_version_id IS NOT NULL"
)


def _articles_for(*, knowledge_base: KnowledgeBase, refs: list[str]) -> dict[str, _RetrievedArticle]:
    """The retrieved refs' articles of this knowledge base that have a version (only what recording a turn
    needs: plain rows, not model instances)."""
    with transaction.get_connection().cursor() as cursor:
        cursor.execute(_RETRIEVED_ARTICLES_SQL, [knowledge_base.pk, list(refs)])
        found = {ref: _RetrievedArticle(pk, version_id, status) for ref, pk, version_id, status in cursor.fetchall()}
    missing = sorted(set(refs) - set(found))
    if missing:
        raise UnknownArticleRefs(missing)
    return found


def turn_report(
    *,
    knowledge_base: KnowledgeBase,
    external_id: str,
    question: str,
    retrieved: list[RetrievedRef],
    reply: str | None = None,
    sent_at: dt.datetime | None = None,
    source: str = TurnSource.API,
    answer_policy: str = "",
    conflict_check: str = "",
    policy_decisions: Sequence[PolicyDecision] = (),
) -> tuple[Turn, bool]:
    """Record a turn once per external id; starts detection after commit. Returns (turn, created).
    `answer_policy` and `conflict_check` record what the open-conflict look-up said (conflicts.services.policy), and
    `policy_decisions` (unsaved rows, their turn left unset) what its policy did: written by the turn's own statement,
    so a new turn's decisions cost neither a statement nor a commit. Recording them never costs the turn: if the write
    fails for any other reason than the turn being a repeat, the failure is logged and the turn is recorded without
    them. A repeated report records none (its turn's stand).

    A repeated report with the same external id and the same body changes nothing (the chatbot may
    retry); one that differs raises TurnMismatch naming what differs.
    """
    # A new turn is the common case: it is inserted straight away (no look-up first, one round trip less
    # per turn); a repeated external id is found by the unique constraint and compared.
    def repeated() -> tuple[Turn, bool] | None:
        existing = Turn.objects.filter(knowledge_base=knowledge_base, external_id=external_id).first()
        if existing is None:
            return None
        return _same_turn_or_raise(
            turn=existing, question=question, retrieved=retrieved, reply=reply, sent_at=sent_at
        ), False

    ordered = sorted(retrieved, key=lambda r: r.rank)
    try:
        articles = _articles_for(knowledge_base=knowledge_base, refs=[r.ref for r in ordered])
    except UnknownArticleRefs:
        same = repeated()  # a retry of a turn recorded before an article went away still matches
        if same is None:
            raise
        return same
    turn = Turn(knowledge_base=knowledge_base, external_id=external_id, question=question, source=source,
                answer_policy=answer_policy or "", conflict_check=conflict_check)
    usages = [
        ArticleUsage(article_id=articles[r.ref].id, version_id=articles[r.ref].current_version_id, rank=r.rank)
        for r in ordered
    ]
    live = sum(1 for r in ordered if articles[r.ref].status == ArticleStatus.ACTIVE)
    skip_reason = _skip_reason(live)
    if skip_reason:
        run = DetectionRun(outcome=DetectionOutcome.SKIPPED, reason=skip_reason, articles_checked=live,
                           finished_at=timezone.now())
    else:
        run = DetectionRun()
    return _with_decisions_or_without(
        lambda decisions: _turn_write(turn=turn, usages=usages, run=run, decisions=decisions, reply=reply,
                                      sent_at=sent_at, repeated=repeated),
        policy_decisions, what=f"turn {external_id!r}")


def _with_decisions_or_without(write, decisions: Sequence[PolicyDecision], *, what: str):
    """`write(decisions)`, and if writing the policy's decisions with it fails, `write(())`: recording what the policy
    did never costs the turn or the reply. Not when the database is unavailable (OperationalError): the write alone
    would fail too, and the middleware answers 503."""
    if decisions:
        try:
            return write(decisions)
        except OperationalError:
            raise
        except DatabaseError:
            logger.exception("%s: recording the answer policy's decisions failed; recorded without them", what)
    return write(())


def _turn_write(*, turn: Turn, usages: list[ArticleUsage], run: DetectionRun, decisions: Sequence[PolicyDecision],
                reply: str | None, sent_at: dt.datetime | None, repeated) -> tuple[Turn, bool]:
    # One statement writes the turn, its usages and its queued DetectionRun (the outbox row): on its own it
    # is its own transaction, with no BEGIN and COMMIT round trips. A reply to record, or a caller's
    # transaction (whose savepoint a duplicate must not abort), puts it in an atomic block.
    in_transaction = reply is not None or transaction.get_connection().in_atomic_block
    try:
        with transaction.atomic() if in_transaction else contextlib.nullcontext():
            _turn_insert(turn=turn, usages=usages, run=run, decisions=decisions)
            if run.outcome != DetectionOutcome.SKIPPED:
                enqueue(run)
            if reply is not None:
                _reply_write(turn=turn, reply=reply, sent_at=sent_at)
    except IntegrityError:
        # The same external id was recorded before (or by a concurrent request): that one stands.
        same = repeated()
        if same is None:
            raise
        return same
    return turn, True


def _turn_insert(*, turn: Turn, usages: list[ArticleUsage], run: DetectionRun,
                 decisions: Sequence[PolicyDecision] = ()) -> None:
    """INSERT the turn, its usages, its run and its policy decisions in one statement (data-modifying CTEs: all or
    nothing). Each row's columns and values come from its model fields as the ORM would save them (defaults,
    auto_now_add); the turn's new id goes into the others' turn column. Sets the pks and the turn's `detection`."""
    connection = transaction.get_connection()
    quote = connection.ops.quote_name

    def insert(model, objs, *, returning: str = "") -> tuple[str, list]:
        fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        params, rows = [], []
        for obj in objs:
            cells = []
            for field in fields:
                if model is not Turn and field.name == "turn":
                    cells.append("(SELECT id FROM new_turn)")
                else:
                    cells.append("%s")
                    params.append(field.get_db_prep_save(field.pre_save(obj, add=True), connection))
            rows.append(f"({', '.join(cells)})")
        columns = ", ".join(quote(f.column) for f in fields)
        sql = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES {', '.join(rows)}"
        return sql + (f" RETURNING {returning}" if returning else ""), params

    parts = [("new_turn", *insert(Turn, [turn], returning="id")), ("new_run", *insert(DetectionRun, [run], returning="id"))]
    if usages:  # a turn may retrieve nothing
        parts.append(("new_usages", *insert(ArticleUsage, usages)))
    if decisions:
        parts.append(("new_decisions", *insert(PolicyDecision, decisions)))
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH " + ", ".join(f"{name} AS ({sql})" for name, sql, _ in parts)
            + " SELECT (SELECT id FROM new_turn), (SELECT id FROM new_run)",
            [param for _, _, params in parts for param in params],
        )
        turn.pk, run.pk = cursor.fetchone()
    turn._state.adding = run._state.adding = False
    turn._state.db = run._state.db = connection.alias
    run.turn = turn  # also caches turn.detection


def _same_turn_or_raise(
    *, turn: Turn, question: str, retrieved: list[RetrievedRef], reply: str | None, sent_at: dt.datetime | None
) -> Turn:
    differs = []
    if turn.question != question:
        differs.append("question")
    stored = set(
        ArticleUsage.objects.filter(turn=turn, rank__isnull=False).values_list("article__external_ref", "rank")
    )
    if stored != {(r.ref, r.rank) for r in retrieved}:
        differs.append("retrieved")
    if reply is not None and turn.reply != reply:
        differs.append("reply")
    if reply is not None and sent_at is not None and turn.reply_sent_at != sent_at:
        differs.append("sent_at")
    if differs:
        raise TurnMismatch(turn.external_id, differs)
    return turn


def _skip_reason(live_articles: int) -> str:
    if settings.DETECTION_DISPATCH == "off":
        return "detection is switched off (DETECTION_DISPATCH=off)"
    if live_articles < 2:
        return f"{live_articles} article(s) retrieved; a conflict needs at least 2"
    return ""


def _reply_write(*, turn: Turn, reply: str, sent_at: dt.datetime | None) -> None:
    turn.reply = reply
    turn.reply_sent_at = sent_at or timezone.now()
    turn.save(update_fields=["reply", "reply_sent_at"])
    refs = cited_refs(reply=reply, pattern=settings.CITATION_PATTERN)
    if not refs:
        return
    articles = Article.objects.filter(knowledge_base_id=turn.knowledge_base_id, external_ref__in=refs)
    cited_ids = [a.pk for a in articles]
    ArticleUsage.objects.filter(turn=turn, article_id__in=cited_ids).update(cited=True)
    retrieved_ids = set(ArticleUsage.objects.filter(turn=turn).values_list("article_id", flat=True))
    ArticleUsage.objects.bulk_create(
        ArticleUsage(turn=turn, article=a, version_id=a.current_version_id, rank=None, cited=True)
        for a in articles
        if a.pk not in retrieved_ids and a.current_version_id
    )
    occurrence_mark_cited(turn=turn)


def occurrence_mark_cited(*, turn: Turn) -> None:
    """Record on this turn's occurrences what the reply cited of each pair (one, both), and count a
    conflict's cited replies once per turn."""
    cited_ids = set(ArticleUsage.objects.filter(turn=turn, cited=True).values_list("article_id", flat=True))
    if not cited_ids:
        return
    changed, newly_cited = [], []
    for occurrence in ConflictOccurrence.objects.filter(turn=turn).select_related("conflict"):
        citation = Citation.of(
            low=occurrence.conflict.article_low_id in cited_ids, high=occurrence.conflict.article_high_id in cited_ids
        )
        if citation == occurrence.citation:
            continue
        if occurrence.citation == Citation.NEITHER:
            newly_cited.append(occurrence.conflict_id)
        occurrence.citation = citation
        changed.append(occurrence)
    ConflictOccurrence.objects.bulk_update(changed, ["citation"])
    if newly_cited:
        Conflict.objects.filter(pk__in=newly_cited).update(times_cited=F("times_cited") + 1)


def _citations_forget(*, turn: Turn) -> None:
    """Undo what a reply's citations recorded, so a replacing reply is counted afresh."""
    cited = ConflictOccurrence.objects.filter(turn=turn).exclude(citation=Citation.NEITHER)
    cited_conflicts = list(cited.values_list("conflict_id", flat=True))
    cited.update(citation=Citation.NEITHER)
    Conflict.objects.filter(pk__in=cited_conflicts).update(times_cited=F("times_cited") - 1)
    ArticleUsage.objects.filter(turn=turn, rank__isnull=True).delete()
    ArticleUsage.objects.filter(turn=turn, cited=True).update(cited=False)


def turn_reply_record(
    *, turn: Turn, reply: str, sent_at: dt.datetime | None = None, replaces: bool = False, actor=None,
    policy_decisions: Sequence[PolicyDecision] = (),
) -> Turn:
    """Record the reply actually sent. Repeating the same reply changes nothing; a different one raises
    ReplyAlreadyRecorded unless `replaces`, which re-reads the citations and audits the change.

    `policy_decisions` (unsaved rows for this turn: what the answer policy did) are written in the reply's own
    transaction, with no savepoint: one INSERT and no commit more than the reply alone (a commit waits for the disk).
    Recording them never costs the reply: if that transaction fails, the failure is logged and the reply is recorded
    alone."""
    def write(decisions: Sequence[PolicyDecision]) -> Turn:
        with transaction.atomic():
            recorded = turn_reply_write(turn=turn, reply=reply, sent_at=sent_at, replaces=replaces, actor=actor)
            policy_decisions_write(decisions)
            return recorded

    return _with_decisions_or_without(write, policy_decisions, what=f"turn {turn.pk}")


def turn_reply_write(
    *, turn: Turn, reply: str, sent_at: dt.datetime | None = None, replaces: bool = False, actor=None
) -> Turn:
    """turn_reply_record inside the caller's transaction (it locks the turn, so one must be open), for a caller that
    writes more in the same commit: a commit waits for the disk, a nested atomic block costs two round trips."""
    locked = Turn.objects.select_for_update().get(pk=turn.pk)
    if locked.reply_sent_at is None:
        _reply_write(turn=locked, reply=reply, sent_at=sent_at)
    elif locked.reply != reply:
        if not replaces:
            raise ReplyAlreadyRecorded(locked.external_id)
        previous = locked.reply
        _citations_forget(turn=locked)
        _reply_write(turn=locked, reply=reply, sent_at=sent_at)
        audit_event_record(
            action=AuditAction.TURN_REPLY_REPLACED,
            target=locked,
            knowledge_base=locked.knowledge_base,
            actor=actor,
            previous_reply=previous[:2000],
        )
    return locked
