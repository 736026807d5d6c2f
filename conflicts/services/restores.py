"""What restoring an article's version (or undeleting it) would bring back: the reviewed conflicts the
restore reopens, each checked with the claim detector. Writes nothing; it is here, not in the selectors,
because it runs the detector."""
from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from agents.detection import run_detection
from agents.types import ArticleText
from articles.models import Article, ArticleVersion, KnowledgeBase
from conflicts.models import Conflict
from conflicts.selectors import conflicts_a_restore_would_reopen
from conflicts.services.detection import claim_vectors


@dataclass
class ComingBack:
    """A reviewed conflict that a restore would bring back, and how sure that is."""

    conflict: Conflict
    confirmed: bool  # the claim check finds the contradiction again in the text being restored


def conflicts_brought_back(
    *, knowledge_base: KnowledgeBase, article: Article, version: ArticleVersion | None = None
) -> list[ComingBack]:
    """The reviewed conflicts of `article` that would come back to Open if `version` were restored (or, with
    no version, if the deleted article were undeleted) and the pair were detected again
    (conflicts.selectors.conflicts_a_restore_would_reopen), each checked with the deterministic claim detector,
    exactly as detection runs it, on the restored text against the other article's current text."""
    restored = version or article.current_version
    coming_back = []
    for conflict in conflicts_a_restore_would_reopen(knowledge_base=knowledge_base, article=article, version=version):
        other = conflict.article_high if conflict.article_low_id == article.pk else conflict.article_low
        texts = [
            ArticleText(ref="restored", title=restored.title, body=restored.body, updated_at=restored.updated_at,
                        source=article.source_type),
            ArticleText(ref="other", title=other.current_version.title, body=other.current_version.body,
                        updated_at=other.current_version.updated_at, source=other.source_type),
        ]
        report = run_detection(articles=texts, detector="claims", now=timezone.localdate(), claim_vectors=claim_vectors())
        coming_back.append(ComingBack(conflict=conflict, confirmed=bool(report.findings)))
    return coming_back
