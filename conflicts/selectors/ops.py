"""Ops reads: detection health, API tokens, webhooks and the notification log, a user's notification choice."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Aggregate, Count, FloatField, Q, QuerySet, Sum
from django.utils import timezone

from agents.configuration import llm_config_for
from articles.models import KnowledgeBase
from conflicts.models import (
    ApiToken,
    DeliveryStatus,
    DetectionOutcome,
    DetectionRun,
    EmailMode,
    NotificationDelivery,
    NotificationPreference,
    Webhook,
)


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
