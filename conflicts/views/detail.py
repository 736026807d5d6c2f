"""One conflict: both articles side by side, occurrences, timeline; resolve, dismiss, reopen."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from agents.configuration import llm_config_for
from articles.models import ArticleStatus, Role
from articles.permissions import allows, kb_view
from articles.services import ArticleInputError, StaleVersionError
from articles.views.display import stale_message
from conflicts import selectors
from conflicts.forms import AssignForm, CommentForm, DismissForm, ReopenForm, ResolveForm, SnoozeForm
from conflicts.models import Conflict, ConflictStatus, ConflictType, ReviewWinner
from conflicts.services import (
    ConflictStateError,
    conflict_assign,
    conflict_comment,
    conflict_dismiss,
    conflict_reopen,
    conflict_resolve,
    conflict_snooze,
    conflict_unsnooze,
)
from conflicts.services.suggestions import suggestion_enqueue
from conflicts.views.display import conflict_explanation
from conflicts.views.queue_memory import queue_filters_remembered
from kbreview.views.common import query_string, render_page, wants_partial
from kbreview.views.display import diff_html, render_markdown

TEMPLATE = "conflicts/detail.html"


def _conflict_or_404(request, pk: int) -> Conflict:
    try:
        return selectors.conflict_detail(knowledge_base=request.kb, conflict_id=pk)
    except Conflict.DoesNotExist:
        raise Http404("Not found in this knowledge base.") from None


def _side(conflict: Conflict, side: str) -> dict:
    article = conflict.article_low if side == "low" else conflict.article_high
    version = article.current_version
    snippet = conflict.snippet_low if side == "low" else conflict.snippet_high
    body = version.body if version else ""
    html, found = render_markdown(text=body, snippet=snippet)
    return {
        "side": side,
        "letter": "A" if side == "low" else "B",
        "article": article,
        "version": version,
        "deleted": article.status == ArticleStatus.DELETED,
        "body_html": html,
        "snippet": snippet,
        "snippet_found": found,
    }


def _sides(conflict: Conflict) -> list[str]:
    """The sides a reviewer sees and may fix: both of a pair, the one article of a finding."""
    return ["low", "high"] if conflict.is_pair else ["low"]


def _resolve_form(conflict: Conflict, data=None, suggestion=None) -> ResolveForm:
    """The resolve form; with `suggestion`, pre-filled with its proposed edit for the reviewer to confirm."""
    initial = {}
    for side in _sides(conflict):
        article = conflict.article_low if side == "low" else conflict.article_high
        initial[f"{side}_action"] = "keep"
        initial[f"{side}_body"] = article.current_version.body if article.current_version else ""
        initial[f"{side}_expected_version_id"] = article.current_version_id
        if suggestion is not None and suggestion.edit_article_id == article.pk and suggestion.proposed_edit:
            initial[f"{side}_action"] = "edit"
            initial[f"{side}_body"] = suggestion.proposed_edit
    if suggestion is not None and suggestion.winner_id:
        initial["winner"] = ReviewWinner.LOW if suggestion.winner_id == conflict.article_low_id else ReviewWinner.HIGH
    form = ResolveForm(data, initial=initial, conflict=conflict)
    if not conflict.is_pair:
        return form  # no sides to choose between (ResolveForm left out the second side and the winner)
    form.fields["winner"].choices = [
        ("", "Let the edit decide"),
        (ReviewWinner.LOW, f"A: {conflict.article_low.title}"),
        (ReviewWinner.HIGH, f"B: {conflict.article_high.title}"),
        (ReviewWinner.NEITHER, ReviewWinner.NEITHER.label),
        (ReviewWinner.BOTH, ReviewWinner.BOTH.label),
    ]
    return form


def detail_context(request, conflict: Conflict, *, resolve_form=None, dismiss_form=None, reopen_form=None,
                   action_error: str = "") -> dict:
    sides = [_side(conflict, side) for side in _sides(conflict)]
    # A one-article finding has no suggestion (MACR judges pairs) and no second passage to compare.
    suggestion = selectors.conflict_suggestion(conflict=conflict) if conflict.is_pair else None
    applying = suggestion is not None and request.GET.get("apply") == "1" and resolve_form is None
    # The relevant passages are the snippets; without them, the whole texts.
    passages = [
        (conflict.snippet_for(s["article"].pk) or (s["version"].body if s["version"] else "")) for s in sides
    ]
    return {
        "conflict": conflict,
        "explanation": conflict_explanation(conflict),
        "sides": sides,
        "type_label": ConflictType(conflict.type).label if conflict.type in ConflictType.values else conflict.type,
        "passage_diff": diff_html(old=passages[0], new=passages[1]) if conflict.is_pair else None,
        **occurrence_context(request, conflict),
        "activity": selectors.conflict_activity(conflict=conflict),
        "policy_effect": selectors.conflict_policy_effect(conflict=conflict),
        "can_review": allows(request, Role.REVIEWER),
        "is_open": conflict.status == ConflictStatus.OPEN,
        "resolve_form": resolve_form or _resolve_form(conflict, suggestion=suggestion if applying else None),
        "suggestion": suggestion,
        "applying": applying,
        # Computed on other versions than those shown: say so rather than present it as current.
        "suggestion_outdated": suggestion is not None
        and (suggestion.version_low_id, suggestion.version_high_id)
        != (conflict.article_low.current_version_id, conflict.article_high.current_version_id),
        "suggestions_llm": llm_config_for("suggestions") is not None,
        "dismiss_form": dismiss_form or DismissForm(),
        "reopen_form": reopen_form or ReopenForm(),
        "action_error": action_error,
        # Right after resolve or dismiss: an undo (reopen) and the next open conflict, so no dead end.
        "just_done": request.GET.get("done") if conflict.status != ConflictStatus.OPEN else "",
        **next_and_back(request, conflict),
        **triage_context(request, conflict),
    }


def next_and_back(request, conflict: Conflict) -> dict:
    """The next open conflict in the queue's remembered sort, and the way back to the queue as it was left
    (its filters and sort, on this conflict's tab)."""
    remembered = queue_filters_remembered(request)
    return {
        "next_conflict": selectors.next_open_conflict(knowledge_base=request.kb, exclude_id=conflict.pk,
                                                      sort=remembered.get("sort") or "impact"),
        "queue_back_url": reverse("conflict_queue") + query_string(remembered, status=conflict.status),
    }


def triage_context(request, conflict: Conflict, *, assign_form=None, comment_form=None, snooze_form=None,
                   triage_error: str = "") -> dict:
    reviewers = selectors.kb_reviewers(knowledge_base=request.kb) if allows(request, Role.REVIEWER) else []
    return {
        "reviewers": reviewers,
        "assign_form": assign_form or AssignForm(reviewers=reviewers, initial={"assignee": conflict.assignee_id}),
        "comment_form": comment_form or CommentForm(),
        "snooze_form": snooze_form or SnoozeForm(),
        "snoozed": conflict.snoozed_at(timezone.now()),
        "triage_error": triage_error,
    }


def occurrence_context(request, conflict: Conflict) -> dict:
    cited = request.GET.get("cited", "")
    cited = cited if cited in selectors.OCCURRENCE_FILTERS else ""
    counts = selectors.occurrence_counts(conflict=conflict)
    base = reverse("conflict_detail", args=[conflict.pk])
    return {
        "occurrences": selectors.conflict_occurrences(conflict=conflict, cited=cited),
        "occurrence_filter": cited,
        "occurrence_filters": [
            {"name": name, "label": label, "count": counts[name], "active": name == cited,
             "url": base + (f"?cited={name}" if name else "") + "#occurrences"}
            for name, (label, _) in selectors.OCCURRENCE_FILTERS.items()
        ],
        "occurrence_total": counts[""],
    }


@kb_view()
def conflict_detail_view(request, pk: int):
    conflict = _conflict_or_404(request, pk)
    if "cited" in request.GET and wants_partial(request):
        return render_page(request, TEMPLATE, {"conflict": conflict, **occurrence_context(request, conflict)},
                           partial="occurrences")
    return render_page(request, TEMPLATE, detail_context(request, conflict))


def _done(request, conflict: Conflict, message: str, *, done: str = ""):
    messages.success(request, message)
    url = reverse("conflict_detail", args=[conflict.pk]) + (f"?done={done}" if done else "")
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@kb_view(write=Role.REVIEWER)
@require_POST
def conflict_resolve_view(request, pk: int):
    conflict = _conflict_or_404(request, pk)
    form = _resolve_form(conflict, request.POST)
    status = 400
    if form.is_valid():
        try:
            conflict_resolve(
                conflict=conflict,
                fixes=form.fixes(),
                actor=request.user,
                note=form.cleaned_data["note"].strip(),
                winner=form.cleaned_data.get("winner", ""),
            )
        except StaleVersionError as exc:
            # Nothing was written: the service works in one transaction and refuses before it commits.
            form.add_error(None, stale_message(exc))
            status = 409
        except ConflictStateError as exc:
            form.add_error(None, str(exc))
            status = 409
        except ArticleInputError as exc:
            form.add_error(None, str(exc))
        else:
            return _done(request, conflict, "Resolved. The edited articles are re-indexed and retrieval shows the fix.",
                         done="resolved")
    conflict = _conflict_or_404(request, pk)  # show the texts as they are now
    context = detail_context(request, conflict, resolve_form=form)
    return render_page(request, TEMPLATE, context, partial="resolve-form", status=status)


@kb_view(write=Role.REVIEWER)
@require_POST
def conflict_preview(request, pk: int):
    """The proposed change of one article as a diff against its current version (writes nothing)."""
    conflict = _conflict_or_404(request, pk)
    side = request.POST.get("side")
    if side not in _sides(conflict):
        raise Http404("Unknown side.")
    article = conflict.article_low if side == "low" else conflict.article_high
    current = article.current_version.body if article.current_version else ""
    proposed = request.POST.get(f"{side}_body", "")
    context = {"conflict": conflict, "preview_side": side, "preview": diff_html(old=current, new=proposed)}
    return render_page(request, TEMPLATE, {**detail_context(request, conflict), **context}, partial="preview")


@kb_view(write=Role.REVIEWER)
@require_POST
def conflict_suggestion_recompute(request, pk: int):
    conflict = _conflict_or_404(request, pk)
    if not conflict.is_pair:
        raise Http404("A finding about one article has no suggestion.")
    suggestion_enqueue(conflict_id=conflict.pk, force=True)
    return _done(request, conflict, "The suggestion is being recomputed.")


@kb_view(write=Role.REVIEWER)
@require_POST
def conflict_dismiss_view(request, pk: int):
    conflict = _conflict_or_404(request, pk)
    form = DismissForm(request.POST)
    status, error = 400, ""
    if form.is_valid():
        try:
            conflict_dismiss(conflict=conflict, actor=request.user, reason=form.cleaned_data["reason"])
        except ConflictStateError as exc:
            status, error = 409, str(exc)
        else:
            return _done(request, conflict, "Dismissed: the difference is recorded as intentional.", done="dismissed")
    conflict = _conflict_or_404(request, pk)
    context = detail_context(request, conflict, dismiss_form=form, action_error=error)
    return render_page(request, TEMPLATE, context, partial="review-actions", status=status)


@kb_view(write=Role.REVIEWER)
@require_POST
def conflict_reopen_view(request, pk: int):
    conflict = _conflict_or_404(request, pk)
    form = ReopenForm(request.POST)
    status, error = 400, ""
    if form.is_valid():
        try:
            conflict_reopen(conflict=conflict, actor=request.user, note=form.cleaned_data["note"].strip())
        except ConflictStateError as exc:
            status, error = 409, str(exc)
        else:
            return _done(request, conflict, "Reopened.")
    conflict = _conflict_or_404(request, pk)
    context = detail_context(request, conflict, reopen_form=form, action_error=error)
    return render_page(request, TEMPLATE, context, partial="review-actions", status=status)


def _triage_answer(request, conflict: Conflict, *, status: int = 200, just_snoozed: bool = False, **forms):
    """The triage card again (HTMX) with the activity timeline, or back to the page. A snooze takes the conflict
    out of the Open queue: the card then offers the next open conflict."""
    if not request.htmx and status == 200:
        if just_snoozed:
            messages.success(request, "Snoozed: it leaves the Open queue until the snooze ends.")
        return redirect(reverse("conflict_detail", args=[conflict.pk]))
    conflict = _conflict_or_404(request, conflict.pk)
    context = {"conflict": conflict, "can_review": True, "activity": selectors.conflict_activity(conflict=conflict),
               "just_snoozed": just_snoozed, **next_and_back(request, conflict), **triage_context(request, conflict, **forms)}
    return render_page(request, TEMPLATE, context, partial="triage", status=status)


def _triage_post(request, pk: int, *, form, form_name: str, apply):
    """Validate one triage form; on success call `apply(conflict, cleaned_data)` (a service)."""
    conflict = _conflict_or_404(request, pk)
    if not form.is_valid():
        return _triage_answer(request, conflict, status=400, **{form_name: form})
    apply(conflict, form.cleaned_data)
    return _triage_answer(request, conflict)


@kb_view(write=Role.REVIEWER)
@require_POST
def conflict_assign_view(request, pk: int):
    reviewers = selectors.kb_reviewers(knowledge_base=request.kb)

    def assign(conflict, data):
        assignee = next((u for u in reviewers if u.pk == data["assignee"]), None)
        conflict_assign(conflict=conflict, assignee=assignee, actor=request.user)

    return _triage_post(request, pk, form=AssignForm(request.POST, reviewers=reviewers), form_name="assign_form",
                        apply=assign)


@kb_view(write=Role.REVIEWER)
@require_POST
def conflict_comment_view(request, pk: int):
    return _triage_post(request, pk, form=CommentForm(request.POST), form_name="comment_form",
                        apply=lambda c, data: conflict_comment(conflict=c, actor=request.user, text=data["text"]))


@kb_view(write=Role.REVIEWER)
@require_POST
def conflict_snooze_view(request, pk: int):
    conflict = _conflict_or_404(request, pk)
    form = SnoozeForm(request.POST)
    if not form.is_valid():
        return _triage_answer(request, conflict, status=400, snooze_form=form)
    try:
        conflict_snooze(conflict=conflict, actor=request.user, until=form.until_moment(),
                        more_sightings=form.cleaned_data.get("more_sightings"))
    except ConflictStateError as exc:
        return _triage_answer(request, conflict, status=409, snooze_form=form, triage_error=str(exc))
    return _triage_answer(request, conflict, just_snoozed=True)


@kb_view(write=Role.REVIEWER)
@require_POST
def conflict_unsnooze_view(request, pk: int):
    conflict = _conflict_or_404(request, pk)
    conflict_unsnooze(conflict=conflict, actor=request.user, note="Snooze ended by hand.")
    return _triage_answer(request, conflict)
