"""The rule base: every rule with its figures, on/off switches, and the Observer's runs."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from agents.configuration import llm_config_for
from articles.models import Role
from articles.permissions import allows, kb_view
from conflicts import selectors
from conflicts.models import ResolutionRule
from conflicts.services.induction import rule_induction_enqueue
from conflicts.services.suggestions import rule_set_enabled, suggestion_threshold
from kbreview.views.common import get_in_kb_or_404, render_page


@kb_view()
def rule_list(request):
    return _rule_list_page(request)


def _rule_list_page(request, *, notice: str = ""):
    # A GET writes nothing: a knowledge base gets its rule rows when it is created (conflicts.apps).
    context = {
        "notice": notice,
        "rules": selectors.rule_list(knowledge_base=request.kb),
        "runs": selectors.induction_runs(knowledge_base=request.kb),
        "can_manage": allows(request, Role.OPS),
        "llm_configured": llm_config_for("suggestions") is not None,
        "threshold": suggestion_threshold(knowledge_base=request.kb),
    }
    return render_page(request, "conflicts/rules.html", context, partial="rules-table")


@kb_view(write=Role.OPS)
@require_POST
def rule_toggle(request, pk: int):
    rule = get_in_kb_or_404(ResolutionRule.objects.all(), knowledge_base=request.kb, pk=pk)
    enabled = request.POST.get("enabled") == "1"
    rule_set_enabled(rule=rule, enabled=enabled, actor=request.user)
    notice = f"Rule {rule.rule_id} switched {'on' if enabled else 'off'}."
    if not request.htmx:
        messages.success(request, notice)
        return redirect("rule_list")
    return _rule_list_page(request, notice=notice)


@kb_view(write=Role.OPS)
@require_POST
def rule_induction_start(request):
    rule_induction_enqueue(knowledge_base=request.kb, actor=request.user)
    messages.success(request, "Rule induction started; its run appears below when it finishes.")
    return redirect("rule_list")
