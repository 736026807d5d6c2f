"""A thin wrapper over the official `openai` client for any OpenAI-compatible endpoint.

Every failure becomes one `LLMError` with a short `reason`, so callers (the turn pipeline, MACR,
the CLIs) can fail open and record "error: <reason>" without knowing the client's exception tree.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import openai

JsonMode = Literal["json_schema", "json_object"]
Purpose = Literal["answer", "detection", "suggestions"]

JSON_MODES: tuple[str, ...] = ("json_schema", "json_object")
PURPOSES: tuple[str, ...] = ("answer", "detection", "suggestions")
DEFAULT_TIMEOUT_S = 30.0
# openai.OpenAI refuses to start without a key; local servers (llama.cpp, vLLM) ignore it.
PLACEHOLDER_API_KEY = "not-needed"


class LLMError(Exception):
    """Any failure of an LLM call. `reason` is one of REASONS; `detail` is for logs only."""

    REASONS = ("timeout", "http_error", "invalid_json", "schema_mismatch", "not_configured")

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    api_key: str
    model: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    json_mode: JsonMode = "json_schema"


@dataclass(frozen=True)
class SampledText:
    text: str
    logprob_sum: float | None  # None when the endpoint returned no token logprobs


def llm_config_for(purpose: Purpose) -> LLMConfig | None:
    """The endpoint for one purpose: each key of settings.LLM_PURPOSES[purpose] falls back to settings.LLM.

    None means the LLM is not configured (no base URL), and callers use their deterministic paths.
    """
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    if purpose not in PURPOSES:
        raise ValueError(f"unknown LLM purpose {purpose!r}; expected one of {PURPOSES}")
    shared: dict[str, Any] = dict(getattr(settings, "LLM", None) or {})
    specific: dict[str, Any] = dict((getattr(settings, "LLM_PURPOSES", None) or {}).get(purpose) or {})

    def pick(key: str) -> Any:
        value = specific.get(key)
        return value if value not in (None, "") else shared.get(key)

    base_url = pick("base_url")
    if not base_url:
        return None
    json_mode = pick("json_mode") or "json_schema"
    if json_mode not in JSON_MODES:
        raise ImproperlyConfigured(f"LLM json_mode for {purpose} is {json_mode!r}; expected one of {JSON_MODES}")
    return LLMConfig(
        base_url=str(base_url),
        api_key=str(pick("api_key") or PLACEHOLDER_API_KEY),
        model=str(pick("model") or ""),
        timeout_s=float(pick("timeout_s") or DEFAULT_TIMEOUT_S),
        json_mode=json_mode,
    )


@functools.lru_cache(maxsize=32)
def _client(base_url: str, api_key: str, timeout_s: float) -> openai.OpenAI:
    # One client (and its connection pool) per endpoint; the openai client is thread-safe.
    # No retries: a retry would double the latency the per-turn timeout has to absorb.
    return openai.OpenAI(base_url=base_url, api_key=api_key or PLACEHOLDER_API_KEY, timeout=timeout_s, max_retries=0)


def _create(*, config: LLMConfig, **params: Any) -> Any:
    client = _client(config.base_url, config.api_key, float(config.timeout_s))
    try:
        return client.chat.completions.create(model=config.model, **params)
    except openai.APITimeoutError as error:
        raise LLMError("timeout", f"no answer within {config.timeout_s}s") from error
    except openai.APIStatusError as error:
        raise LLMError("http_error", f"HTTP {error.status_code}") from error
    except openai.APIConnectionError as error:
        raise LLMError("http_error", f"connection failed: {error}") from error
    except openai.OpenAIError as error:  # e.g. a response body the client cannot read
        raise LLMError("http_error", f"{type(error).__name__}: {error}") from error


def schema_instruction(schema: dict) -> str:
    """How json_object mode states the schema: endpoints like llama.cpp's take no json_schema format."""
    return (
        "Reply with exactly one JSON object and nothing else (no prose, no code fences). "
        "It must validate against this JSON Schema, with the properties in this order:\n"
        + json.dumps(schema, ensure_ascii=False)
    )


def complete_json(
    *,
    config: LLMConfig,
    system: str,
    user: str,
    schema: dict,
    schema_name: str,
    temperature: float | None = 0.0,
) -> tuple[dict, int]:
    """One chat completion whose reply is a JSON object valid against `schema`; returns (parsed, total tokens)."""
    if config.json_mode == "json_schema":
        response_format: dict = {
            "type": "json_schema",
            "json_schema": {"name": schema_name, "schema": schema, "strict": True},
        }
        system_text = system
    else:
        response_format = {"type": "json_object"}
        system_text = f"{system}\n\n{schema_instruction(schema)}"
    params: dict[str, Any] = {
        "messages": [{"role": "system", "content": system_text}, {"role": "user", "content": user}],
        "response_format": response_format,
    }
    if temperature is not None:
        params["temperature"] = temperature
    response = _create(config=config, **params)
    usage_tokens = _usage_tokens(response)
    if not getattr(response, "choices", None):
        raise LLMError("invalid_json", "no choices in the response")
    content = response.choices[0].message.content
    parsed = parse_json_object(content)
    problem = schema_problem(parsed, schema)
    if problem:
        raise LLMError("schema_mismatch", problem)
    return parsed, usage_tokens


def sample_texts(
    *,
    config: LLMConfig,
    system: str,
    user: str,
    n: int,
    temperature: float,
    top_p: float,
    logprobs: bool,
) -> tuple[list[SampledText], int]:
    """n sampled replies (with the sum of their token logprobs when the endpoint gives them); returns (samples, tokens).

    Endpoints that ignore `n` (llama.cpp returns one choice) are asked again until n samples are in,
    at most n calls.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    samples: list[SampledText] = []
    tokens = 0
    for _attempt in range(n):
        missing = n - len(samples)
        params: dict[str, Any] = {
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": temperature,
            "top_p": top_p,
        }
        if missing > 1:
            params["n"] = missing
        if logprobs:
            params["logprobs"] = True
        response = _create(config=config, **params)
        tokens += _usage_tokens(response)
        for choice in (getattr(response, "choices", None) or [])[:missing]:
            text = choice.message.content or ""
            samples.append(SampledText(text=text, logprob_sum=_logprob_sum(choice) if logprobs else None))
        if len(samples) >= n:
            break
    if not samples:
        raise LLMError("invalid_json", "no choices in the response")
    return samples, tokens


def _usage_tokens(response: Any) -> int:
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0
    total = getattr(usage, "total_tokens", None)
    if total is None:
        total = (getattr(usage, "prompt_tokens", 0) or 0) + (getattr(usage, "completion_tokens", 0) or 0)
    return int(total or 0)


def _logprob_sum(choice: Any) -> float | None:
    logprobs = getattr(choice, "logprobs", None)
    tokens = getattr(logprobs, "content", None) if logprobs is not None else None
    if not tokens:
        return None
    return float(sum(token.logprob for token in tokens))


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_json_object(content: str | None) -> dict:
    """The reply as a JSON object; a reply wrapped in a code fence (common in json_object mode) is unwrapped."""
    if not content or not content.strip():
        raise LLMError("invalid_json", "empty reply")
    fenced = _FENCE.match(content)
    text = fenced.group(1) if fenced else content
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as error:
        raise LLMError("invalid_json", f"{error.msg} at char {error.pos}") from error
    if not isinstance(parsed, dict):
        raise LLMError("schema_mismatch", f"top level is {type(parsed).__name__}, not an object")
    return parsed


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "null": (type(None),),
}


def schema_problem(value: Any, schema: dict, path: str = "$") -> str | None:
    """The first way `value` breaks `schema`, or None.

    Covers the subset strict structured outputs use (type, properties, required,
    additionalProperties, items, enum, min/maxItems, anyOf); endpoints in json_object mode
    enforce nothing, so this is what makes both modes return the same shapes.
    """
    if "anyOf" in schema:
        if all(schema_problem(value, option, path) for option in schema["anyOf"]):
            return f"{path}: matches none of anyOf"
        return None
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_is_json_type(value, name) for name in names):
            return f"{path}: expected {'/'.join(names)}, got {type(value).__name__}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path}: {value!r} not in {schema['enum']}"
    if isinstance(value, dict):
        properties: dict = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                return f"{path}: missing {key!r}"
        for key, item in value.items():
            if key in properties:
                problem = schema_problem(item, properties[key], f"{path}.{key}")
                if problem:
                    return problem
            elif schema.get("additionalProperties") is False:
                return f"{path}: unexpected {key!r}"
            elif isinstance(schema.get("additionalProperties"), dict):
                problem = schema_problem(item, schema["additionalProperties"], f"{path}.{key}")
                if problem:
                    return problem
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"{path}: fewer than {schema['minItems']} items"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{path}: more than {schema['maxItems']} items"
        if "items" in schema:
            for index, item in enumerate(value):
                problem = schema_problem(item, schema["items"], f"{path}[{index}]")
                if problem:
                    return problem
    return None


def _is_json_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False  # bool is an int in Python, never in JSON
    return isinstance(value, _JSON_TYPES.get(name, (object,)))
