"""Small builders for tests: real rows through the real services."""
from __future__ import annotations

import datetime as dt

from articles.indexing import article_reindex
from articles.ingest import ParsedArticle
from articles.models import AuditEvent
from articles.services import article_upsert


def parsed(ref: str, body: str, *, title: str | None = None, source: str = "faq", updated_at: dt.date | None = None):
    return ParsedArticle(
        ref=ref,
        title=title or ref.replace("-", " ").title(),
        body=body,
        source=source,
        source_uri=f"{ref}.json",
        updated_at=updated_at,
        location=f"test.json item {ref}",
    )


def make_article(kb, ref: str, body: str, *, index: bool = True, **kwargs):
    article, _ = article_upsert(knowledge_base=kb, parsed=parsed(ref, body, **kwargs))
    if index:
        article_reindex(article_id=article.pk)
    article.refresh_from_db()
    return article


def article_audit(article_id: int):
    """The audit log's rows about one article."""
    return AuditEvent.objects.filter(target_type="articles.article", target_id=str(article_id))
