"""Turns reported by a chatbot (or the built-in answer path) and what their replies cite."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from agents.citations import cited_refs
from articles.models import Article, ArticleStatus, KnowledgeBase
from conflicts import jobs
from conflicts.models import (
    ArticleUsage,
    Citation,
    Conflict,
    ConflictOccurrence,
    DetectionOutcome,
    DetectionRun,
    Turn,
    TurnSource,
)


class UnknownArticleRefs(ValueError):
    def __init__(self, refs: list[str]):
        self.refs = refs
        super().__init__(f"unknown article refs: {', '.join(refs)}")


@dataclass(frozen=True)
class RetrievedRef:
    ref: str
    rank: int


def _articles_for(*, knowledge_base: KnowledgeBase, refs: list[str]) -> dict[str, Article]:
    found = {
        a.external_ref: a
        for a in Article.objects.filter(knowledge_base=knowledge_base, external_ref__in=refs).exclude(
            current_version__isnull=True
        )
    }
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
) -> tuple[Turn, bool]:
    """Record a turn once per external id; starts detection after commit. Returns (turn, created).

    A repeated report with the same external id changes nothing (the chatbot may retry).
    """
    existing = Turn.objects.filter(knowledge_base=knowledge_base, external_id=external_id).first()
    if existing is not None:
        return existing, False
    ordered = sorted(retrieved, key=lambda r: r.rank)
    articles = _articles_for(knowledge_base=knowledge_base, refs=[r.ref for r in ordered])
    try:
        with transaction.atomic():
            turn = Turn.objects.create(
                knowledge_base=knowledge_base, external_id=external_id, question=question, source=source
            )
            ArticleUsage.objects.bulk_create(
                ArticleUsage(turn=turn, article=articles[r.ref], version_id=articles[r.ref].current_version_id, rank=r.rank)
                for r in ordered
            )
            live = sum(1 for r in ordered if articles[r.ref].status == ArticleStatus.ACTIVE)
            skip_reason = _skip_reason(live)
            if skip_reason:
                DetectionRun.objects.create(
                    turn=turn,
                    outcome=DetectionOutcome.SKIPPED,
                    reason=skip_reason,
                    articles_checked=live,
                    finished_at=timezone.now(),
                )
            else:
                DetectionRun.objects.create(turn=turn)
                jobs.detection_enqueue(turn_id=turn.pk)
            if reply is not None:
                _reply_write(turn=turn, reply=reply, sent_at=sent_at)
    except IntegrityError:
        # Another request recorded the same external id first: that one stands.
        return Turn.objects.get(knowledge_base=knowledge_base, external_id=external_id), False
    return turn, True


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


def turn_reply_record(*, turn: Turn, reply: str, sent_at: dt.datetime | None = None) -> Turn:
    """Record the reply actually sent. The first reply recorded stands; repeats change nothing."""
    with transaction.atomic():
        locked = Turn.objects.select_for_update().get(pk=turn.pk)
        if locked.reply_sent_at is None:
            _reply_write(turn=locked, reply=reply, sent_at=sent_at)
    return locked
