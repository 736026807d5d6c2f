"""The console's shell: the dashboard, and switching the current knowledge base (kept in the session).

The dashboard shows the panels other apps register for it (kbreview.panels): the shell knows no conflict, so the
conflicts app fills it."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from articles.permissions import SESSION_KB_KEY, kb_view
from articles.selectors import membership_get
from kbreview.panels import DASHBOARD, panels_render
from kbreview.views.common import render_page


@kb_view()
def home(request):
    return render_page(request, "dashboard.html", {"panels": panels_render(slot=DASHBOARD, request=request)})


@login_required
@require_POST
def kb_switch(request):
    try:
        kb_id = int(request.POST.get("knowledge_base", ""))
    except ValueError:
        raise Http404("No such knowledge base.") from None
    membership = membership_get(user=request.user, knowledge_base_id=kb_id)
    if membership is None:
        raise Http404("No such knowledge base.")
    request.session[SESSION_KB_KEY] = membership.knowledge_base_id
    target = request.POST.get("next", "")
    # Object ids belong to one knowledge base, so go to the section's list, never the same object page.
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}) or not target.startswith("/"):
        target = reverse("home")
    return redirect(target)
