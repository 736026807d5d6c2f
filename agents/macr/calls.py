"""One place that makes MACR's LLM calls and counts them, so every step reports its cost the same way.

Counting convention: one chat completion = one call, and each of the k samples of knowledge
assessment counts as one call (k generations), whether the endpoint returned them in one request
(`n` honoured) or in k requests (llama.cpp): the figure is the same on every endpoint.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from agents.llm import LLMConfig, SampledText, complete_json, sample_texts


@dataclass
class CallMeter:
    calls: int = 0
    tokens: int = 0
    by_step: dict[str, int] = field(default_factory=dict)

    def add(self, *, step: str, calls: int, tokens: int) -> None:
        self.calls += calls
        self.tokens += tokens
        self.by_step[step] = self.by_step.get(step, 0) + calls


def json_call(
    *, meter: CallMeter, step: str, config: LLMConfig, system: str, user: str, schema: dict, schema_name: str,
    temperature: float | None = 0.0,
) -> dict:
    """complete_json, counted. The call is counted even when it fails: it was spent."""
    try:
        parsed, tokens = complete_json(
            config=config, system=system, user=user, schema=schema, schema_name=schema_name, temperature=temperature
        )
    except Exception:
        meter.add(step=step, calls=1, tokens=0)
        raise
    meter.add(step=step, calls=1, tokens=tokens)
    return parsed


def sample_call(
    *, meter: CallMeter, step: str, config: LLMConfig, system: str, user: str, n: int, temperature: float,
    top_p: float, logprobs: bool,
) -> list[SampledText]:
    try:
        samples, tokens = sample_texts(
            config=config, system=system, user=user, n=n, temperature=temperature, top_p=top_p, logprobs=logprobs
        )
    except Exception:
        meter.add(step=step, calls=n, tokens=0)
        raise
    meter.add(step=step, calls=n, tokens=tokens)
    return samples
