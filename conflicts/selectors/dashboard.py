"""The dashboard's figures: open conflicts, recent reviews, opened vs resolved per day, the articles in the
most open conflicts, the replies the answer policy protected."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from articles.models import Article, KnowledgeBase
from conflicts.models import (
    ActivityKind,
    Conflict,
    ConflictActivity,
    ConflictStatus,
    ConflictSubstatus,
    PolicyDecision,
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


def replies_protected(*, knowledge_base: KnowledgeBase, since: dt.datetime) -> int:
    """Turns since `since` in which the answer policy added a caveat or held a side back."""
    return (
        PolicyDecision.objects.filter(knowledge_base=knowledge_base, created_at__gte=since)
        .values("turn_id").distinct().count()
    )
