"""The dashboard's conflicts panel: open conflicts, recent reviews, opened vs resolved per day, most conflicted
articles. The dashboard itself is the shell's (kbreview.views.shell.home); conflicts/apps.py registers this panel."""
from __future__ import annotations

from django.template.loader import render_to_string
from django.utils import timezone

from conflicts import selectors
from conflicts.views.display import bar_chart


def dashboard_panel(request) -> str:
    figures = selectors.dashboard_figures(knowledge_base=request.kb)
    context = {"figures": figures, "chart": bar_chart(days=figures.days, today=timezone.localdate())}
    return render_to_string("conflicts/_dashboard.html", context, request=request)
