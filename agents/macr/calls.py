"""One place that makes MACR's LLM calls, bounds them and counts them, so every step reports its cost the same way.

Counting convention: one chat completion = one call, and each of the k samples of knowledge
assessment counts as one call (k generations), whether the endpoint returned them in one request
(`n` honoured) or in k requests (llama.cpp): the figure is the same on every endpoint. A failed
call is counted as what it actually sent (LLMError.calls), never as what it would have sent.

Each step's reply is bounded by its own token budget, sized from its schema (the suggestions
purpose's max_tokens setting overrides them all).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from agents.llm import LLMConfig, LLMError, SampledText, complete_json_reply, sample_texts
from agents.macr.prompts import DATA_NOT_INSTRUCTIONS

# Tokens per reply, from what each step's schema asks for: a short phrase, a few fields, or a list
# growing with the sources or rules in the prompt.
STEP_MAX_TOKENS: dict[str, int] = {
    "direct": 128,                # {"answer": short phrase}
    "icl": 128,
    "assessment": 64,             # one sampled short answer, free text
    "retrieval": 768,             # internal: five descriptive fields; external: a short answer
    "analyzer_answers": 384,      # {"answer", "quote"} for one source
    "analyzer_compare": 1536,     # one triplet per contradicting pair of sources
    "reasoner_rules": 1024,       # one verdict with reasoning per candidate rule
    "reasoner_provisional": 512,  # reasoning, winner and a principle
    "synthesis": 768,             # explanation, answer, winner, proposed edit
    "cot": 1024,                  # reasoning then answer
    "induction": 1536,            # a list of rules
}
DEFAULT_STEP_MAX_TOKENS = 512


@dataclass
class CallMeter:
    calls: int = 0
    tokens: int = 0
    by_step: dict[str, int] = field(default_factory=dict)
    errors: Counter = field(default_factory=Counter)  # LLMError reason -> count
    error_details: list[str] = field(default_factory=list)  # "<step>: LLM <reason> (<detail>)", in order
    # Assessments that asked for log-probabilities and got none: weighted equally instead (visible, not silent).
    logprob_fallbacks: int = 0

    def add(self, *, step: str, calls: int, tokens: int) -> None:
        self.calls += calls
        self.tokens += tokens
        self.by_step[step] = self.by_step.get(step, 0) + calls

    def failed(self, *, step: str, error: LLMError) -> None:
        self.add(step=step, calls=error.calls, tokens=0)
        self.errors[error.reason] += 1
        self.error_details.append(f"{step}: LLM {error.reason}" + (f" ({error.detail})" if error.detail else ""))


def step_max_tokens(step: str) -> int:
    return STEP_MAX_TOKENS.get(step, DEFAULT_STEP_MAX_TOKENS)


def json_call(
    *, meter: CallMeter, step: str, config: LLMConfig, system: str, user: str, schema: dict, schema_name: str,
    temperature: float | None = 0.0,
) -> dict:
    """complete_json, bounded and counted. The call is counted even when it fails: it was spent.

    When the step's system prompt says quoted sources are data, the user message says it again:
    some chat formats drop the system message.
    """
    reminder = DATA_NOT_INSTRUCTIONS if DATA_NOT_INSTRUCTIONS in system else ""
    try:
        reply = complete_json_reply(
            config=config, system=system, user=user, schema=schema, schema_name=schema_name, temperature=temperature,
            max_tokens=step_max_tokens(step), reminder=reminder,
        )
    except LLMError as error:
        meter.failed(step=step, error=error)
        raise
    meter.add(step=step, calls=reply.calls, tokens=reply.tokens)
    return reply.parsed


def sample_call(
    *, meter: CallMeter, step: str, config: LLMConfig, system: str, user: str, n: int, temperature: float,
    top_p: float, logprobs: bool,
) -> list[SampledText]:
    try:
        samples, tokens = sample_texts(
            config=config, system=system, user=user, n=n, temperature=temperature, top_p=top_p, logprobs=logprobs,
            max_tokens=step_max_tokens(step),
        )
    except LLMError as error:
        meter.failed(step=step, error=error)
        raise
    meter.add(step=step, calls=n, tokens=tokens)
    if logprobs and any(sample.logprob_sum is None for sample in samples):
        meter.logprob_fallbacks += 1
    return samples
