"""The conflicts app's screens (queue, conflict pages, rules, playground, answer policy, ops, notifications): thin
(parse, call a selector or service, render a template or partial)."""
from conflicts.views.answer_policy import answer_policy_view
from conflicts.views.detail import (
    conflict_assign_view,
    conflict_comment_view,
    conflict_detail_view,
    conflict_dismiss_view,
    conflict_preview,
    conflict_reopen_view,
    conflict_resolve_view,
    conflict_snooze_view,
    conflict_suggestion_recompute,
    conflict_unsnooze_view,
)
from conflicts.views.notifications import (
    notification_email,
    notification_preferences,
    ops_delivery_retry,
    ops_notification_settings,
    ops_notifications,
    ops_webhook_create,
    ops_webhook_delete,
    ops_webhook_rotate,
    ops_webhook_toggle,
)
from conflicts.views.ops import ops_home, ops_resync, ops_sync_job, ops_token_create, ops_token_revoke
from conflicts.views.playground import answer_playground, answer_settings_view
from conflicts.views.queue import conflict_bulk, conflict_queue
from conflicts.views.rules import rule_induction_start, rule_list, rule_toggle

__all__ = [
    "notification_email",
    "answer_policy_view",
    "answer_playground",
    "answer_settings_view",
    "conflict_assign_view",
    "conflict_bulk",
    "conflict_comment_view",
    "conflict_snooze_view",
    "conflict_unsnooze_view",
    "conflict_detail_view",
    "conflict_dismiss_view",
    "conflict_preview",
    "conflict_queue",
    "conflict_reopen_view",
    "conflict_resolve_view",
    "conflict_suggestion_recompute",
    "notification_preferences",
    "ops_delivery_retry",
    "ops_home",
    "ops_notification_settings",
    "ops_notifications",
    "ops_webhook_create",
    "ops_webhook_delete",
    "ops_webhook_rotate",
    "ops_webhook_toggle",
    "ops_resync",
    "ops_sync_job",
    "ops_token_create",
    "ops_token_revoke",
    "rule_induction_start",
    "rule_list",
    "rule_toggle",
]
