"""The answer playground: ask in either mode and see how Intent-Guided Decoding arrived at its reply, under the
knowledge base's answer policy as the answer path applies it (a side held back, the caveat).

Reviewers and ops only. Asking is a POST (a form with CSRF) but writes nothing: no turn, no policy decision.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from agents.igd.decoding import TokenTrace
from agents.llm import LLMError
from articles.models import Role
from articles.permissions import allows, kb_view
from conflicts.forms import AnswerSettingsForm, PlaygroundForm
from conflicts.services.answering import answer_default_mode, answer_settings_update, answer_try, igd_backend
from conflicts.services.disagreements import model_disagreements_recorded
from kbreview.views.common import render_page

CHART_STEP = 22  # px per generated token
CHART_HALF = 50  # px for |λ| = 1
GATE_HEIGHT = 30  # px for gate = 1


@dataclass(frozen=True)
class ChartBar:
    x: int
    lam_y: float
    lam_height: float
    toward_context: bool
    gate_y: float
    gate_height: float
    token: str
    lam: float
    gate: float
    jsd: float


def trace_chart(trace: list[TokenTrace]) -> dict:
    """Coordinates for the template's SVG: λ_t as bars about a zero line (up: context, down: memory), the gate below."""
    zero = CHART_HALF + 4
    gate_base = 2 * CHART_HALF + 8 + GATE_HEIGHT
    bars = []
    for index, step in enumerate(trace):
        lam = max(-1.0, min(1.0, step.lam))
        height = abs(lam) * CHART_HALF
        bars.append(ChartBar(
            x=index * CHART_STEP + 30, lam_y=zero - height if lam >= 0 else zero, lam_height=max(height, 0.5),
            toward_context=lam >= 0, gate_y=gate_base - step.gate * GATE_HEIGHT, gate_height=max(step.gate * GATE_HEIGHT, 0.5),
            token=step.text, lam=step.lam, gate=step.gate, jsd=step.jsd,
        ))
    return {
        "bars": bars, "width": len(trace) * CHART_STEP + 40, "zero": zero, "gate_base": gate_base,
        "height": gate_base + 70, "bar_width": CHART_STEP - 6,
    }


def _backend_kind() -> str:
    # The playground is for trying IGD: with IGD off on the answer path it still decodes, on the local model.
    return settings.IGD_BACKEND if settings.IGD_BACKEND != "off" else "local"


# Below this many parameters a local model's replies show how IGD works, not what a customer may be told
# (Gemma 3 270M, the bundled default, answers with another route's fare in the wrong currency).
TRUSTED_LOCAL_PARAMETERS = 3_000_000_000
BUNDLED_LOCAL_MODEL = "Gemma 3 270M (270 million parameters, the bundled default)"


def local_model_warning(backend=None) -> str:
    """What the page says about the local model's size: the bundled default is known to be far too small; another
    model is judged by its parameter count once loaded (after the first answer)."""
    if _backend_kind() != "local":
        return ""
    if settings.LOCAL_LM_PATH:
        count = backend.model.num_parameters() if backend is not None and hasattr(backend, "model") else None
        if count is None or count >= TRUSTED_LOCAL_PARAMETERS:
            return ""
        described = f"the local model ({count / 1e6:,.0f} million parameters)"
    else:
        described = BUNDLED_LOCAL_MODEL
    return (f"{described} is far too small to answer customers correctly. Use the playground to see how the decoding "
            "arbitrates between the knowledge base and the model's memory, not to judge the answers; set LOCAL_LM_PATH "
            "to a larger model, or IGD_BACKEND=openai with an endpoint, for answers worth reading.")


@kb_view(read=Role.REVIEWER, write=Role.REVIEWER)
def answer_playground(request):
    default_mode = answer_default_mode(knowledge_base=request.kb)
    recorded = model_disagreements_recorded(knowledge_base=request.kb)
    context: dict = {
        "default_mode": default_mode, "backend_kind": _backend_kind(), "answer_path_igd": settings.IGD_BACKEND != "off",
        "records_disagreements": recorded, "can_manage": allows(request, Role.OPS),
        "settings_form": AnswerSettingsForm(initial={"default_mode": default_mode, "record_model_disagreements": recorded}),
        "model_warning": local_model_warning(),
    }
    if request.method == "POST":
        form = PlaygroundForm(request.POST)
        if form.is_valid():
            try:
                backend = igd_backend(_backend_kind())
                context["model_warning"] = local_model_warning(backend)
                tried = answer_try(
                    knowledge_base=request.kb, question=form.cleaned_data["question"], mode=form.cleaned_data["mode"],
                    backend=backend,
                )
            except LLMError as exc:
                context["error"] = f"The IGD backend failed: {exc}"
            else:
                context["tried"], context["composed"] = tried, tried.composed
                if tried.composed.igd is not None:
                    context["chart"] = trace_chart(tried.composed.igd.result.trace)
    else:
        form = PlaygroundForm(initial={"mode": default_mode})
    context["form"] = form
    status = 400 if request.method == "POST" and form.errors else 200
    return render_page(request, "conflicts/playground.html", context, partial="playground-result", status=status)


@kb_view(write=Role.OPS)
@require_POST
def answer_settings_view(request):
    form = AnswerSettingsForm(request.POST)
    if form.is_valid():
        answer_settings_update(
            knowledge_base=request.kb, default_mode=form.cleaned_data["default_mode"],
            record_model_disagreements=form.cleaned_data["record_model_disagreements"], user=request.user,
        )
        messages.success(request, "Answer settings saved.")
    else:
        messages.error(request, "Choose strict or truth.")
    return redirect("answer_playground")
