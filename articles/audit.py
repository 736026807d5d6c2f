"""The one audit log (AuditEvent): services call `audit_event_record` inside the transaction of the
change they make, so a change and its audit row are written together or not at all."""
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
    return AuditEvent.objects.create(
        knowledge_base=knowledge_base,
        action=action,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        target_type=target._meta.label_lower,
        target_id=str(target.pk),
        target_repr=str(target)[:300],
        detail=detail,
    )
