"""IGD's OpenAI-compatible backend against the scripted server: real HTTP, real openai client, scripted top log-probs.

The question's context says one thing (a counterfactual), the model's memory another; the mode decides which the
answer follows. Faults: a server without log-probabilities is a clear error; a timeout is an LLMError the answer
path turns into its plain answer (tests/conflicts/test_answering.py).
"""
import pytest

from agents.igd.arithmetic import IGDParams, Mode
from agents.igd.decoding import igd_generate
from agents.igd.openai_backend import MissingLogprobsError, OpenAIBackend
from agents.igd.prompts import build_prompts
from agents.llm import LLMError
from tests.support.igd_script import QUESTION, dist, freedonia
from tests.support.scripted_llm import NextToken


def _prompts(mode: Mode):
    return build_prompts(question=QUESTION, context="The capital of Freedonia is Sylvania.",
                         snippet="The capital of Freedonia is Sylvania.", mode=mode)


def _generate(server, mode: Mode, **params):
    backend = OpenAIBackend(server.config(timeout_s=5.0))
    return igd_generate(backend=backend, prompts=_prompts(mode), mode=mode, snippet="The capital of Freedonia is Sylvania.",
                        snippet_quality=0.8, params=IGDParams(max_new_tokens=4, **params))


def test_strict_follows_the_context(scripted_llm):
    scripted_llm.respond = freedonia
    result = _generate(scripted_llm, Mode.STRICT)
    assert result.previews == {"user": "Sylvania", "context": "Sylvania", "memory": "Fredville"}
    # memory prefers its answer 0.90 / 0.05 = 18×, but the user branch prefers the context's 0.50 / 0.45: no routing
    assert result.filter.memory_ratio == pytest.approx(18.0) and result.filter.user_ratio == pytest.approx(0.50 / 0.45)
    assert result.source == "corrected" and result.answer == "Sylvania"
    assert result.trace[0].lam > 0 and result.winner == "context"
    # every request asked for the top log-probabilities of one token
    completions = [r for r in scripted_llm.requests if "prompt" in r]
    assert completions and all(r["max_tokens"] == 1 and r["logprobs"] == 20 for r in completions)


def test_truth_routes_to_memory_when_memory_is_sure_and_the_user_branch_does_not_object(scripted_llm):
    scripted_llm.respond = freedonia
    result = _generate(scripted_llm, Mode.TRUTH)
    # memory 18× for its answer; the user branch prefers the context's 0.45 / 0.50 = 0.9 ≤ ρU
    assert result.filter.memory_disagrees
    assert result.source == "memory" and result.answer == "Fredville" and result.winner == "memory"
    assert result.reliability.memory == 1.0  # the three memory variants agree


def test_truth_without_the_answer_filter_still_leans_to_memory_token_by_token(scripted_llm):
    scripted_llm.respond = freedonia
    result = _generate(scripted_llm, Mode.TRUTH, answer_filter=False)
    assert result.source == "corrected" and result.answer == "Fredville"
    assert result.trace[0].gate == 1.0 and result.trace[0].lam < 0


def test_a_server_without_logprobs_is_a_clear_error(scripted_llm):
    scripted_llm.respond = lambda request: NextToken(None)
    with pytest.raises(MissingLogprobsError, match="no top log-probabilities"):
        _generate(scripted_llm, Mode.STRICT)


def test_a_timeout_is_an_llm_error(scripted_llm):
    scripted_llm.respond = lambda request: NextToken(dist(a=0.5, b=0.5), delay_s=3.0)
    backend = OpenAIBackend(scripted_llm.config(timeout_s=0.5))
    with pytest.raises(LLMError) as caught:
        igd_generate(backend=backend, prompts=_prompts(Mode.STRICT), mode=Mode.STRICT, snippet="s", snippet_quality=0.5,
                     params=IGDParams(max_new_tokens=2))
    assert caught.value.reason == "timeout"
