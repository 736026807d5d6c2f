"""A thin wrapper over the official `openai` client for any OpenAI-compatible endpoint.

Every failure becomes one `LLMError` with a short `reason`, so callers (the turn pipeline, MACR,
the CLIs) can fail open and record "error: <reason>" without knowing the client's exception tree.

Every call is bounded: `max_tokens` (each call's own budget, sized from what it asks for, unless the
purpose's setting overrides it), a stop sequence where the output format allows one (free-text
samples only: JSON has none that is safe, see the note at SAMPLE_STOP), and a reply cut by the limit
(`finish_reason == "length"`) is an `output_cut` error rather than "invalid JSON".

Callers import what they use from here; the parts:
  config.py      LLMConfig for a purpose, from plain values (agents.configuration passes Django's settings)
  client.py      the openai client per endpoint, and LLMError
  json_reply.py  JSON replies: the mode the server enforces, the schema in the message, parsing and checking
  sampling.py    n free-text samples with their log-probabilities
  logprobs.py    top-k log-probabilities per generated token (IGD, knowledge assessment)
  endpoints.py   what each endpoint accepts, learnt once per process
"""
from agents.llm.client import LLMError
from agents.llm.config import (
    JSON_MODES,
    PLACEHOLDER_API_KEY,
    LLMConfig,
    LLMConfigError,
    Purpose,
    llm_config_from,
)
from agents.llm.endpoints import forget_learnt_endpoints, learnt_json_mode
from agents.llm.json_reply import complete_json, complete_json_reply, schema_problem, with_max_items
from agents.llm.logprobs import generate_with_top_logprobs
from agents.llm.sampling import SampledText, sample_texts

__all__ = [
    "JSON_MODES",
    "PLACEHOLDER_API_KEY",
    "LLMConfig",
    "LLMConfigError",
    "LLMError",
    "Purpose",
    "SampledText",
    "complete_json",
    "complete_json_reply",
    "forget_learnt_endpoints",
    "generate_with_top_logprobs",
    "learnt_json_mode",
    "llm_config_from",
    "sample_texts",
    "schema_problem",
    "with_max_items",
]
