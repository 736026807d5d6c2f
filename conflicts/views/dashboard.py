"""Home: open conflicts, recent reviews, opened vs resolved per day, most conflicted articles."""
from __future__ import annotations

from django.utils import timezone

from conflicts import selectors
from conflicts.permissions import kb_view
from conflicts.views.common import render_page
from conflicts.views.display import bar_chart


@kb_view()
def home(request):
    figures = selectors.dashboard_figures(knowledge_base=request.kb)
    context = {"figures": figures, "chart": bar_chart(days=figures.days, today=timezone.localdate())}
    return render_page(request, "conflicts/dashboard.html", context)
