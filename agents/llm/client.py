"""The one `openai` client per endpoint, and the one error every call raises.

Every failure becomes one `LLMError` with a short `reason`, so callers (the turn pipeline, MACR,
the CLIs) can fail open and record "error: <reason>" without knowing the client's exception tree.
"""
from __future__ import annotations

import functools
from typing import Any

import openai

from agents.llm.config import PLACEHOLDER_API_KEY, LLMConfig

# How a server says "I do not take this response_format": OpenAI-style 400, FastAPI-validation 422,
# llama.cpp's 500. Anything else (auth, rate limits, timeouts) is not about the format.
FORMAT_REJECTED_STATUSES = frozenset({400, 422, 500})


class LLMError(Exception):
    """Any failure of an LLM call. `reason` is one of REASONS; `detail` says what exactly.

    `calls` is how many completions the failed operation had already sent (a failed call was spent);
    `status` is the HTTP status when the server answered with an error.
    """

    REASONS = ("timeout", "http_error", "invalid_json", "schema_mismatch", "output_cut", "not_configured")

    def __init__(self, reason: str, detail: str = "", *, calls: int = 1, status: int | None = None) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.calls = calls
        self.status = status


@functools.lru_cache(maxsize=32)
def client_for(base_url: str, api_key: str, timeout_s: float) -> openai.OpenAI:
    # One client (and its connection pool) per endpoint; the openai client is thread-safe.
    # No retries: a retry would double the latency the per-turn timeout has to absorb.
    return openai.OpenAI(base_url=base_url, api_key=api_key or PLACEHOLDER_API_KEY, timeout=timeout_s, max_retries=0)


def client_call(create: Any, *, config: LLMConfig, **params: Any) -> Any:
    try:
        return create(model=config.model, **params)
    except openai.APITimeoutError as error:
        raise LLMError("timeout", f"no answer within {config.timeout_s}s") from error
    except openai.APIStatusError as error:
        raise LLMError("http_error", f"HTTP {error.status_code}: {_error_message(error)}",
                       status=error.status_code) from error
    except openai.APIConnectionError as error:
        raise LLMError("http_error", f"connection failed: {error.__cause__ or error}") from error
    except openai.OpenAIError as error:  # e.g. a response body the client cannot read
        raise LLMError("http_error", f"{type(error).__name__}: {error}") from error


def chat_create(*, config: LLMConfig, **params: Any) -> Any:
    client = client_for(config.base_url, config.api_key, float(config.timeout_s))
    return client_call(client.chat.completions.create, config=config, **params)


def _error_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error")
        message = inner.get("message") if isinstance(inner, dict) else body.get("message")
        if message:
            return str(message)[:300]
    return str(error.message)[:300]


def usage_tokens(response: Any) -> int:
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0
    total = getattr(usage, "total_tokens", None)
    if total is None:
        total = (getattr(usage, "prompt_tokens", 0) or 0) + (getattr(usage, "completion_tokens", 0) or 0)
    return int(total or 0)
