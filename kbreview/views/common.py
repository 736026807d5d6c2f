"""What every console view shares, whichever app it belongs to: rendering a page or, for HTMX, one partial of the
same template; an object of the current knowledge base or 404; a query string."""
from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers


def wants_partial(request: HttpRequest) -> bool:
    htmx = getattr(request, "htmx", None)
    # A history restore (back button after the cache expired) needs the whole page.
    return bool(htmx) and not htmx.history_restore_request and not htmx.boosted


def render_page(
    request: HttpRequest, template: str, context: dict, *, partial: str | None = None, status: int = 200
) -> HttpResponse:
    """One view, one template: the full page, or `template#partial` for an HTMX request."""
    name = f"{template}#{partial}" if partial and wants_partial(request) else template
    response = render(request, name, context, status=status)
    # The same URL answers a page or a fragment; caches must keep them apart.
    patch_vary_headers(response, ["HX-Request"])
    return response


def get_in_kb_or_404(queryset, *, knowledge_base, pk, kb_field: str = "knowledge_base"):
    """An object of the current knowledge base, or 404 (never another knowledge base's data)."""
    obj = queryset.filter(**{kb_field: knowledge_base, "pk": pk}).first()
    if obj is None:
        raise Http404("Not found in this knowledge base.")
    return obj


def query_string(params: dict, **changes) -> str:
    merged = {**params, **changes}
    return "?" + urlencode({k: v for k, v in merged.items() if v not in (None, "")})
