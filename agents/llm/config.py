"""Where an LLM endpoint comes from: one per purpose (answer, detection, suggestions) from plain values,
each key falling back to the shared setting."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

JsonMode = Literal["auto", "json_schema", "json_object"]
Purpose = Literal["answer", "detection", "suggestions"]

JSON_MODES: tuple[str, ...] = ("auto", "json_schema", "json_object")
DEFAULT_JSON_MODE: JsonMode = "auto"
PURPOSES: tuple[str, ...] = ("answer", "detection", "suggestions")
DEFAULT_TIMEOUT_S = 30.0
# A call that names no budget of its own; callers size theirs from their schema.
DEFAULT_MAX_TOKENS = 1024
# openai.OpenAI refuses to start without a key; local servers (llama.cpp, vLLM) ignore it.
PLACEHOLDER_API_KEY = "not-needed"


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    api_key: str
    model: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    json_mode: JsonMode = DEFAULT_JSON_MODE
    # Overrides every call's own token budget for this purpose when set (the <PURPOSE>_LLM_MAX_TOKENS setting).
    max_tokens: int | None = None


class LLMConfigError(ValueError):
    """A configured LLM value that cannot work (an unknown JSON mode, a non-positive token budget)."""


def llm_config_from(purpose: Purpose, *, shared: Mapping[str, Any] | None, specific: Mapping[str, Any] | None,
                    **overrides: Any) -> LLMConfig | None:
    """The endpoint for one purpose from plain values: each key of `specific` falls back to `shared`, and
    `overrides` (a command's --base-url, --model, ...; None or "" = not given) win over both. None means
    no LLM is configured (no base URL), and callers use their deterministic paths.

    agents never reads Django settings: agents.configuration passes them in (settings.LLM and
    settings.LLM_PURPOSES[purpose]).
    """
    if purpose not in PURPOSES:
        raise ValueError(f"unknown LLM purpose {purpose!r}; expected one of {PURPOSES}")
    shared, specific = dict(shared or {}), dict(specific or {})

    def pick(key: str) -> Any:
        for layer in (overrides, specific):
            value = layer.get(key)
            if value not in (None, ""):
                return value
        return shared.get(key)

    unknown = set(overrides) - set(LLMConfig.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown LLM setting(s) {sorted(unknown)}")
    base_url = pick("base_url")
    if not base_url:
        return None
    json_mode = pick("json_mode") or DEFAULT_JSON_MODE
    if json_mode not in JSON_MODES:
        raise LLMConfigError(f"LLM json_mode for {purpose} is {json_mode!r}; expected one of {JSON_MODES}")
    max_tokens = pick("max_tokens")
    if max_tokens is not None and int(max_tokens) < 1:
        raise LLMConfigError(f"LLM max_tokens for {purpose} is {max_tokens!r}; expected a positive integer")
    return LLMConfig(
        base_url=str(base_url),
        api_key=str(pick("api_key") or PLACEHOLDER_API_KEY),
        model=str(pick("model") or ""),
        timeout_s=float(pick("timeout_s") or DEFAULT_TIMEOUT_S),
        json_mode=json_mode,
        max_tokens=int(max_tokens) if max_tokens is not None else None,
    )


def token_budget(config: LLMConfig, own: int | None) -> int:
    """The max_tokens a call sends: the purpose's setting when set, else the call's own budget."""
    return int(config.max_tokens or own or DEFAULT_MAX_TOKENS)
