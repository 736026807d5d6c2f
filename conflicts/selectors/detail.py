"""One conflict's page: the conflict, its occurrences and timeline, its suggestion, who may take it, what the
answer policy did about it, and what to review next."""
from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Count
from django.utils import timezone

from articles.models import KnowledgeBase, Role
from conflicts.models import (
    Citation,
    Conflict,
    ConflictActivity,
    ConflictOccurrence,
    ConflictStatus,
    PolicyAction,
    PolicyDecision,
    ResolutionSuggestion,
)
from conflicts.selectors.queue import QUEUE_SORTS, snoozed_q


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


def conflict_suggestion(*, conflict: Conflict):
    """The engine's latest suggestion for this conflict, or None."""
    return ResolutionSuggestion.objects.select_related("winner", "edit_article").filter(conflict=conflict).first()


def kb_reviewers(*, knowledge_base: KnowledgeBase) -> list:
    """Members who may be assigned conflicts (reviewer or ops), by name."""
    return list(
        get_user_model().objects.filter(
            memberships__knowledge_base=knowledge_base, memberships__role__in=(Role.REVIEWER, Role.OPS)
        ).order_by("username")
    )


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
