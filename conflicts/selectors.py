"""Reads for the API and the console. Every selector takes the knowledge base, and only reads: what runs the
detector or changes anything lives in conflicts.services. The console's reads are a fixed number of queries
whatever the page size or the number of occurrences, ordered by the indexed columns of Conflict's queue indexes."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.postgres.expressions import ArraySubquery
from django.contrib.postgres.search import SearchQuery, SearchVectorExact, SearchVectorField
from django.db import connection
from django.db.models import Aggregate, BooleanField, Count, F, FloatField, Func, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from agents.configuration import llm_config_for
from agents.types import MODEL_DISAGREES
from articles.models import Article, ArticleStatus, ArticleVersion, KnowledgeBase, Role
from conflicts.models import (
    ActivityKind,
    ApiToken,
    Citation,
    Conflict,
    ConflictActivity,
    ConflictOccurrence,
    ConflictStatus,
    ConflictSubstatus,
    DeliveryStatus,
    DetectionOutcome,
    DetectionRun,
    EmailMode,
    InductionRun,
    NotificationDelivery,
    NotificationPreference,
    PolicyAction,
    PolicyDecision,
    ResolutionRule,
    ResolutionSuggestion,
    Turn,
    Webhook,
)


def turn_get(*, knowledge_base: KnowledgeBase, external_id: str) -> Turn:
    return Turn.objects.select_related("detection").get(knowledge_base=knowledge_base, external_id=external_id)


def conflicts_for_turn(*, turn: Turn) -> QuerySet:
    return (
        Conflict.objects.filter(occurrences__turn=turn)
        .select_related("article_low", "article_high")
        .order_by("pk")
    )


def conflicts_by_ids(*, knowledge_base: KnowledgeBase, ids) -> list[Conflict]:
    return list(Conflict.objects.filter(knowledge_base=knowledge_base, pk__in=ids).order_by("pk"))


def conflict_list(*, knowledge_base: KnowledgeBase, status: str | None = None) -> QuerySet:
    conflicts = Conflict.objects.filter(knowledge_base=knowledge_base).select_related("article_low", "article_high")
    if status:
        conflicts = conflicts.filter(status=status)
    return conflicts.order_by("-times_cited", "-impact", "-last_seen", "-pk")


def occurrences_for(*, conflict: Conflict) -> QuerySet:
    return ConflictOccurrence.objects.filter(conflict=conflict).select_related("turn").order_by("-created_at")


# --- the review console ---------------------------------------------------------------------------


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


def conflict_detail(*, knowledge_base: KnowledgeBase, conflict_id: int) -> Conflict:
    """A conflict with both articles and their current versions; DoesNotExist for another KB's id."""
    return Conflict.objects.select_related(
        "article_low__current_version",
        "article_high__current_version",
        "reviewed_by",
        "assignee",
        "reviewed_version_low",
        "reviewed_version_high",
        "disputed_version",
    ).get(knowledge_base=knowledge_base, pk=conflict_id)


# The detail page's occurrence filters: a name in the URL -> the citations it keeps.
OCCURRENCE_FILTERS = {
    "": ("All replies", None),
    "cited": ("Cited one or both", (Citation.ONE, Citation.BOTH)),
    "both": ("Cited both", (Citation.BOTH,)),
    "one": ("Cited one", (Citation.ONE,)),
    "neither": ("Retrieved only", (Citation.NEITHER,)),
}


def next_open_conflict(*, knowledge_base: KnowledgeBase, exclude_id: int, sort: str = "impact") -> Conflict | None:
    """The first open conflict in the queue's order other than `exclude_id` (what to review next); never a snoozed
    one (the Open queue leaves those out too)."""
    return (
        Conflict.objects.filter(knowledge_base=knowledge_base, status=ConflictStatus.OPEN)
        .exclude(pk=exclude_id)
        .exclude(snoozed_q(timezone.now()))
        .select_related("article_low", "article_high")
        .only("pk", "article_low__title", "article_high__title")
        .order_by(*QUEUE_SORTS.get(sort, QUEUE_SORTS["impact"]))
        .first()
    )


def conflict_occurrences(*, conflict: Conflict, cited: str = "", limit: int = 20) -> list[ConflictOccurrence]:
    """The most recent occurrences with their turn (question and the reply actually sent), optionally
    only those whose reply cited the pair as OCCURRENCE_FILTERS[cited] says."""
    occurrences = ConflictOccurrence.objects.filter(conflict=conflict)
    citations = OCCURRENCE_FILTERS.get(cited, OCCURRENCE_FILTERS[""])[1]
    if citations:
        occurrences = occurrences.filter(citation__in=citations)
    return list(
        occurrences.select_related("turn", "version_low", "version_high")
        .only(
            "pk", "citation", "detector", "created_at", "conflict_id", "context_preview", "memory_preview",
            "turn__id", "turn__external_id", "turn__question", "turn__reply", "turn__reply_sent_at", "turn__created_at",
            "version_low__id", "version_low__number", "version_high__id", "version_high__number",
        )
        .order_by("-created_at", "-pk")[:limit]
    )


def occurrence_counts(*, conflict: Conflict) -> dict[str, int]:
    """How many occurrences each filter of OCCURRENCE_FILTERS keeps, in one query."""
    rows = ConflictOccurrence.objects.filter(conflict=conflict).order_by().values("citation").annotate(n=Count("*"))
    by_citation = {row["citation"]: row["n"] for row in rows}
    return {
        name: sum(by_citation.get(c, 0) for c in (citations or Citation.values))
        for name, (_, citations) in OCCURRENCE_FILTERS.items()
    }


def conflict_activity(*, conflict: Conflict, limit: int = 50) -> list[ConflictActivity]:
    return list(ConflictActivity.objects.filter(conflict=conflict).select_related("actor").order_by("-created_at", "-pk")[:limit])


def conflicts_for_article(*, knowledge_base: KnowledgeBase, article_id: int, limit: int = 50) -> list[Conflict]:
    """The pairs the article is part of (its one-article findings: model_disagreements_for_article)."""
    return list(
        Conflict.objects.filter(knowledge_base=knowledge_base, article_high__isnull=False)
        .filter(Q(article_low_id=article_id) | Q(article_high_id=article_id))
        .select_related("article_low", "article_high")
        .order_by("status", "-times_cited", "-impact", "-last_seen", "-pk")[:limit]
    )


def model_disagreements_for_article(*, knowledge_base: KnowledgeBase, article_id: int, limit: int = 20) -> list[Conflict]:
    """The article's open "the model disagrees with this article" findings, most impactful first, with the version
    each disputes."""
    return list(
        Conflict.objects.filter(knowledge_base=knowledge_base, type=MODEL_DISAGREES, article_low_id=article_id,
                                status=ConflictStatus.OPEN)
        .select_related("article_low", "disputed_version")
        .order_by(*QUEUE_SORTS["impact"])[:limit]
    )


@dataclass
class DayBar:
    day: dt.date
    opened: int
    resolved: int


@dataclass
class DashboardFigures:
    open_count: int
    regressed_count: int  # open again because they came back after a review
    regressed_last_7_days: int
    resolved_last_7_days: int
    dismissed_last_7_days: int
    days: list[DayBar]
    top_articles: list[tuple[Article, int]] = field(default_factory=list)
    protected_last_7_days: int = 0  # replies the answer policy added a caveat to or held a side back from


def dashboard_figures(*, knowledge_base: KnowledgeBase, days: int = 14, now: dt.datetime | None = None) -> DashboardFigures:
    """Open conflicts, recent reviews, opened vs resolved per day, and the articles in most open conflicts."""
    now = now or timezone.now()
    today = timezone.localdate(now)
    first_day = today - dt.timedelta(days=days - 1)
    start = timezone.make_aware(dt.datetime.combine(first_day, dt.time.min))
    week_ago = now - dt.timedelta(days=7)
    activity = ConflictActivity.objects.filter(conflict__knowledge_base=knowledge_base)
    recent = activity.filter(created_at__gte=week_ago).aggregate(
        resolved=Count("pk", filter=Q(kind=ActivityKind.RESOLVED)),
        dismissed=Count("pk", filter=Q(kind=ActivityKind.DISMISSED)),
        regressed=Count("pk", filter=Q(kind=ActivityKind.REGRESSED)),
    )
    per_day = (
        activity.filter(created_at__gte=start, kind__in=(ActivityKind.OPENED, ActivityKind.RESOLVED))
        .annotate(day=TruncDate("created_at"))
        .values("day", "kind")
        .annotate(n=Count("pk"))
    )
    counts = {(row["day"], row["kind"]): row["n"] for row in per_day}
    bars = [
        DayBar(
            day=first_day + dt.timedelta(days=i),
            opened=counts.get((first_day + dt.timedelta(days=i), ActivityKind.OPENED), 0),
            resolved=counts.get((first_day + dt.timedelta(days=i), ActivityKind.RESOLVED), 0),
        )
        for i in range(days)
    ]
    open_counts = Conflict.objects.filter(knowledge_base=knowledge_base, status=ConflictStatus.OPEN).aggregate(
        total=Count("pk"), regressed=Count("pk", filter=Q(substatus=ConflictSubstatus.REGRESSED))
    )
    return DashboardFigures(
        open_count=open_counts["total"],
        regressed_count=open_counts["regressed"],
        regressed_last_7_days=recent["regressed"],
        resolved_last_7_days=recent["resolved"],
        dismissed_last_7_days=recent["dismissed"],
        days=bars,
        top_articles=articles_in_most_open_conflicts(knowledge_base=knowledge_base),
        protected_last_7_days=replies_protected(knowledge_base=knowledge_base, since=week_ago),
    )


def articles_in_most_open_conflicts(*, knowledge_base: KnowledgeBase, limit: int = 10) -> list[tuple[Article, int]]:
    table = Conflict._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT article_id, count(*) AS n FROM (
                SELECT article_low_id AS article_id FROM {table} WHERE knowledge_base_id = %s AND status = %s
                UNION ALL
                SELECT article_high_id FROM {table} WHERE knowledge_base_id = %s AND status = %s
                    AND article_high_id IS NOT NULL
            ) pairs GROUP BY article_id ORDER BY n DESC, article_id LIMIT %s
            """,
            [knowledge_base.pk, ConflictStatus.OPEN, knowledge_base.pk, ConflictStatus.OPEN, limit],
        )
        rows = cursor.fetchall()
    articles = Article.objects.in_bulk([article_id for article_id, _ in rows])
    return [(articles[article_id], n) for article_id, n in rows if article_id in articles]


class _Percentile(Aggregate):
    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression, fraction: float, **extra):
        super().__init__(expression, fraction=float(fraction), **extra)


@dataclass
class DetectionHealth:
    hours: int
    total: int
    outcomes: list[tuple[str, str, int]]  # (value, label, count) for every outcome
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    llm_configured: bool
    llm_calls: int
    batched_turns: int = 0  # turns whose pairs shared an LLM call with other turns
    unrelated_pairs: int = 0  # pairs about different things, not sent to the LLM
    known_claim_pairs: int = 0  # pairs whose statements the LLM had all judged in other pairs, not sent
    llm_confirmed: int = 0  # claim findings the LLM confirmed
    llm_rejected: int = 0  # claim findings the LLM did not confirm (dropped)


def detection_health(*, knowledge_base: KnowledgeBase, hours: int = 24, now: dt.datetime | None = None) -> DetectionHealth:
    since = (now or timezone.now()) - dt.timedelta(hours=hours)
    runs = DetectionRun.objects.filter(turn__knowledge_base=knowledge_base, created_at__gte=since)
    figures = runs.aggregate(
        total=Count("pk"),
        p50=_Percentile("latency_ms", 0.5),
        p95=_Percentile("latency_ms", 0.95),
        llm_calls=Sum("llm_calls"),
        batched_turns=Count("pk", filter=Q(batch_turns__gt=1)),
        unrelated_pairs=Sum("unrelated_pairs"),
        known_claim_pairs=Sum("known_claim_pairs"),
        llm_confirmed=Sum("llm_confirmed"),
        llm_rejected=Sum("llm_rejected"),
        **{f"n_{value}": Count("pk", filter=Q(outcome=value)) for value in DetectionOutcome.values},
    )
    return DetectionHealth(
        hours=hours,
        total=figures["total"],
        outcomes=[(value, label, figures[f"n_{value}"]) for value, label in DetectionOutcome.choices],
        latency_p50_ms=figures["p50"],
        latency_p95_ms=figures["p95"],
        llm_configured=llm_config_for("detection") is not None,
        llm_calls=figures["llm_calls"] or 0,
        batched_turns=figures["batched_turns"],
        unrelated_pairs=figures["unrelated_pairs"] or 0,
        known_claim_pairs=figures["known_claim_pairs"] or 0,
        llm_confirmed=figures["llm_confirmed"] or 0,
        llm_rejected=figures["llm_rejected"] or 0,
    )


def api_tokens(*, knowledge_base: KnowledgeBase) -> QuerySet:
    return ApiToken.objects.filter(knowledge_base=knowledge_base).select_related("created_by").order_by("-created_at")


def webhooks(*, knowledge_base: KnowledgeBase) -> QuerySet:
    return Webhook.objects.filter(knowledge_base=knowledge_base).select_related("created_by")


def notification_deliveries(*, knowledge_base: KnowledgeBase, status: str = "", limit: int = 50) -> list:
    """The delivery log, newest first (a failed one keeps its last error and can be sent again)."""
    rows = NotificationDelivery.objects.filter(knowledge_base=knowledge_base).select_related("event").defer("body")
    if status:
        rows = rows.filter(status=status)
    return list(rows.order_by("-created_at", "-id")[:limit])


def notification_delivery_counts(*, knowledge_base: KnowledgeBase) -> dict[str, int]:
    counts = dict(NotificationDelivery.objects.filter(knowledge_base=knowledge_base).values_list("status")
                  .annotate(n=Count("pk")).values_list("status", "n"))
    return {value: counts.get(value, 0) for value in DeliveryStatus.values}


def notification_preference(*, user, knowledge_base: KnowledgeBase) -> str:
    row = NotificationPreference.objects.filter(user=user, knowledge_base=knowledge_base).first()
    return row.email_mode if row else EmailMode.OFF


def conflict_suggestion(*, conflict: Conflict):
    """The engine's latest suggestion for this conflict, or None."""
    return ResolutionSuggestion.objects.select_related("winner", "edit_article").filter(conflict=conflict).first()


def rule_list(*, knowledge_base: KnowledgeBase) -> list:
    """The rule rows, each with `validated_decisions` (the conflicts it was last validated on, in this knowledge
    base, with whether the rule agreed) and `counter_examples` (those it did not)."""
    rules = list(ResolutionRule.objects.filter(knowledge_base=knowledge_base).order_by("status", "priority", "rule_id"))
    ids = {item["conflict"] for rule in rules for item in rule.validated_on if isinstance(item, dict) and "conflict" in item}
    conflicts = Conflict.objects.filter(knowledge_base=knowledge_base, pk__in=ids).select_related(
        "article_low", "article_high"
    ).in_bulk()
    for rule in rules:
        rule.validated_decisions = [
            {"conflict": conflicts[item["conflict"]], "agreed": bool(item.get("agreed"))}
            for item in rule.validated_on
            if isinstance(item, dict) and item.get("conflict") in conflicts
        ]
        rule.counter_examples = [item for item in rule.validated_decisions if not item["agreed"]]
    return rules


def induction_runs(*, knowledge_base: KnowledgeBase, limit: int = 20) -> list:
    return list(InductionRun.objects.filter(knowledge_base=knowledge_base).select_related("requested_by")[:limit])


# --- regressions -----------------------------------------------------------------------------------


def conflicts_a_restore_would_reopen(
    *, knowledge_base: KnowledgeBase, article: Article, version: ArticleVersion | None = None
) -> list[Conflict]:
    """The reviewed pairs of `article` that would come back to Open if `version` were restored (or, with no
    version, if the deleted article were undeleted) and the pair were detected again: the rule of detection's
    conflicts.services.review.regressed_sides, a side the review deleted that is live again, or text other than
    the reviewed one. Pairs whose other article cannot be retrieved with it are left out. Whether the restored
    text still contradicts the other is conflicts.services.restores.conflicts_brought_back's to check."""
    reviewed = (
        Conflict.objects.filter(knowledge_base=knowledge_base, status__in=(ConflictStatus.PROCESSED, ConflictStatus.DISMISSED))
        .filter(article_high__isnull=False)  # pairs: a one-article finding names its version and never regresses
        .filter(Q(article_low=article) | Q(article_high=article))
        .select_related(
            "article_low__current_version", "article_high__current_version", "reviewed_version_low", "reviewed_version_high"
        )
        .order_by("pk")
    )
    restored = version or article.current_version
    reopened = []
    for conflict in reviewed:
        side = "low" if conflict.article_low_id == article.pk else "high"
        other = conflict.article_high if side == "low" else conflict.article_low
        if other.status == ArticleStatus.DELETED or other.current_version is None or restored is None:
            continue  # the pair cannot be retrieved together
        reviewed_version = getattr(conflict, f"reviewed_version_{side}")
        if version is None:
            differs = reviewed_version is None  # undelete brings back only what the review deleted
        else:
            differs = reviewed_version is None or reviewed_version.content_hash != version.content_hash
        if differs:
            reopened.append(conflict)
    return reopened


def kb_reviewers(*, knowledge_base: KnowledgeBase) -> list:
    """Members who may be assigned conflicts (reviewer or ops), by name."""
    return list(
        get_user_model().objects.filter(
            memberships__knowledge_base=knowledge_base, memberships__role__in=(Role.REVIEWER, Role.OPS)
        ).order_by("username")
    )


# --- answer policies: what they did ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyEffect:
    """What the answer policy did about one conflict, counted from the turns' policy decisions."""

    replies: int  # turns it showed up in since it opened (times_seen)
    caveat: int  # replies answered under the caveat
    held_back: list[tuple[str, str, int]]  # (ref, title, replies) per side held back

    @property
    def held_back_total(self) -> int:
        return sum(n for _, _, n in self.held_back)


def conflict_policy_effect(*, conflict: Conflict) -> PolicyEffect:
    rows = (
        PolicyDecision.objects.filter(conflict=conflict)
        .values("action", "held_back__external_ref", "held_back__title")
        .annotate(n=Count("pk"))
        .order_by("-n", "held_back__external_ref")
    )
    caveat, held = 0, []
    for row in rows:
        if row["action"] == PolicyAction.CAVEAT:
            caveat += row["n"]
        else:
            held.append((row["held_back__external_ref"], row["held_back__title"], row["n"]))
    return PolicyEffect(replies=conflict.times_seen, caveat=caveat, held_back=held)


def replies_protected(*, knowledge_base: KnowledgeBase, since: dt.datetime) -> int:
    """Turns since `since` in which the answer policy added a caveat or held a side back."""
    return (
        PolicyDecision.objects.filter(knowledge_base=knowledge_base, created_at__gte=since)
        .values("turn_id").distinct().count()
    )
