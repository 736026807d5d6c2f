"""Builders shared by the console's view tests: users with roles, conflicts (directly or detected)."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils import timezone

from articles.models import Membership
from conflicts.models import Conflict, ConflictActivity, ConflictOccurrence, Turn
from conflicts.services.turns import RetrievedRef, turn_report
from tests.factories import make_article

PASSWORD = "correct-horse-battery"


def make_user(username: str, kb=None, role: str = "reviewer", **extra):
    user = get_user_model().objects.create_user(username=username, password=PASSWORD, **extra)
    if kb is not None:
        Membership.objects.create(user=user, knowledge_base=kb, role=role)
    return user


def make_conflict(kb, first, second, *, status: str = "open", explanation: str = "The prices differ.",
                  type: str = "price", snippets=("", ""), **fields) -> Conflict:
    low, high = sorted((first, second), key=lambda a: a.pk)
    snippet_low, snippet_high = snippets if first.pk < second.pk else snippets[::-1]
    now = timezone.now()
    conflict = Conflict.objects.create(
        knowledge_base=kb, article_low=low, article_high=high, status=status, type=type, explanation=explanation,
        snippet_low=snippet_low, snippet_high=snippet_high, detector="claims",
        first_seen=fields.pop("first_seen", now), last_seen=fields.pop("last_seen", now),
        times_seen=fields.pop("times_seen", 1), **fields,
    )
    ConflictActivity.objects.create(conflict=conflict, kind="opened", from_status="open", to_status="open")
    return conflict


def add_occurrence(conflict: Conflict, *, external_id: str, question: str, reply: str, citation: str = "neither"):
    turn = Turn.objects.create(knowledge_base=conflict.knowledge_base, external_id=external_id, question=question,
                               reply=reply, reply_sent_at=timezone.now())
    return ConflictOccurrence.objects.create(
        conflict=conflict, turn=turn, version_low_id=conflict.article_low.current_version_id,
        version_high_id=conflict.article_high.current_version_id, detector="claims", citation=citation,
    )


def detected_pair(kb, *, prefix: str = "fare", question: str = "How much is a car ticket?"):
    """Two articles that disagree on a price, a reported turn citing one, and detection run inline. (No year in
    the titles: a year a heading names scopes its prices, and two years' price lists do not conflict.)"""
    a = make_article(kb, f"{prefix}-2025", "A standard car ticket costs €25 one way.", title=f"{prefix} car fares")
    b = make_article(kb, f"{prefix}-2026", "A standard car ticket costs €32 one way.", title=f"{prefix} fares for cars")
    turn, _ = turn_report(
        knowledge_base=kb, external_id=f"{prefix}-turn-1", question=question,
        retrieved=[RetrievedRef(ref=a.external_ref, rank=1), RetrievedRef(ref=b.external_ref, rank=2)],
        reply=f"A car ticket costs €25. [[{a.external_ref}]]",
    )
    return a, b, turn
