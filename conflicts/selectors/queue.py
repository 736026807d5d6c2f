"""The review queue: its sorts, keyset pages, filters (text search included) and tab counts, a fixed number of
queries whatever the page size, ordered by the indexed columns of Conflict's queue indexes."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from django.contrib.postgres.expressions import ArraySubquery
from django.contrib.postgres.search import SearchQuery, SearchVectorExact, SearchVectorField
from django.db.models import BooleanField, Count, F, Func, Q, QuerySet
from django.utils import timezone

from articles.models import Article, KnowledgeBase
from conflicts.models import (
    Conflict,
    ConflictStatus,
    ConflictSubstatus,
)

QUEUE_SORTS = {
    # cited-in-reply first, then the recency-decayed occurrence count, then recency
    "impact": ("-times_cited", "-impact", "-last_seen", "-pk"),
    "recent": ("-last_seen", "-pk"),
    "reviewed": ("-reviewed_at", "-pk"),
    "seen": ("-times_seen", "-last_seen", "-pk"),
}


# --- keyset pagination: a page starts after (or ends before) the sort key of a row, never at an OFFSET


@dataclass
class QueuePage:
    conflicts: list
    first_key: str  # cursor of the first row shown ("" when empty)
    last_key: str
    has_next: bool
    has_previous: bool


def _sort_fields(sort: str) -> list[str]:
    return [name.lstrip("-").replace("pk", "id") for name in QUEUE_SORTS.get(sort, QUEUE_SORTS["impact"])]


def _cursor(conflict, fields: list[str]) -> str:
    """The row's sort key as a URL-safe string: JSON values, datetimes as ISO text."""
    values = [getattr(conflict, f) for f in fields]
    return json.dumps([v.isoformat() if isinstance(v, dt.datetime) else v for v in values], separators=(",", ":"))


def _parse_cursor(raw: str, fields: list[str]) -> list | None:
    """The sort key back from a cursor; None when it does not parse (the first page is shown instead)."""
    try:
        values = json.loads(raw)
        if not isinstance(values, list) or len(values) != len(fields):
            return None
        parsed = []
        for name, value in zip(fields, values):
            if value is None:
                parsed.append(None)
            elif name in ("last_seen", "reviewed_at"):
                parsed.append(dt.datetime.fromisoformat(value))
            elif name == "impact":
                parsed.append(float(value))
            else:
                parsed.append(int(value))
        return parsed
    except (ValueError, TypeError):
        return None


def _beyond(fields: list[str], values: list, *, after: bool) -> Q:
    """Rows strictly after (or before) the key `values` in the all-descending order of `fields`
    (PostgreSQL puts NULLs first in a descending order; only reviewed_at can be NULL)."""
    field, value = fields[0], values[0]
    tail = _beyond(fields[1:], values[1:], after=after) if len(fields) > 1 else Q(pk__in=[])
    if value is None:
        same = Q(**{f"{field}__isnull": True})
        return (same & tail) | Q(**{f"{field}__isnull": False}) if after else same & tail
    beyond = Q(**{f"{field}__{'lt' if after else 'gt'}": value})
    if not after and field == "reviewed_at":
        beyond |= Q(reviewed_at__isnull=True)
    return beyond | (Q(**{field: value}) & tail)


def _seek(fields: list[str], values: list, *, after: bool) -> Q:
    """_beyond plus the leading key's bound on its own, which PostgreSQL can seek in the queue index."""
    condition = _beyond(fields, values, after=after)
    if values[0] is not None and fields[0] != "reviewed_at":
        condition &= Q(**{f"{fields[0]}__{'lte' if after else 'gte'}": values[0]})
    return condition


def conflict_queue_page(*, conflicts: QuerySet, sort: str, size: int, after: str = "", before: str = "",
                        last: bool = False) -> QueuePage:
    """One page of an ordered queue (conflict_queue): the first, the one after/before a cursor, or the last."""
    fields = _sort_fields(sort)
    ordering = list(QUEUE_SORTS.get(sort, QUEUE_SORTS["impact"]))
    reverse = [name[1:] if name.startswith("-") else f"-{name}" for name in ordering]
    after_key = _parse_cursor(after, fields) if after else None
    before_key = _parse_cursor(before, fields) if before else None
    if last:
        rows = list(conflicts.order_by(*reverse)[: size + 1])
        has_previous, has_next = len(rows) > size, False
        rows = rows[:size][::-1]
    elif before_key is not None:
        rows = list(conflicts.filter(_seek(fields, before_key, after=False)).order_by(*reverse)[: size + 1])
        has_previous, has_next = len(rows) > size, True
        rows = rows[:size][::-1]
    else:
        if after_key is not None:
            conflicts = conflicts.filter(_seek(fields, after_key, after=True))
        rows = list(conflicts.order_by(*ordering)[: size + 1])
        has_next, has_previous = len(rows) > size, after_key is not None
        rows = rows[:size]
    return QueuePage(
        conflicts=rows,
        first_key=_cursor(rows[0], fields) if rows else "",
        last_key=_cursor(rows[-1], fields) if rows else "",
        has_next=has_next,
        has_previous=has_previous,
    )


def snoozed_q(moment: dt.datetime) -> Q:
    """Conflicts snoozed at `moment` (the rule of Conflict.snoozed_at, as a query)."""
    return (
        Q(status=ConflictStatus.OPEN)
        & (Q(snoozed_until__isnull=False) | Q(snoozed_until_seen__isnull=False))
        & (Q(snoozed_until__isnull=True) | Q(snoozed_until__gt=moment))
        & (Q(snoozed_until_seen__isnull=True) | Q(times_seen__lt=F("snoozed_until_seen")))
    )


def _text_search_q(*, knowledge_base: KnowledgeBase, query: str) -> Q:
    """Conflicts whose explanation or passages match (the GIN-indexed generated tsvector), or whose
    articles' titles (their stored tsvector) or refs do.

    The articles come in as `= ANY(ARRAY(subquery))`, not `IN (subquery)`: PostgreSQL estimates a
    hashed IN-subplan at half the rows, so a word no conflict contains made it walk the whole queue
    index; with ANY(ARRAY) the estimate follows the text match, so a rare word is a BitmapOr of the three
    indexes and a common one a walk of the queue index that stops at the page's last row.

    The indexed test looks at each text alone, so `islander -terms` passed a conflict whose title has
    "islander" and whose passage has "terms". The whole query (exclusions included) is then checked once
    more on the conflict's text and both titles together; a conflict found by an article's ref needs
    no words."""
    words = SearchQuery(query, search_type="websearch", config="english")
    titled = ArraySubquery(
        Article.objects.filter(title_vector=words, knowledge_base=knowledge_base).order_by().values("pk")
    )
    by_ref = ArraySubquery(
        Article.objects.filter(external_ref__icontains=query, knowledge_base=knowledge_base).order_by().values("pk")
    )
    any_text = Q(search_vector=words) | Q(_EqualsAny(F("article_low_id"), titled)) | Q(_EqualsAny(F("article_high_id"), titled))
    whole = SearchVectorExact(_WholeText(), words)
    return (any_text & Q(whole)) | Q(_EqualsAny(F("article_low_id"), by_ref)) | Q(_EqualsAny(F("article_high_id"), by_ref))


class _WholeText(Func):
    """A conflict's searchable text and both article titles as one tsvector."""

    template = (
        "(COALESCE(%(expressions)s, ''::tsvector))"
    )
    arg_joiner = ", ''::tsvector) || COALESCE("
    output_field = SearchVectorField()

    def __init__(self):
        super().__init__(F("search_vector"), F("article_low__title_vector"), F("article_high__title_vector"))


class _EqualsAny(Func):
    """`column = ANY(array)`, a condition (Django's `__in` with a subquery writes `IN (subquery)`)."""

    arg_joiner = " = ANY("
    template = "%(expressions)s)"
    output_field = BooleanField()


def _queue_filters(
    *, knowledge_base: KnowledgeBase, type: str = "", query: str = "", article_id: int | None = None,
    regressed: bool = False, assignee: str = "", user=None, snoozed: bool = False,
):
    conflicts = Conflict.objects.filter(knowledge_base=knowledge_base)
    if regressed:
        conflicts = conflicts.filter(substatus=ConflictSubstatus.REGRESSED)
    if assignee == "mine" and user is not None:
        conflicts = conflicts.filter(assignee=user)
    elif assignee == "unassigned":
        conflicts = conflicts.filter(assignee__isnull=True)
    # Snoozed conflicts leave the Open tab until they wake; "snoozed" shows only them.
    snoozed_now = snoozed_q(timezone.now())
    conflicts = conflicts.filter(snoozed_now) if snoozed else conflicts.exclude(snoozed_now)
    if type:
        conflicts = conflicts.filter(type=type)
    if article_id:
        conflicts = conflicts.filter(Q(article_low_id=article_id) | Q(article_high_id=article_id))
    if query:
        conflicts = conflicts.filter(_text_search_q(knowledge_base=knowledge_base, query=query))
    return conflicts


def conflict_queue(
    *,
    knowledge_base: KnowledgeBase,
    status: str = ConflictStatus.OPEN,
    sort: str = "impact",
    type: str = "",
    query: str = "",
    article_id: int | None = None,
    regressed: bool = False,
    assignee: str = "",
    user=None,
    snoozed: bool = False,
) -> QuerySet:
    """One tab of the queue, filtered, ordered by impact (default) or another of QUEUE_SORTS."""
    conflicts = _queue_filters(
        knowledge_base=knowledge_base, type=type, query=query, article_id=article_id, regressed=regressed,
        assignee=assignee, user=user, snoozed=snoozed,
    )
    return (
        conflicts.filter(status=status)
        .select_related("article_low", "article_high", "reviewed_by", "assignee")
        .only(
            "pk", "status", "type", "explanation", "times_seen", "times_cited", "last_seen", "first_seen",
            "impact", "substatus", "recurred_after_review", "reviewed_at", "snoozed_until", "snoozed_until_seen", "review_note", "knowledge_base_id",
            "article_low__id", "article_low__title", "article_low__external_ref", "article_low__status",
            "article_high__id", "article_high__title", "article_high__external_ref", "article_high__status",
            "reviewed_by__id", "reviewed_by__username", "assignee__id", "assignee__username",
        )
        .order_by(*QUEUE_SORTS.get(sort, QUEUE_SORTS["impact"]))
    )


def conflict_tab_counts(
    *, knowledge_base: KnowledgeBase, type: str = "", query: str = "", article_id: int | None = None,
    regressed: bool = False, assignee: str = "", user=None, snoozed: bool = False,
) -> dict[str, int]:
    """Counts per status under the same filters as the queue, in one query.

    GROUP BY status with COUNT(*) is answered from the (knowledge_base, status, ...) indexes alone;
    counting a column they do not hold made PostgreSQL read every conflict row.
    """
    conflicts = _queue_filters(
        knowledge_base=knowledge_base, type=type, query=query, article_id=article_id, regressed=regressed,
        assignee=assignee, user=user, snoozed=snoozed,
    )
    rows = conflicts.order_by().values("status").annotate(n=Count("*"))
    counts = {row["status"]: row["n"] for row in rows}
    return {status: counts.get(status, 0) for status in ConflictStatus.values}
