"""The queue's filters and sort, remembered per knowledge base for the session."""
from __future__ import annotations

from django.http import HttpRequest

QUEUE_FILTER_KEYS = ("status", "type", "q", "article", "regressed", "assignee", "snoozed", "sort")
# Remembered: the filters and the sort. The tab is not: the menu's "Conflicts" opens on Open.
QUEUE_REMEMBERED_KEYS = ("type", "q", "article", "regressed", "assignee", "snoozed", "sort")


def _queue_session_key(request: HttpRequest) -> str:
    return f"queue_filters:{request.kb.pk}"


def queue_filters_remember(request: HttpRequest, params: dict) -> None:
    """Keep the queue's filters and sort (not its page) so the queue and the conflict pages come back to them."""
    kept = {k: str(v) for k, v in params.items() if k in QUEUE_REMEMBERED_KEYS and v not in (None, "")}
    if not kept:
        request.session.pop(_queue_session_key(request), None)
    elif request.session.get(_queue_session_key(request)) != kept:
        request.session[_queue_session_key(request)] = kept


def queue_filters_remembered(request: HttpRequest) -> dict:
    return dict(request.session.get(_queue_session_key(request)) or {})
