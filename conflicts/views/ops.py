"""Ops: index re-sync with live progress, index and detection health, API tokens."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from articles.indexing import index_sync_start
from articles.models import IndexSyncJob, Role, SyncStatus
from articles.permissions import kb_view
from articles.selectors import latest_index_sync_job, stale_articles
from conflicts import selectors
from conflicts.forms import ApiTokenForm, ResyncForm
from conflicts.models import ApiToken
from conflicts.services import api_token_create, api_token_revoke
from conflicts.services.tokens import TokenInputError
from kbreview.views.common import get_in_kb_or_404, render_page

TEMPLATE = "conflicts/ops.html"
STALE_SHOWN = 50


def ops_context(request, **extra) -> dict:
    kb = request.kb
    stale = stale_articles(knowledge_base=kb).only("pk", "external_ref", "title", "status")
    job = latest_index_sync_job(knowledge_base=kb)
    return {
        "job": job,
        "job_active": job is not None and job.status in (SyncStatus.QUEUED, SyncStatus.RUNNING),
        "stale_count": stale.count(),
        "stale": list(stale[:STALE_SHOWN]),
        "health": selectors.detection_health(knowledge_base=kb),
        "tokens": list(selectors.api_tokens(knowledge_base=kb)),
        "failed_deliveries": selectors.notification_delivery_counts(knowledge_base=kb)["failed"],
        "resync_form": ResyncForm(),
        "token_form": ApiTokenForm(),
        "new_secret": "",
        "now": timezone.now(),
        **extra,
    }


def _job_context(job: IndexSyncJob) -> dict:
    return {
        "job": job,
        "job_active": job.status in (SyncStatus.QUEUED, SyncStatus.RUNNING),
        "job_percent": int(100 * job.done / job.total) if job.total else (100 if job.status == SyncStatus.DONE else 0),
    }


@kb_view(read=Role.OPS, write=Role.OPS)
def ops_home(request):
    context = ops_context(request)
    if context["job"] is not None:
        context.update(_job_context(context["job"]))
    return render_page(request, TEMPLATE, context)


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def ops_resync(request):
    form = ResyncForm(request.POST)
    full = form.is_valid() and form.cleaned_data["full"]
    job = index_sync_start(knowledge_base=request.kb, full=full, actor=request.user)
    if not request.htmx:
        messages.success(request, "Re-sync started.")
        return redirect(reverse("ops_home"))
    return render_page(request, TEMPLATE, {**ops_context(request), **_job_context(job)}, partial="sync")


@kb_view(read=Role.OPS, write=Role.OPS)
def ops_sync_job(request, pk: int):
    """Progress of one job; the partial keeps polling every second while the job is queued or running."""
    job = get_in_kb_or_404(IndexSyncJob.objects.all(), knowledge_base=request.kb, pk=pk)
    if request.htmx:
        return render_page(request, TEMPLATE, {**_job_context(job)}, partial="sync")
    return render_page(request, TEMPLATE, {**ops_context(request), **_job_context(job)})


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def ops_token_create(request):
    form = ApiTokenForm(request.POST)
    if not form.is_valid():
        return render_page(request, TEMPLATE, ops_context(request, token_form=form), partial="tokens", status=400)
    try:
        _, secret = api_token_create(knowledge_base=request.kb, name=form.cleaned_data["name"], actor=request.user,
                                     scopes=form.cleaned_data["scopes"], expires_at=form.expires_at())
    except TokenInputError as exc:
        form.add_error("scopes", str(exc))
        return render_page(request, TEMPLATE, ops_context(request, token_form=form), partial="tokens", status=400)
    # Rendered in this response only (no redirect, nothing in the session): it cannot be shown again.
    response = render_page(request, TEMPLATE, ops_context(request, new_secret=secret), partial="tokens", status=201)
    response["Cache-Control"] = "no-store"
    return response


@kb_view(read=Role.OPS, write=Role.OPS)
@require_POST
def ops_token_revoke(request, pk: int):
    token = get_in_kb_or_404(ApiToken.objects.all(), knowledge_base=request.kb, pk=pk)
    api_token_revoke(token=token, actor=request.user)
    if not request.htmx:
        messages.success(request, f"Token {token.name} revoked.")
        return redirect(reverse("ops_home"))
    return render_page(request, TEMPLATE, ops_context(request), partial="tokens")
