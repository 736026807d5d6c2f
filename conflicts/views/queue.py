"""The conflict queue: Open / Resolved / Dismissed tabs, filters, pagination, bulk dismiss."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from articles.models import Role
from articles.permissions import allows, kb_view
from articles.selectors import article_title
from conflicts import selectors
from conflicts.forms import QUERY_MAX_CHARS, BulkActionForm, QueueFilterForm, SnoozeForm
from conflicts.models import ConflictStatus, ConflictType
from conflicts.services.detection import IMPACT_HALF_LIFE_S
from conflicts.services.review import (
    conflict_assign,
    conflict_dismiss,
    conflict_resolve_by_deleting_older,
    conflict_snooze,
    conflicts_bulk,
)
from conflicts.views.display import with_explanations
from conflicts.views.queue_memory import QUEUE_FILTER_KEYS, queue_filters_remember, queue_filters_remembered
from kbreview.views.common import query_string, render_page

PAGE_SIZE = 25


def impact_formula() -> str:
    """The impact ordering in one line, for the queue page (selectors.QUEUE_SORTS["impact"] over detection's columns)."""
    half_life = f"{IMPACT_HALF_LIFE_S / 86400:g} days"
    return (
        f"Impact order: replies that cited either article, most first; then sightings weighted by recency, "
        f"Σ 2^(−age / {half_life}); then the most recent."
    )


def _url_params(filters: dict) -> dict:
    return {
        "status": filters["status"],
        "type": filters["type"],
        "q": filters["query"],
        "article": filters["article_id"],
        "regressed": "1" if filters["regressed"] else "",
        "assignee": filters["assignee"],
        "snoozed": "1" if filters["snoozed"] else "",
        "sort": "" if filters["sort"] == "impact" else filters["sort"],
    }


def queue_context(
    request, *, filters: dict, position=None, notice: str = "", notice_error: bool = False,
    selected_ids: frozenset = frozenset(), bulk_reason: str = "", refused_query: str = "",
) -> dict:
    kb = request.kb
    position = _position(position or {})
    if refused_query:
        # A search that cannot run shows nothing (with the reason), never the whole queue as if none was asked.
        counts = dict.fromkeys(ConflictStatus.values, 0)
        page = selectors.QueuePage(conflicts=[], first_key="", last_key="", has_next=False, has_previous=False)
    else:
        counts = selectors.conflict_tab_counts(
            knowledge_base=kb, type=filters["type"], query=filters["query"], article_id=filters["article_id"],
            regressed=filters["regressed"], assignee=filters["assignee"], user=request.user, snoozed=filters["snoozed"],
        )
        queryset = selectors.conflict_queue(knowledge_base=kb, user=request.user, **filters)
        page = selectors.conflict_queue_page(conflicts=queryset, sort=filters["sort"], size=PAGE_SIZE, **position)
    params = _url_params(filters)
    base = reverse("conflict_queue")
    conflicts = with_explanations(page.conflicts)
    tabs = [
        {
            "status": status,
            "label": label,
            "count": counts[status],
            "url": base + query_string(params, status=status),
            "active": status == filters["status"],
        }
        for status, label in ConflictStatus.choices
    ]
    return {
        "filters": filters,
        "filter_form": QueueFilterForm(initial={**params, "sort": filters["sort"]}),
        "query_shown": refused_query or filters["query"],
        "query_max": QUERY_MAX_CHARS,
        "tabs": tabs,
        "page": page,
        "total": counts[filters["status"]],
        "position": position,
        "conflicts": conflicts,
        # Keyset pagination: links carry the sort key of the row to continue from, never an OFFSET.
        "first_url": base + query_string(params) if page.has_previous else "",
        "prev_url": base + query_string(params, before=page.first_key) if page.has_previous else "",
        "next_url": base + query_string(params, after=page.last_key) if page.has_next else "",
        "last_url": base + query_string(params, last="1") if page.has_next else "",
        "sort_urls": [
            (value, label, base + query_string(params, sort="" if value == "impact" else value), value == filters["sort"])
            for value, label in QueueFilterForm.base_fields["sort"].choices
        ],
        "type_labels": dict(ConflictType.choices),
        # Filters and sort are remembered for the session: say which are set and offer to clear them.
        "filters_set": any(v for k, v in params.items() if k != "status"),
        "clear_url": base + query_string({"status": filters["status"], "sort": "impact"}),
        "params": params,
        "can_review": allows(request, Role.REVIEWER),
        "is_open_tab": filters["status"] == ConflictStatus.OPEN,
        "review_heading": "Dismissed by, when, why" if filters["status"] == ConflictStatus.DISMISSED else "Resolved by, when, note",
        "notice": notice,
        "notice_error": notice_error,
        # After a refused bulk action the rows stay ticked and the reason stays typed.
        "selected_ids": selected_ids,
        "bulk_reason": bulk_reason,
        "impact_formula": impact_formula(),
        "reviewers": selectors.kb_reviewers(knowledge_base=kb) if allows(request, Role.REVIEWER) else [],
        "snooze_form": SnoozeForm(),
        "article_filter_title": (
            article_title(knowledge_base=kb, article_id=filters["article_id"]) if filters["article_id"] else ""
        ),
    }


@kb_view()
def conflict_queue(request):
    remembered = queue_filters_remembered(request)
    history = bool(request.htmx) and request.htmx.history_restore_request  # the back button: the URL as it was
    if remembered and not history and not any(key in request.GET for key in QUEUE_FILTER_KEYS):
        # The bare queue (the menu's link): the filters and sort last used, in the address too.
        return redirect(reverse("conflict_queue") + query_string(remembered))
    form = QueueFilterForm(request.GET)
    filters = form.values()
    problem = form.query_problem()
    if problem:
        context = queue_context(request, filters=filters, position=request.GET, notice=problem, notice_error=True,
                                refused_query=form.raw_query())
        return render_page(request, "conflicts/queue.html", context, partial="queue", status=400)
    queue_filters_remember(request, _url_params(filters))
    context = queue_context(request, filters=filters, position=request.GET)
    return render_page(request, "conflicts/queue.html", context, partial="queue")


def _bulk_action(form: BulkActionForm, *, actor, reviewers):
    """The service call the chosen bulk action makes for each conflict (each writes its activity row)."""
    data = form.cleaned_data
    action = data["action"]
    if action == "dismiss":
        return lambda c: conflict_dismiss(conflict=c, actor=actor, reason=data["reason"].strip())
    if action == "assign":
        assignee = next((u for u in reviewers if u.pk == data["assignee"]), None)
        return lambda c: conflict_assign(conflict=c, assignee=assignee, actor=actor)
    if action == "snooze":
        until, more = form.until_moment(), data.get("more_sightings")
        return lambda c: conflict_snooze(conflict=c, actor=actor, until=until, more_sightings=more)
    return lambda c: conflict_resolve_by_deleting_older(conflict=c, actor=actor, note=data["reason"].strip())


@kb_view(write=Role.REVIEWER)
@require_POST
def conflict_bulk(request):
    """Dismiss, assign, snooze or resolve (deleting the older article) the selected conflicts."""
    filters = QueueFilterForm(request.POST).values()
    reviewers = selectors.kb_reviewers(knowledge_base=request.kb)
    form = BulkActionForm(request.POST, reviewers=reviewers)
    status = 200
    if not form.is_valid():
        notice, error, status = " ".join(e for errors in form.errors.values() for e in errors), True, 400
    else:
        ids = set(form.cleaned_data["ids"])
        conflicts = selectors.conflicts_by_ids(knowledge_base=request.kb, ids=ids)
        if len(conflicts) != len(ids):
            raise Http404("Not found in this knowledge base.")
        done, refused = conflicts_bulk(conflicts=conflicts, actor=request.user,
                                       action=_bulk_action(form, actor=request.user, reviewers=reviewers))
        verb = BULK_PAST[form.cleaned_data["action"]]
        notice = f"{verb} {done} conflict(s)." + (" Not done: " + " ".join(refused) if refused else "")
        error = bool(refused)
    if not request.htmx:
        (messages.error if error else messages.success)(request, notice)
        return redirect(reverse("conflict_queue") + query_string(_url_params(filters)))
    kept = {"selected_ids": _posted_ids(request), "bulk_reason": request.POST.get("reason", "")} if status != 200 else {}
    context = queue_context(request, filters=filters, position=request.POST, notice=notice,
                            notice_error=error, **kept)
    return render_page(request, "conflicts/queue.html", context, partial="queue", status=status)


BULK_PAST = {"dismiss": "Dismissed", "assign": "Assigned", "snooze": "Snoozed", "delete_older": "Resolved"}


def _position(data) -> dict:
    """Where the page starts: after / before a row's sort key (cursor), or the last page."""
    return {
        "after": (data.get("after") or "")[:500],
        "before": (data.get("before") or "")[:500],
        "last": data.get("last") == "1",
    }


def _posted_ids(request) -> frozenset:
    return frozenset(int(value) for value in request.POST.getlist("ids") if value.isdigit())
