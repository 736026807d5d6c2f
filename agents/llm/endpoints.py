"""What each endpoint and model accepts, learnt once per process: the JSON mode `auto` settled on, and
whether it refuses log-probabilities."""
from __future__ import annotations

import logging
import threading

from agents.llm.config import LLMConfig

logger = logging.getLogger(__name__)

_learnt_json_modes: dict[tuple[str, str], str] = {}
_learnt_lock = threading.Lock()
_logprobs_refused: set[tuple[str, str]] = set()


def learnt_json_mode(config: LLMConfig) -> str | None:
    """What `auto` settled on for this endpoint and model in this process (None: not tried yet)."""
    with _learnt_lock:
        return _learnt_json_modes.get((config.base_url, config.model))


def learn_json_mode(config: LLMConfig, mode: str, *, why: str = "") -> None:
    with _learnt_lock:
        known = _learnt_json_modes.get((config.base_url, config.model))
        _learnt_json_modes[(config.base_url, config.model)] = mode
    if known != mode and why:
        logger.warning("LLM %s model %r: %s; using json_object with the schema from now on",
                       config.base_url, config.model, why)


def forget_learnt_endpoints() -> None:
    """Forget what was learnt about endpoints: JSON modes, refused log-probabilities (tests; a server's software changed)."""
    with _learnt_lock:
        _learnt_json_modes.clear()
        _logprobs_refused.clear()


def refuses_logprobs(config: LLMConfig) -> bool:
    return (config.base_url, config.model) in _logprobs_refused


def remember_no_logprobs(config: LLMConfig, *, why: str) -> None:
    if not refuses_logprobs(config):
        _logprobs_refused.add((config.base_url, config.model))
        logger.warning("LLM %s model %r refused log-probabilities (%s); sampling without them from now on",
                       config.base_url, config.model, why)
