"""Articles: list and retrieval search, detail with version history and diffs, edit, restore.

The article page and the restore confirmation show the panels apps above register for them (kbreview.panels): the
conflicts an article is part of, the reviewed ones a restore would reopen."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from articles import selectors as article_selectors
from articles.forms import ArticleEditForm
from articles.indexing import article_reindex
from articles.models import Article, ArticleStatus, ArticleVersion, Role
from articles.permissions import allows, kb_view
from articles.services import (
    ArticleInputError,
    StaleVersionError,
    article_edit,
    article_restore,
    article_version_restore,
)
from articles.views.display import stale_message
from kbreview.panels import ARTICLE_DETAIL, ARTICLE_RESTORE, panels_render
from kbreview.views.common import get_in_kb_or_404, query_string, render_page
from kbreview.views.display import diff_html, render_markdown

PAGE_SIZE = 50


@kb_view()
def article_list(request):
    query = request.GET.get("q", "").strip()[:300]
    mode = "retrieval" if request.GET.get("mode") == "retrieval" else "titles"
    include_deleted = request.GET.get("deleted") == "1"
    context = {"q": query, "mode": mode, "include_deleted": include_deleted, "hits": None, "page": None}
    if mode == "retrieval" and query:
        # What the chatbot's retrieval returns for this question, right now.
        context["hits"] = article_selectors.search(knowledge_base=request.kb, question=query)
    else:
        articles = article_selectors.article_list(knowledge_base=request.kb, include_deleted=include_deleted, query=query)
        page = Paginator(articles, PAGE_SIZE).get_page(request.GET.get("page"))
        params = {"q": query, "deleted": "1" if include_deleted else ""}
        context.update(
            page=page,
            prev_url=query_string(params, page=page.previous_page_number()) if page.has_previous() else "",
            next_url=query_string(params, page=page.next_page_number()) if page.has_next() else "",
        )
    return render_page(request, "articles/list.html", context, partial="results")


def _article_or_404(request, pk: int) -> Article:
    return get_in_kb_or_404(Article.objects.select_related("current_version"), knowledge_base=request.kb, pk=pk)


def _version_diff(request, article: Article, versions: list[ArticleVersion]):
    by_id = {v.pk: v for v in versions}
    try:
        from_id, to_id = int(request.GET.get("from", 0)), int(request.GET.get("to", 0))
    except ValueError:
        raise Http404("Unknown version.") from None
    if not (from_id or to_id):
        return None
    old, new = by_id.get(from_id), by_id.get(to_id)
    if old is None or new is None:
        raise Http404("Unknown version.")  # another article's (or knowledge base's) version id
    return {"old": old, "new": new, "diff": diff_html(old=f"{old.title}\n\n{old.body}", new=f"{new.title}\n\n{new.body}")}


def article_context(request, article: Article, *, edit_form=None, error: str = "") -> dict:
    versions = list(article_selectors.article_versions(article=article))
    current = article.current_version
    return {
        "article": article,
        "body_html": render_markdown(text=current.body if current else "")[0],
        "versions": versions,
        "deleted": article.status == ArticleStatus.DELETED,
        "version_diff": _version_diff(request, article, versions),
        "panels": panels_render(slot=ARTICLE_DETAIL, request=request, article=article),
        "can_review": allows(request, Role.REVIEWER),
        "edit_form": edit_form
        or ArticleEditForm(
            initial={
                "title": current.title if current else article.title,
                "body": current.body if current else "",
                "expected_version_id": article.current_version_id,
            }
        ),
        "error": error,
    }


@kb_view()
def article_detail(request, pk: int):
    article = _article_or_404(request, pk)
    partial = "version-diff" if "from" in request.GET else None
    return render_page(request, "articles/detail.html", article_context(request, article), partial=partial)


def _back(request, article: Article, message: str):
    messages.success(request, message)
    url = reverse("article_detail", args=[article.pk])
    # An HTMX post (the edit form swaps itself) must load the article page, not paint it inside the form.
    return HttpResponseClientRedirect(url) if getattr(request, "htmx", False) else redirect(url)


@kb_view(write=Role.REVIEWER)
@require_POST
def article_edit_view(request, pk: int):
    article = _article_or_404(request, pk)
    form = ArticleEditForm(request.POST)
    status, error = 400, ""
    if form.is_valid():
        try:
            article_edit(
                article=article,
                expected_version_id=form.cleaned_data["expected_version_id"],
                title=form.cleaned_data["title"],
                body=form.cleaned_data["body"],
                note=form.cleaned_data["note"],
                actor=request.user,
            )
        except StaleVersionError as exc:
            status, error = 409, stale_message(exc)
        except ArticleInputError as exc:
            error = str(exc)
        else:
            article_reindex(article_id=article.pk)  # the edit reaches retrieval before we answer
            return _back(request, article, "Saved as a new version and re-indexed.")
    article = _article_or_404(request, pk)
    return render_page(request, "articles/detail.html", article_context(request, article, edit_form=form, error=error),
                       partial="edit-form", status=status)


def _confirm_restore(request, article: Article, *, version: ArticleVersion | None, expected: int | None = None):
    """Before a restore that an ARTICLE_RESTORE panel warns about (reviewed conflicts it would bring back): show the
    warnings, and ask to confirm.

    Returns the confirmation page, or None when no panel warns or the user confirmed."""
    if request.method == "POST" and request.POST.get("confirm") == "1":
        return None
    warnings = panels_render(slot=ARTICLE_RESTORE, request=request, article=article, version=version)
    if not warnings:
        return None
    context = {"article": article, "version": version, "warnings": warnings, "expected_version_id": expected}
    return render_page(request, "articles/restore_confirm.html", context)


def _restore_by_get(request, article: Article, *, version: ArticleVersion | None):
    """A restore URL opened by GET (a reload of the confirm page, the back button, a shared link) restores
    nothing: a reviewer sees the confirm page again when reviewed conflicts would come back, anyone else
    goes back to the article with a word on what to do."""
    deleted = article.status == ArticleStatus.DELETED
    applicable = deleted if version is None else (not deleted and version.pk != article.current_version_id)
    if applicable and allows(request, Role.REVIEWER):
        confirmation = _confirm_restore(request, article, version=version, expected=None if version is None
                                        else article.current_version_id)
        if confirmation is not None:
            return confirmation
        what = "Restore this article" if version is None else f"Restore this version (v{version.number})"
        messages.info(request, f"Nothing was restored yet: use “{what}” below.")
    elif applicable:
        messages.info(request, "Nothing was restored: restoring needs the reviewer role.")
    else:
        messages.info(request, "Nothing to restore: this is already the current text.")
    return redirect(reverse("article_detail", args=[article.pk]))


@kb_view(write=Role.REVIEWER)
@require_http_methods(["GET", "HEAD", "POST"])
def article_restore_view(request, pk: int):
    article = _article_or_404(request, pk)
    if request.method != "POST":
        return _restore_by_get(request, article, version=None)
    confirmation = _confirm_restore(request, article, version=None)
    if confirmation is not None:
        return confirmation
    article_restore(article=article, actor=request.user, note=request.POST.get("note", "")[:2000])
    return _back(request, article, "Restored and re-indexed.")


@kb_view(write=Role.REVIEWER)
@require_http_methods(["GET", "HEAD", "POST"])
def article_version_restore_view(request, pk: int, version_pk: int):
    article = _article_or_404(request, pk)
    version = article_selectors.article_version_get(article=article, version_id=version_pk)
    if version is None:
        raise Http404("Unknown version.")
    if request.method != "POST":
        return _restore_by_get(request, article, version=version)
    try:
        expected = int(request.POST.get("expected_version_id", ""))
    except ValueError:
        expected = -1  # a missing version id can never match: refuse rather than overwrite blindly
    confirmation = _confirm_restore(request, article, version=version, expected=expected)
    if confirmation is not None:
        return confirmation
    try:
        article_version_restore(article=article, version=version, expected_version_id=expected, actor=request.user)
    except StaleVersionError as exc:
        article = _article_or_404(request, pk)
        return render_page(request, "articles/detail.html",
                           article_context(request, article, error=stale_message(exc)), status=409)
    return _back(request, article, f"v{version.number} restored as a new version and re-indexed.")
