"""The demo's review history: past conflicts as staff decided them, so the Observer has decisions to learn from.

articles/fixtures/demo/history.json holds pairs of pages the demo business has since retired (kept as deleted
articles: out of retrieval, kept for the record), the conflicting sentences, and the reviewer's decision
(which side won, or dismissed as an intentional difference) with its date and note. Loading is idempotent.
"""
from __future__ import annotations

import datetime as dt
import json

from django.db import transaction
from django.utils import timezone

from articles.demo import DEMO_DIR
from articles.models import Article, ArticleStatus, ArticleVersion, KnowledgeBase, VersionReason
from articles.services import content_hash
from conflicts.models import Conflict, ConflictStatus, ReviewWinner

HISTORY_PATH = DEMO_DIR / "history.json"


def _archived_article(knowledge_base: KnowledgeBase, side: dict) -> Article:
    updated = dt.date.fromisoformat(side["updated_at"])
    article = Article.objects.create(
        knowledge_base=knowledge_base, external_ref=side["ref"], title=side["title"], source_type=side["source"],
        status=ArticleStatus.DELETED,
    )
    version = ArticleVersion.objects.create(
        article=article, number=1, title=side["title"], body=side["body"], updated_at=updated,
        reason=VersionReason.IMPORT,
        content_hash=content_hash(title=side["title"], body=side["body"], updated_at=updated),
    )
    article.current_version = version
    article.save(update_fields=["current_version"])
    return article


def demo_history_load(*, knowledge_base: KnowledgeBase) -> int:
    """Create the past conflicts and their decisions once; returns how many were created."""
    decisions = json.loads(HISTORY_PATH.read_text(encoding="utf-8"))["decisions"]
    refs = [item["low"]["ref"] for item in decisions]
    if Article.objects.filter(knowledge_base=knowledge_base, external_ref__in=refs).exists():
        return 0
    with transaction.atomic():
        for item in decisions:
            low = _archived_article(knowledge_base, item["low"])
            high = _archived_article(knowledge_base, item["high"])
            reviewed = timezone.make_aware(dt.datetime.fromisoformat(item["reviewed_at"] + "T10:00:00"))
            winner = {"low": ReviewWinner.LOW, "high": ReviewWinner.HIGH, "both": ReviewWinner.BOTH}[item["winner"]]
            Conflict.objects.create(
                knowledge_base=knowledge_base, article_low=low, article_high=high, type=item["type"],
                status=ConflictStatus.DISMISSED if winner == ReviewWinner.BOTH else ConflictStatus.PROCESSED,
                explanation="Recorded before this console: " + item["note"],
                snippet_low=item["snippets"][0], snippet_high=item["snippets"][1], detector="history",
                first_seen=reviewed - dt.timedelta(days=3), last_seen=reviewed, times_seen=1,
                reviewed_version_low=low.current_version, reviewed_version_high=high.current_version,
                reviewed_at=reviewed, review_note=item["note"], winner=winner,
            )
    return len(decisions)
