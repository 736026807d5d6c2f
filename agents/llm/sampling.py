"""Free text, sampled n times, with the sum of each sample's token log-probabilities where the endpoint
gives them."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from agents.llm.client import FORMAT_REJECTED_STATUSES, LLMError, chat_create, usage_tokens
from agents.llm.config import LLMConfig, token_budget
from agents.llm.endpoints import refuses_logprobs, remember_no_logprobs
from agents.llm.logprobs import token_logprobs

logger = logging.getLogger(__name__)

# JSON calls send no stop sequence: no run of characters is safe to stop at, since llama.cpp-family
# grammars let raw newlines into strings (see parse_json_object), so a whitespace stop could cut a
# string the grammar and the parser both accept. Their work is bounded by max_tokens, and in
# json_object mode by the schema's string bounds and the grammar's whitespace rule (one space).
# Free-text samples are one short phrase on one line: a line break ends them (small models write single
# newlines, so a blank-line stop let 89 of 90 samples run to their token limit on the real server).
SAMPLE_STOP: tuple[str, ...] = ("\n",)


@dataclass(frozen=True)
class SampledText:
    text: str
    logprob_sum: float | None  # None when the endpoint returned no token logprobs


# Sequence log-probabilities need only the chosen token's; servers such as llama.cpp's return
# nothing unless top_logprobs is set, so one alternative is asked for.
SEQUENCE_TOP_LOGPROBS = 1
_warned_no_logprobs: set[tuple[str, str]] = set()


def sample_texts(
    *,
    config: LLMConfig,
    system: str,
    user: str,
    n: int,
    temperature: float,
    top_p: float,
    logprobs: bool,
    max_tokens: int | None = None,
) -> tuple[list[SampledText], int]:
    """n sampled replies (with the sum of their token logprobs when the endpoint gives them); returns (samples, tokens).

    Endpoints that ignore `n` (llama.cpp returns one choice) are asked again until n samples are in,
    at most n calls. A failure raises LLMError whose `calls` counts the samples already received
    plus the failed requests. Asked-for log-probabilities that do not come back leave logprob_sum
    None (logged once per endpoint), for the caller to count; an endpoint that refuses the request
    for them (HTTP 400/422/500) is asked again without, and not asked for them again.
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
            "max_tokens": token_budget(config, max_tokens),
            "stop": list(SAMPLE_STOP),
        }
        if missing > 1:
            params["n"] = missing
        asking = logprobs and not refuses_logprobs(config)
        if asking:
            params["logprobs"] = True
            params["top_logprobs"] = SEQUENCE_TOP_LOGPROBS
        try:
            response = chat_create(config=config, **params)
        except LLMError as error:
            if not (asking and error.status in FORMAT_REJECTED_STATUSES):
                error.calls = len(samples) + 1
                raise
            # Refused (llama-cpp-python without logits_all answers 500): sample without, once and for all.
            remember_no_logprobs(config, why=error.detail)
            params.pop("logprobs"), params.pop("top_logprobs")
            asking = False
            try:
                response = chat_create(config=config, **params)
            except LLMError as second:
                second.calls = len(samples) + 2
                raise
        tokens += usage_tokens(response)
        for choice in (getattr(response, "choices", None) or [])[:missing]:
            text = choice.message.content or ""
            logprob_sum = _logprob_sum(choice) if asking else None
            if asking and logprob_sum is None:
                _warn_no_logprobs(config)  # asked and ignored (a refusal was logged when it was learnt)
            samples.append(SampledText(text=text, logprob_sum=logprob_sum))
        if len(samples) >= n:
            break
    if not samples:
        raise LLMError("invalid_json", "no choices in the response", calls=n)
    return samples, tokens


def _warn_no_logprobs(config: LLMConfig) -> None:
    key = (config.base_url, config.model)
    if key not in _warned_no_logprobs:
        _warned_no_logprobs.add(key)
        logger.warning("LLM %s model %r returned no log-probabilities although asked (top_logprobs=%d); "
                       "callers fall back to equal weights", config.base_url, config.model, SEQUENCE_TOP_LOGPROBS)


def _logprob_sum(choice: Any) -> float | None:
    tokens = token_logprobs(getattr(choice, "logprobs", None))
    if not tokens:
        return None
    return float(sum(token.logprob for token in tokens))
