"""Who may see and change what in the console, checked in the view (never only in a template: an
HTMX partial request can skip any template).

The current knowledge base comes from `?kb=<slug>` (which also switches the session) or the session;
without either, the user's first membership. Objects are then always looked up inside that knowledge
base, so another one's ids answer 404.
"""
from __future__ import annotations

from functools import wraps
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from django.shortcuts import render
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from articles.models import Membership, Role

SESSION_KB_KEY = "kbreview_kb_id"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def user_memberships(user) -> list[Membership]:
    return list(Membership.objects.filter(user=user).select_related("knowledge_base").order_by("knowledge_base__name"))


def current_membership(request: HttpRequest, memberships: list[Membership]) -> Membership | None:
    """The membership for this request's knowledge base; 404 for a `?kb=` the user is not a member of."""
    by_id = {m.knowledge_base_id: m for m in memberships}
    slug = request.GET.get("kb")
    if slug:
        chosen = next((m for m in memberships if m.knowledge_base.slug == slug), None)
        if chosen is None:
            raise Http404("No such knowledge base.")
        request.session[SESSION_KB_KEY] = chosen.knowledge_base_id
        return chosen
    chosen = by_id.get(request.session.get(SESSION_KB_KEY))
    if chosen is None and memberships:
        chosen = memberships[0]
        request.session[SESSION_KB_KEY] = chosen.knowledge_base_id
    return chosen


def kb_view(*, read: str = Role.VIEWER, write: str = Role.REVIEWER):
    """Require sign-in, a membership in the current knowledge base, and `read` (safe methods) or
    `write` (every other method, HTMX partial posts included); sets request.kb / request.membership."""

    def decorator(view):
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs):
            if not request.user.is_authenticated:
                if getattr(request, "htmx", False):
                    # A partial swap must not paint the login page into a table cell.
                    return HttpResponseClientRedirect(_login_url(request))
                return redirect_to_login(request.get_full_path())
            memberships = user_memberships(request.user)
            membership = current_membership(request, memberships)
            if membership is None:
                return render(request, "no_kb.html", status=403)
            # Set before the role check, so the 403 page keeps the menu of the knowledge base the user is in.
            request.kb = membership.knowledge_base
            request.membership = membership
            request.memberships = memberships
            needed = read if request.method in SAFE_METHODS else write
            if not membership.allows(needed):
                raise PermissionDenied(f"This needs the {Role(needed).label.lower()} role in {membership.knowledge_base}.")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def _login_url(request: HttpRequest) -> str:
    current = getattr(request.htmx, "current_url_abs_path", None) or "/"
    return f"{reverse(settings.LOGIN_URL)}?next={quote(current)}"


def allows(request: HttpRequest, role: str) -> bool:
    membership = getattr(request, "membership", None)
    return membership is not None and membership.allows(role)
