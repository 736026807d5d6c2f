"""The one audit log (AuditEvent): every audited change, by a person or a schedule, is written by
`audit_event_record`, called by the service that makes the change inside its transaction, so a change and
its audit row are written together or not at all. A conflict's own timeline (ConflictActivity) is apart:
conflicts.services.review.conflict_transition writes it."""
from __future__ import annotations

from django.db import models

from articles.models import AuditEvent, KnowledgeBase


def audit_event_record(
    *,
    action: str,
    target: models.Model,
    knowledge_base: KnowledgeBase | None = None,
    actor=None,
    **detail,
) -> AuditEvent:
    """Record `action` on `target`. The knowledge base defaults to the target's own (most targets belong to
    one); `detail` is stored as JSON (ids, names, before / after values)."""
    return AuditEvent.objects.create(
        knowledge_base_id=knowledge_base.pk if knowledge_base is not None else getattr(target, "knowledge_base_id", None),
        action=action,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        target_type=target._meta.label_lower,
        target_id=str(target.pk),
        target_repr=str(target)[:300],
        detail=detail,
    )
