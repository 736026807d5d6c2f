"""The conflicts of one article: those it is part of, the model's disagreements with it, and the reviewed
ones a restore of it would reopen."""
from __future__ import annotations

from django.db.models import Q

from agents.types import MODEL_DISAGREES
from articles.models import Article, ArticleStatus, ArticleVersion, KnowledgeBase
from conflicts.models import (
    Conflict,
    ConflictStatus,
)
from conflicts.selectors.queue import QUEUE_SORTS


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
