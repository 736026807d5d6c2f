"""Who may see and change a knowledge base: every membership change goes through here and is audited."""
from __future__ import annotations

from django.db import transaction

from articles.audit import audit_event_record
from articles.models import AuditAction, KnowledgeBase, Membership


def membership_set(*, user, knowledge_base: KnowledgeBase, role: str, actor=None) -> Membership:
    """Give `user` `role` in `knowledge_base` (adding them if needed); a no-op when it already holds."""
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(user=user, knowledge_base=knowledge_base).first()
        if membership is None:
            membership = Membership(user=user, knowledge_base=knowledge_base, role=role)
            membership.full_clean()
            membership.save()
            action, detail = AuditAction.MEMBERSHIP_CREATED, {"role": role}
        elif membership.role != role:
            detail = {"from_role": membership.role, "role": role}
            membership.role = role
            membership.full_clean()
            membership.save(update_fields=["role"])
            action = AuditAction.MEMBERSHIP_CHANGED
        else:
            return membership
        audit_event_record(
            action=action, target=membership, knowledge_base=knowledge_base, actor=actor, user=user.get_username(), **detail
        )
    return membership


def membership_remove(*, membership: Membership, actor=None) -> None:
    with transaction.atomic():
        audit_event_record(
            action=AuditAction.MEMBERSHIP_REMOVED, target=membership, knowledge_base=membership.knowledge_base,
            actor=actor, user=membership.user.get_username(), role=membership.role,
        )
        membership.delete()
