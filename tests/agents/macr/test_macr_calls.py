"""agents.macr.calls: every MACR step's call is bounded by its own budget and counted as what it actually sent."""
from __future__ import annotations

import pytest

from agents.llm import LLMError
from agents.macr.calls import STEP_MAX_TOKENS, CallMeter, json_call, sample_call
from agents.macr.prompts import ANSWER_SCHEMA, DATA_NOT_INSTRUCTIONS
from tests.support.scripted_llm import LLAMA_CPP_QUIRKS, Reply, ScriptedLLM, answer, http_error, message_text, samples


def ask(server, meter, *, step="icl", system="Answer from the sources. " + DATA_NOT_INSTRUCTIONS, **config):
    return json_call(meter=meter, step=step, config=server.config(**config), system=system, user="Question: q",
                     schema=ANSWER_SCHEMA, schema_name="macr_answer")


def test_each_step_sends_its_own_token_budget_and_repeats_the_data_note_to_the_user(scripted_llm):
    scripted_llm.push(answer({"answer": "x"}), answer({"answer": "y"}))
    meter = CallMeter()
    ask(scripted_llm, meter, step="icl")
    ask(scripted_llm, meter, step="synthesis", system="Synthesise.")
    icl, synthesis = scripted_llm.requests
    assert (icl["max_tokens"], synthesis["max_tokens"]) == (STEP_MAX_TOKENS["icl"], STEP_MAX_TOKENS["synthesis"])
    assert message_text(icl, "user").endswith(DATA_NOT_INSTRUCTIONS)
    assert DATA_NOT_INSTRUCTIONS not in message_text(synthesis, "user")  # its system prompt makes no such claim
    assert (meter.calls, meter.by_step) == (2, {"icl": 1, "synthesis": 1})


def test_the_purpose_setting_overrides_every_step_budget(scripted_llm):
    scripted_llm.push(answer({"answer": "x"}))
    ask(scripted_llm, CallMeter(), max_tokens=2000)
    assert scripted_llm.requests[0]["max_tokens"] == 2000


def test_a_json_mode_fallback_counts_both_calls_sent():
    with ScriptedLLM(quirks=LLAMA_CPP_QUIRKS) as server:
        server.push(answer({"answer": "x"}))
        meter = CallMeter()
        assert ask(server, meter, json_mode="auto") == {"answer": "x"}
        assert meter.calls == 2


def test_a_failed_call_is_counted_once_with_its_reason_and_detail(scripted_llm):
    scripted_llm.push(answer({"answer": "x" * 2000}))  # longer than the step's budget: cut by the server
    meter = CallMeter()
    with pytest.raises(LLMError):
        ask(scripted_llm, meter, step="direct")
    assert meter.calls == 1 and meter.errors == {"output_cut": 1}
    assert meter.error_details == [f"direct: LLM output_cut (output cut at {STEP_MAX_TOKENS['direct']} tokens "
                                   "(max_tokens) before the JSON was complete)"]


def test_a_sampling_failure_counts_the_calls_sent_not_the_samples_wanted():
    with ScriptedLLM(quirks=LLAMA_CPP_QUIRKS) as server:  # n ignored: one request per sample
        server.push(answer("April"), http_error(503))
        meter = CallMeter()
        with pytest.raises(LLMError):
            sample_call(meter=meter, step="assessment", config=server.config(), system="s", user="u", n=5,
                        temperature=1.0, top_p=0.9, logprobs=True)
        assert meter.calls == 2 and meter.errors == {"http_error": 1}


def test_samples_without_log_probabilities_are_a_counted_fallback(scripted_llm):
    scripted_llm.push(samples(["a", "b"]), Reply(contents=("c", "d"), logprobs=((-1.0,), (-2.0,))))
    meter = CallMeter()
    for _ in range(2):
        sample_call(meter=meter, step="assessment", config=scripted_llm.config(), system="s", user="u", n=2,
                    temperature=1.0, top_p=0.9, logprobs=True)
    assert meter.logprob_fallbacks == 1 and meter.calls == 4
    assert all(request["max_tokens"] == STEP_MAX_TOKENS["assessment"] for request in scripted_llm.requests)
