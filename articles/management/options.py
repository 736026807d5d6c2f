"""What several commands share: picking the knowledge base from --kb, or the only one there is."""
from __future__ import annotations

from django.core.management.base import CommandError

from articles.models import KnowledgeBase


def knowledge_base_from_option(slug: str | None) -> KnowledgeBase:
    candidates = KnowledgeBase.objects.all()
    if slug:
        candidates = candidates.filter(slug=slug)
    count = candidates.count()
    if count == 1:
        return candidates.get()
    if slug:
        raise CommandError(f"No knowledge base with slug {slug!r}")
    raise CommandError("Name the knowledge base with --kb SLUG" if count else "No knowledge base yet: run load_demo or import_kb")
