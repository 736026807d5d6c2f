"""Top-k log-probabilities of every generated token (knowledge assessment, IGD)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.llm.client import LLMError, client_call, client_for, usage_tokens
from agents.llm.config import LLMConfig


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token: its log-probability and the most likely tokens at its position (best first)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class TopLogprobGeneration:
    text: str
    tokens: tuple[TokenLogprob, ...] | None  # None when the endpoint returned no distribution
    finish_reason: str
    usage_tokens: int


def token_logprobs(logprobs: Any) -> list[TokenLogprob] | None:
    """Each generated token's log-probability and its top alternatives, from a choice's `logprobs`.

    Reads both shapes servers send: the chat shape (`content: [{token, logprob, top_logprobs:
    [{token, logprob}]}]`) and the completions shape (`tokens`, `token_logprobs`, `top_logprobs:
    [{token: logprob}]`), which some servers return from the chat endpoint too. None when there is
    no distribution (not asked for, or the server ignored the request).
    """
    if logprobs is None:
        return None
    data = logprobs.model_dump() if hasattr(logprobs, "model_dump") else logprobs
    if not isinstance(data, dict):
        return None
    content = data.get("content")
    if isinstance(content, list) and content:
        result = []
        for item in content:
            if item.get("logprob") is None:
                return None
            top = tuple((alt["token"], float(alt["logprob"])) for alt in item.get("top_logprobs") or [])
            result.append(TokenLogprob(token=item.get("token") or "", logprob=float(item["logprob"]), top=_best_first(top)))
        return result
    values = data.get("token_logprobs")
    if isinstance(values, list) and values:
        texts = data.get("tokens") or [""] * len(values)
        tops = data.get("top_logprobs") or [None] * len(values)
        result = []
        for token, value, top in zip(texts, values, tops):
            if value is None:
                return None
            pairs = tuple((alt, float(lp)) for alt, lp in (top or {}).items())
            result.append(TokenLogprob(token=token, logprob=float(value), top=_best_first(pairs)))
        return result
    return None


def _best_first(pairs: tuple[tuple[str, float], ...]) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(pairs, key=lambda pair: -pair[1]))


def generate_with_top_logprobs(
    *,
    config: LLMConfig,
    top_k: int,
    max_tokens: int,
    system: str | None = None,
    user: str | None = None,
    prompt: str | None = None,
    temperature: float = 0.0,
    stop: list[str] | None = None,
) -> TopLogprobGeneration:
    """Generate text with the top-k log-probabilities of every generated token.

    With `system`/`user`, the chat endpoint; with `prompt`, the completions endpoint (raw text, e.g. a
    forced prefix to continue). `tokens` is None when the endpoint returned no distribution: the
    caller decides (and says) how it falls back. Raises LLMError like every call here; a reply cut
    at `max_tokens` is returned with finish_reason "length", since free text cut short is still text.
    `max_tokens` is taken as asked (one token at a time is a valid use); the purpose's setting only caps it.
    """
    if top_k < 1:
        raise ValueError("top_k must be at least 1 (servers return nothing for 0)")
    if (prompt is None) == (user is None):
        raise ValueError("give either prompt (completions) or user (chat)")
    limit = min(max_tokens, config.max_tokens) if config.max_tokens else max_tokens
    client = client_for(config.base_url, config.api_key, float(config.timeout_s))
    extra: dict[str, Any] = {"stop": stop} if stop else {}
    if prompt is not None:
        response = client_call(client.completions.create, config=config, prompt=prompt, max_tokens=limit,
                         temperature=temperature, logprobs=top_k, **extra)
        choices = getattr(response, "choices", None) or []
        text = choices[0].text if choices else ""
    else:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
        response = client_call(client.chat.completions.create, config=config, messages=messages, max_tokens=limit,
                         temperature=temperature, logprobs=True, top_logprobs=top_k, **extra)
        choices = getattr(response, "choices", None) or []
        text = (choices[0].message.content or "") if choices else ""
    if not choices:
        raise LLMError("invalid_json", "no choices in the response")
    tokens = token_logprobs(getattr(choices[0], "logprobs", None))
    return TopLogprobGeneration(text=text, tokens=tuple(tokens) if tokens else None,
                                finish_reason=str(choices[0].finish_reason or ""), usage_tokens=usage_tokens(response))
