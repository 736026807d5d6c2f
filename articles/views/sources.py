"""Sources (add, sync by hand with live progress, upload files, confirm pages gone) and drift review
(keep the console text, take the source's, or merge by hand)."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from articles import sources_selectors as selectors
from articles.forms import DriftKeepForm, DriftMergeForm, SourceForm
from articles.models import ACTIVE_SYNC_STATUSES, DriftStatus, PageState, Role, SourceKind, SyncStatus, SyncTrigger
from articles.permissions import allows, kb_view
from articles.services import ArticleInputError, StaleVersionError
from articles.sources import (
    SourceInputError,
    source_create,
    source_file_remove,
    source_files_upload,
    source_page_gone_confirm,
    source_sync_request,
    source_update,
)
from articles.sources_drift import DriftStateError, drift_keep, drift_merge, drift_take_source
from kbreview.views.common import render_page
from kbreview.views.display import diff_html, markdown_text, render_markdown

LIST_TEMPLATE = "articles/sources/list.html"
DETAIL_TEMPLATE = "articles/sources/detail.html"
DRIFT_LIST_TEMPLATE = "articles/sources/drift_list.html"
DRIFT_TEMPLATE = "articles/sources/drift_detail.html"
ERRORS_SHOWN = 100


def _source_or_404(request, pk: int):
    source = selectors.source_get(knowledge_base=request.kb, source_id=pk)
    if source is None:
        raise Http404("No such source in this knowledge base.")
    return source


def _sync_context(sync, *, recent: bool = False) -> dict:
    """One sync's progress; with `recent`, also the source's recent syncs, sent out of band with a
    partial so the "Recent syncs" table follows the sync without a reload."""
    if sync is None:
        return {"sync": None}
    context = {
        "sync": sync,
        "sync_active": sync.status in ACTIVE_SYNC_STATUSES,
        "sync_percent": int(100 * sync.done / sync.total) if sync.total else (100 if sync.status == SyncStatus.DONE else 0),
        "sync_errors": sync.page_errors[:ERRORS_SHOWN],
    }
    if recent:
        context.update(syncs=selectors.source_syncs(source=sync.source), recent_oob=True)
    return context


@kb_view(read=Role.VIEWER, write=Role.OPS)
def source_list_view(request):
    form = SourceForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                source = source_create(knowledge_base=request.kb, actor=request.user, **form.cleaned_data)
            except SourceInputError as exc:
                form.add_service_error(str(exc))
            else:
                url = reverse("source_detail", args=[source.pk])
                return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
        status = 400
    context = {
        "sources": list(selectors.source_list(knowledge_base=request.kb)),
        "form": form,
        "can_ops": allows(request, Role.OPS),
        "drift_pending": selectors.drift_pending_count(knowledge_base=request.kb),
    }
    return render_page(request, LIST_TEMPLATE, context, partial="create-form" if status == 400 else None, status=status)


def _detail_context(request, source, *, shown_sync=None, **extra) -> dict:
    syncs = selectors.source_syncs(source=source)
    latest = syncs[0] if syncs else None
    return {
        "source": source,
        "syncs": syncs,
        **_sync_context(shown_sync or latest),
        "awaiting_gone": list(selectors.source_pages(source=source, state=PageState.GONE_PENDING)),
        "failing_pages": list(selectors.source_pages(source=source, failing=True)[:ERRORS_SHOWN]),
        "files": selectors.source_file_rows(source=source, last_sync=latest) if source.kind == SourceKind.UPLOAD else [],
        "can_ops": allows(request, Role.OPS),
        "upload_error": "",
        **extra,
    }


@kb_view(read=Role.VIEWER, write=Role.OPS)
def source_detail(request, pk: int):
    """The source, its syncs and pages; a POST changes its settings (ops)."""
    source = _source_or_404(request, pk)
    initial = {f: getattr(source, f) for f in ("name", "kind", "location", "schedule", "gone_policy")}
    form = SourceForm(request.POST or None, initial=initial)
    form.fields["kind"].disabled = True  # a source keeps its kind; add another source instead
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = {k: v for k, v in form.cleaned_data.items() if k != "kind"}
            try:
                source_update(source=source, actor=request.user, **data)
            except SourceInputError as exc:
                form.add_service_error(str(exc))
            else:
                messages.success(request, "Source settings saved.")
                return redirect(reverse("source_detail", args=[source.pk]))
        status = 400
    return render_page(request, DETAIL_TEMPLATE, _detail_context(request, source, settings_form=form), status=status)


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def source_sync_start(request, pk: int):
    source = _source_or_404(request, pk)
    sync = source_sync_request(source=source, trigger=SyncTrigger.MANUAL, actor=request.user)
    sync.refresh_from_db()  # tests run tasks eagerly on commit: show what the sync reached
    if not request.htmx:
        messages.success(request, f"Sync of {source.name} started.")
        return redirect(reverse("source_detail", args=[source.pk]))
    return render_page(request, DETAIL_TEMPLATE, {"source": source, **_sync_context(sync, recent=True)}, partial="sync")


@kb_view(read=Role.VIEWER, write=Role.OPS)
def source_sync_progress(request, pk: int):
    """One sync's progress; the partial keeps polling every second while it is queued or running."""
    sync = selectors.source_sync_get(knowledge_base=request.kb, sync_id=pk)
    if sync is None:
        raise Http404("No such sync in this knowledge base.")
    if request.htmx:
        return render_page(request, DETAIL_TEMPLATE, {"source": sync.source, **_sync_context(sync, recent=True)},
                           partial="sync")
    # Opened as a page (a link, a reload): the source's page showing this sync, not its latest.
    source = sync.source
    initial = {f: getattr(source, f) for f in ("name", "kind", "location", "schedule", "gone_policy")}
    form = SourceForm(initial=initial)
    form.fields["kind"].disabled = True
    return render_page(request, DETAIL_TEMPLATE, _detail_context(request, source, shown_sync=sync, settings_form=form))


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def source_upload(request, pk: int):
    """Store the uploaded files (all or none), then sync the source; answers with the sync's progress."""
    source = _source_or_404(request, pk)
    try:
        source_files_upload(
            source=source, files=[(f.name, f.read()) for f in request.FILES.getlist("files")], actor=request.user
        )
    except SourceInputError as exc:
        if not request.htmx:
            messages.error(request, str(exc))
            return redirect(reverse("source_detail", args=[source.pk]))
        return render_page(request, DETAIL_TEMPLATE, {"source": source, "upload_error": str(exc), "sync": None},
                           partial="sync", status=400)
    sync = source_sync_request(source=source, trigger=SyncTrigger.UPLOAD, actor=request.user)
    sync.refresh_from_db()
    if not request.htmx:
        messages.success(request, "Files uploaded; syncing.")
        return redirect(reverse("source_detail", args=[source.pk]))
    return render_page(request, DETAIL_TEMPLATE, {"source": source, **_sync_context(sync, recent=True)}, partial="sync")


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def source_file_remove_view(request, pk: int, file_pk: int):
    """Remove one uploaded file, then sync: its articles leave by the source's policy, its errors stop."""
    source = _source_or_404(request, pk)
    if not source.files.filter(pk=file_pk).exists():
        raise Http404("No such file in this source.")
    try:
        name = source_file_remove(source=source, file_id=file_pk, actor=request.user)
    except SourceInputError as exc:
        messages.error(request, str(exc).removeprefix("files: "))
    else:
        source_sync_request(source=source, trigger=SyncTrigger.MANUAL, actor=request.user)
        messages.success(request, f"Removed {name}; syncing, so its articles leave the source "
                                  f"({source.get_gone_policy_display().lower()}).")
    url = reverse("source_detail", args=[source.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def source_page_confirm_gone(request, pk: int):
    page = selectors.source_page_get(knowledge_base=request.kb, page_id=pk)
    if page is None:
        raise Http404("No such page in this knowledge base.")
    try:
        source_page_gone_confirm(page=page, actor=request.user)
    except SourceInputError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{page.key} confirmed gone; its article left retrieval (it can be restored).")
    return redirect(reverse("source_detail", args=[page.source_id]))


# --- drift review ------------------------------------------------------------------------------


@kb_view()
def drift_list(request):
    status = request.GET.get("status", DriftStatus.PENDING)
    if status not in DriftStatus.values:
        status = DriftStatus.PENDING
    items = list(selectors.drift_items(knowledge_base=request.kb, status=status)[:200])
    return render_page(request, DRIFT_LIST_TEMPLATE, {"items": items, "status": status, "statuses": DriftStatus.choices})


def _drift_or_404(request, pk: int):
    item = selectors.drift_get(knowledge_base=request.kb, item_id=pk)
    if item is None:
        raise Http404("No such change in this knowledge base.")
    return item


def _drift_context(request, item, *, merge_form=None, error: str = "") -> dict:
    console = item.console_version
    return {
        "item": item,
        "console": console,
        # Both texts rendered from Markdown, and their difference in words (a heading's "#" is not a change
        # a reviewer reads).
        "console_html": render_markdown(text=console.body)[0],
        "source_html": render_markdown(text=item.source_body)[0],
        "diff": diff_html(old=f"{console.title}\n{markdown_text(console.body)}",
                          new=f"{item.source_title}\n{markdown_text(item.source_body)}"),
        "can_review": allows(request, Role.REVIEWER) and item.status == DriftStatus.PENDING,
        "merge_form": merge_form or DriftMergeForm(initial={"title": item.source_title, "body": item.source_body}),
        "error": error,
    }


@kb_view()
def drift_detail(request, pk: int):
    item = _drift_or_404(request, pk)
    return render_page(request, DRIFT_TEMPLATE, _drift_context(request, item))


@kb_view(write=Role.REVIEWER)
@require_POST
def drift_decide(request, pk: int, decision: str):
    item = _drift_or_404(request, pk)
    merge_form = None
    try:
        if decision == "keep":
            form = DriftKeepForm(request.POST)
            drift_keep(item=item, actor=request.user, note=form.cleaned_data["note"] if form.is_valid() else "")
            message = "Kept the console text; the source's change was set aside."
        elif decision == "take":
            drift_take_source(item=item, actor=request.user)
            message = "Took the source's text; it is in retrieval now."
        elif decision == "merge":
            merge_form = DriftMergeForm(request.POST)
            if not merge_form.is_valid():
                return render_page(request, DRIFT_TEMPLATE, _drift_context(request, item, merge_form=merge_form), status=400)
            drift_merge(item=item, actor=request.user, **merge_form.cleaned_data)
            message = "Saved the merged text; it is in retrieval now."
        else:
            raise Http404("Unknown decision.")
    except (DriftStateError, StaleVersionError, ArticleInputError) as exc:
        item = _drift_or_404(request, pk)
        return render_page(request, DRIFT_TEMPLATE, _drift_context(request, item, merge_form=merge_form, error=str(exc)),
                           status=409)
    messages.success(request, message)
    return redirect(reverse("drift_detail", args=[item.pk]))
