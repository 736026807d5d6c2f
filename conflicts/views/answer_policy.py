"""The knowledge base's answer policy for open conflicts: what each policy does, with an example; ops change it
(audited by conflicts.services.answering.answer_settings_update)."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect

from articles.models import Role
from articles.permissions import allows, kb_view
from conflicts.forms import AnswerPolicyForm
from conflicts.models import AnswerPolicy
from conflicts.services.answering import answer_settings_get, answer_settings_update
from kbreview.views.common import render_page


@kb_view(read=Role.VIEWER, write=Role.OPS)
def answer_policy_view(request):
    current = answer_settings_get(knowledge_base=request.kb)
    status = 200
    if request.method == "POST":
        form = AnswerPolicyForm(request.POST)
        if form.is_valid():
            answer_settings_update(knowledge_base=request.kb, user=request.user, **form.cleaned_data)
            messages.success(request, f"Answer policy saved: {AnswerPolicy(form.cleaned_data['policy']).label}.")
            return redirect("answer_policy")
        status = 400
    else:
        form = AnswerPolicyForm(initial={"policy": current.policy, "caveat_text": current.caveat_text,
                                         "prefer_threshold": current.prefer_threshold})
    context = {"form": form, "current": current, "current_label": AnswerPolicy(current.policy).label,
               "can_manage": allows(request, Role.OPS)}
    return render_page(request, "conflicts/answer_policy.html", context, status=status)
