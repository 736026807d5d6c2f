"""The conflict queue: Open / Resolved / Dismissed tabs, filters, pagination, bulk dismiss."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from articles.models import Role
from conflicts import selectors
from conflicts.forms import BulkDismissForm, QueueFilterForm
from conflicts.models import Conflict, ConflictStatus, ConflictType
from conflicts.permissions import allows, kb_view
from conflicts.services import conflict_dismiss_many
from conflicts.views.common import query_string, render_page

PAGE_SIZE = 25


def _url_params(filters: dict) -> dict:
    return {
        "status": filters["status"],
        "type": filters["type"],
        "q": filters["query"],
        "article": filters["article_id"],
        "regressed": "1" if filters["regressed"] else "",
        "sort": "" if filters["sort"] == "impact" else filters["sort"],
    }


def queue_context(request, *, filters: dict, page_number=None, notice: str = "", notice_error: bool = False) -> dict:
    kb = request.kb
    counts = selectors.conflict_tab_counts(
        knowledge_base=kb, type=filters["type"], query=filters["query"], article_id=filters["article_id"],
        regressed=filters["regressed"],
    )
    paginator = Paginator(selectors.conflict_queue(knowledge_base=kb, **filters), PAGE_SIZE)
    paginator.count = counts[filters["status"]]  # already counted above: spare the page a second COUNT
    page = paginator.get_page(page_number)
    params = _url_params(filters)
    base = reverse("conflict_queue")
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
        "tabs": tabs,
        "page": page,
        "conflicts": list(page.object_list),
        "prev_url": base + query_string(params, page=page.previous_page_number()) if page.has_previous() else "",
        "next_url": base + query_string(params, page=page.next_page_number()) if page.has_next() else "",
        "sort_urls": [
            (value, label, base + query_string(params, sort="" if value == "impact" else value), value == filters["sort"])
            for value, label in QueueFilterForm.base_fields["sort"].choices
        ],
        "type_labels": dict(ConflictType.choices),
        "params": params,
        "can_review": allows(request, Role.REVIEWER),
        "is_open_tab": filters["status"] == ConflictStatus.OPEN,
        "notice": notice,
        "notice_error": notice_error,
        "impact_formula": selectors.impact_formula(),
    }


@kb_view()
def conflict_queue(request):
    filters = QueueFilterForm(request.GET).values()
    context = queue_context(request, filters=filters, page_number=request.GET.get("page"))
    return render_page(request, "conflicts/queue.html", context, partial="queue")


@kb_view(write=Role.REVIEWER)
@require_POST
def conflict_bulk_dismiss(request):
    filters = QueueFilterForm(request.POST).values()
    form = BulkDismissForm(request.POST)
    status = 200
    if not form.is_valid():
        notice, error, status = " ".join(e for errors in form.errors.values() for e in errors), True, 400
    else:
        ids = set(form.cleaned_data["ids"])
        conflicts = list(Conflict.objects.filter(knowledge_base=request.kb, pk__in=ids).order_by("pk"))
        if len(conflicts) != len(ids):
            raise Http404("Not found in this knowledge base.")
        dismissed, refused = conflict_dismiss_many(conflicts=conflicts, actor=request.user, reason=form.cleaned_data["reason"])
        notice = f"Dismissed {dismissed} conflict(s)." + (" Not dismissed: " + " ".join(refused) if refused else "")
        error = bool(refused)
    if not request.htmx:
        (messages.error if error else messages.success)(request, notice)
        return redirect(reverse("conflict_queue") + query_string(_url_params(filters)))
    context = queue_context(request, filters=filters, page_number=request.POST.get("page"), notice=notice, notice_error=error)
    return render_page(request, "conflicts/queue.html", context, partial="queue", status=status)
