"""Reads for the API and the console, one module per screen. Every selector takes the knowledge base, and only
reads: what runs the detector or changes anything lives in conflicts.services. The console's reads are a fixed
number of queries whatever the page size or the number of occurrences."""
from conflicts.selectors.article_conflicts import (
    conflicts_a_restore_would_reopen,
    conflicts_for_article,
    model_disagreements_for_article,
)
from conflicts.selectors.dashboard import (
    DashboardFigures,
    DayBar,
    articles_in_most_open_conflicts,
    dashboard_figures,
    replies_protected,
)
from conflicts.selectors.detail import (
    OCCURRENCE_FILTERS,
    PolicyEffect,
    conflict_activity,
    conflict_detail,
    conflict_occurrences,
    conflict_policy_effect,
    conflict_suggestion,
    kb_reviewers,
    next_open_conflict,
    occurrence_counts,
)
from conflicts.selectors.ops import (
    DetectionHealth,
    api_tokens,
    detection_health,
    notification_deliveries,
    notification_delivery_counts,
    notification_preference,
    webhooks,
)
from conflicts.selectors.queue import (
    QUEUE_SORTS,
    QueuePage,
    conflict_queue,
    conflict_queue_page,
    conflict_tab_counts,
    snoozed_q,
)
from conflicts.selectors.rules import (
    induction_runs,
    rule_list,
)
from conflicts.selectors.turns import (
    conflict_list,
    conflicts_by_ids,
    conflicts_for_turn,
    occurrences_for,
    turn_get,
)

__all__ = [
    "DashboardFigures",
    "DayBar",
    "DetectionHealth",
    "OCCURRENCE_FILTERS",
    "PolicyEffect",
    "QUEUE_SORTS",
    "QueuePage",
    "api_tokens",
    "articles_in_most_open_conflicts",
    "conflict_activity",
    "conflict_detail",
    "conflict_list",
    "conflict_occurrences",
    "conflict_policy_effect",
    "conflict_queue",
    "conflict_queue_page",
    "conflict_suggestion",
    "conflict_tab_counts",
    "conflicts_a_restore_would_reopen",
    "conflicts_by_ids",
    "conflicts_for_article",
    "conflicts_for_turn",
    "dashboard_figures",
    "detection_health",
    "induction_runs",
    "kb_reviewers",
    "model_disagreements_for_article",
    "next_open_conflict",
    "notification_deliveries",
    "notification_delivery_counts",
    "notification_preference",
    "occurrence_counts",
    "occurrences_for",
    "replies_protected",
    "rule_list",
    "snoozed_q",
    "turn_get",
    "webhooks",
]
