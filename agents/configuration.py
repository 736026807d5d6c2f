"""Where the agents app meets Django settings: its commands and the apps above it (conflicts) get their
LLMConfig values here. The algorithms in agents never import this module or django; they receive values."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from agents.llm import LLMConfig, LLMConfigError, Purpose, llm_config_from


def llm_config_for(purpose: Purpose, **overrides: Any) -> LLMConfig | None:
    """settings.LLM_PURPOSES[purpose] falling back to settings.LLM, with a command's `overrides` on top;
    None when no LLM is configured."""
    try:
        return llm_config_from(
            purpose,
            shared=getattr(settings, "LLM", None),
            specific=(getattr(settings, "LLM_PURPOSES", None) or {}).get(purpose),
            **overrides,
        )
    except LLMConfigError as exc:
        raise ImproperlyConfigured(str(exc)) from exc
