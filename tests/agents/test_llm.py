"""agents.llm against a real OpenAI-compatible server on loopback (tests.support.scripted_llm)."""
from __future__ import annotations

import json
import socket
import time

import pytest
from django.core.exceptions import ImproperlyConfigured

from agents.llm import LLMConfig, LLMError, complete_json, llm_config_for, sample_texts, schema_problem
from tests.support.scripted_llm import answer, http_error, invalid_json, samples, slow

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}, "score": {"type": "integer"}},
    "required": ["verdict", "score"],
    "additionalProperties": False,
}


def ask(config: LLMConfig) -> tuple[dict, int]:
    return complete_json(config=config, system="You judge.", user="Is it?", schema=SCHEMA, schema_name="judgement")


# --- configuration ------------------------------------------------------------------------------

def test_config_is_none_without_a_base_url(settings):
    settings.LLM = {"base_url": None, "api_key": "k", "model": "m", "timeout_s": 3, "json_mode": "json_schema"}
    settings.LLM_PURPOSES = {"detection": {"base_url": None}}
    assert llm_config_for("detection") is None


def test_each_purpose_key_falls_back_to_the_shared_setting(settings):
    settings.LLM = {"base_url": "http://shared/v1", "api_key": "shared-key", "model": "big",
                    "timeout_s": 30.0, "json_mode": "json_schema"}
    settings.LLM_PURPOSES = {
        "detection": {"base_url": None, "api_key": None, "model": "small", "timeout_s": 4.0, "json_mode": "json_object"},
        "answer": {"base_url": "http://answer/v1", "api_key": None, "model": None, "timeout_s": None, "json_mode": None},
    }
    assert llm_config_for("detection") == LLMConfig(
        base_url="http://shared/v1", api_key="shared-key", model="small", timeout_s=4.0, json_mode="json_object"
    )
    assert llm_config_for("answer") == LLMConfig(
        base_url="http://answer/v1", api_key="shared-key", model="big", timeout_s=30.0, json_mode="json_schema"
    )
    # a purpose missing from LLM_PURPOSES uses the shared endpoint as is
    assert llm_config_for("suggestions").model == "big"


def test_a_purpose_can_have_an_endpoint_when_the_shared_one_is_unset(settings):
    settings.LLM = {"base_url": None, "api_key": None, "model": None, "timeout_s": None, "json_mode": None}
    settings.LLM_PURPOSES = {"detection": {"base_url": "http://fast/v1", "model": "tiny"}}
    config = llm_config_for("detection")
    assert config is not None and config.base_url == "http://fast/v1" and config.model == "tiny"
    assert config.api_key  # a placeholder: the openai client refuses an empty key
    assert config.json_mode == "json_schema" and config.timeout_s > 0
    assert llm_config_for("answer") is None


def test_an_unknown_json_mode_is_a_configuration_error(settings):
    settings.LLM = {"base_url": "http://x/v1", "json_mode": "grammar"}
    settings.LLM_PURPOSES = {}
    with pytest.raises(ImproperlyConfigured, match="json_mode"):
        llm_config_for("detection")


# --- complete_json ------------------------------------------------------------------------------

def test_json_schema_mode_sends_a_strict_schema_and_returns_the_parsed_reply(scripted_llm):
    scripted_llm.push(answer({"verdict": "yes", "score": 3}))
    parsed, tokens = ask(scripted_llm.config(json_mode="json_schema"))
    assert parsed == {"verdict": "yes", "score": 3}
    assert tokens > 0
    (request,) = scripted_llm.requests
    assert request["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "judgement", "schema": SCHEMA, "strict": True},
    }
    assert request["model"] == scripted_llm.model
    assert request["messages"][0] == {"role": "system", "content": "You judge."}
    assert request["messages"][1] == {"role": "user", "content": "Is it?"}


def test_json_object_mode_puts_the_schema_in_the_system_prompt(scripted_llm):
    scripted_llm.push(answer({"verdict": "no", "score": 0}))
    parsed, _ = ask(scripted_llm.config(json_mode="json_object"))
    assert parsed == {"verdict": "no", "score": 0}
    (request,) = scripted_llm.requests
    assert request["response_format"] == {"type": "json_object"}
    system = request["messages"][0]["content"]
    assert system.startswith("You judge.")
    assert json.dumps(SCHEMA) in system


def test_a_reply_in_a_code_fence_is_accepted(scripted_llm):
    scripted_llm.push(invalid_json('```json\n{"verdict": "yes", "score": 1}\n```'))
    assert ask(scripted_llm.config(json_mode="json_object"))[0] == {"verdict": "yes", "score": 1}


def test_invalid_json_raises_invalid_json(scripted_llm):
    scripted_llm.push(invalid_json('{"verdict": "ye'))
    with pytest.raises(LLMError) as raised:
        ask(scripted_llm.config())
    assert raised.value.reason == "invalid_json"


@pytest.mark.parametrize("content", [
    {"verdict": "maybe", "score": 1},               # not in the enum
    {"verdict": "yes"},                             # a required field missing
    {"verdict": "yes", "score": True},              # a bool is not an integer
    {"verdict": "yes", "score": 1, "extra": "x"},   # additionalProperties: false
])
def test_a_reply_that_breaks_the_schema_raises_schema_mismatch(scripted_llm, content):
    scripted_llm.push(answer(content))
    with pytest.raises(LLMError) as raised:
        ask(scripted_llm.config(json_mode="json_object"))
    assert raised.value.reason == "schema_mismatch"


def test_a_top_level_array_is_a_schema_mismatch(scripted_llm):
    scripted_llm.push(invalid_json("[1, 2]"))
    with pytest.raises(LLMError) as raised:
        ask(scripted_llm.config())
    assert raised.value.reason == "schema_mismatch"


def test_http_500_raises_http_error_without_retrying(scripted_llm):
    scripted_llm.push(http_error(500), answer({"verdict": "yes", "score": 1}))
    with pytest.raises(LLMError) as raised:
        ask(scripted_llm.config())
    assert raised.value.reason == "http_error"
    assert len(scripted_llm.requests) == 1  # max_retries=0: the queued good answer was never fetched
    assert scripted_llm.pending == 1


def test_a_slow_endpoint_raises_timeout_within_the_configured_timeout(scripted_llm):
    scripted_llm.push(slow(5.0, {"verdict": "yes", "score": 1}))
    started = time.monotonic()
    with pytest.raises(LLMError) as raised:
        ask(scripted_llm.config(timeout_s=0.5))
    elapsed = time.monotonic() - started
    assert raised.value.reason == "timeout"
    assert 0.4 <= elapsed < 1.5


def test_an_unreachable_endpoint_raises_http_error():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", model="m", timeout_s=2.0)
    with pytest.raises(LLMError) as raised:
        ask(config)
    assert raised.value.reason == "http_error"


# --- sample_texts -------------------------------------------------------------------------------

def test_sample_texts_asks_for_n_choices_and_sums_their_logprobs(scripted_llm):
    scripted_llm.push(samples(["Paris", "Lyon", "Paris"], logprobs=[[-0.5, -0.25], [-2.0], [-0.5, -0.5]]))
    texts, tokens = sample_texts(config=scripted_llm.config(), system="s", user="Capital?", n=3,
                                 temperature=0.7, top_p=0.95, logprobs=True)
    assert [sample.text for sample in texts] == ["Paris", "Lyon", "Paris"]
    assert [sample.logprob_sum for sample in texts] == [pytest.approx(-0.75), pytest.approx(-2.0), pytest.approx(-1.0)]
    assert tokens > 0
    (request,) = scripted_llm.requests
    assert request["n"] == 3 and request["logprobs"] is True
    assert request["temperature"] == 0.7 and request["top_p"] == 0.95
    assert "response_format" not in request


def test_sample_texts_asks_again_when_the_endpoint_ignores_n(scripted_llm):
    # llama.cpp's server returns one choice whatever n is; and gives no logprobs here
    scripted_llm.push(answer("one"), answer("two"), answer("three"))
    texts, _ = sample_texts(config=scripted_llm.config(), system="s", user="u", n=3,
                            temperature=1.0, top_p=1.0, logprobs=True)
    assert [sample.text for sample in texts] == ["one", "two", "three"]
    assert [sample.logprob_sum for sample in texts] == [None, None, None]
    assert [request.get("n") for request in scripted_llm.requests] == [3, 2, None]


def test_sample_texts_timeout_is_an_llm_error(scripted_llm):
    scripted_llm.push(slow(5.0, "late"))
    with pytest.raises(LLMError) as raised:
        sample_texts(config=scripted_llm.config(timeout_s=0.3), system="s", user="u", n=1,
                     temperature=1.0, top_p=1.0, logprobs=False)
    assert raised.value.reason == "timeout"


# --- schema_problem -----------------------------------------------------------------------------

def test_schema_problem_names_the_path_of_the_first_problem():
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": SCHEMA}}, "required": ["items"]}
    assert schema_problem({"items": [{"verdict": "yes", "score": 1}]}, schema) is None
    problem = schema_problem({"items": [{"verdict": "yes", "score": 1}, {"verdict": "no"}]}, schema)
    assert problem == "$.items[1]: missing 'score'"


# --- the scripted server's benchmark features ---------------------------------------------------

def test_a_respond_callback_answers_when_the_queue_is_empty_after_a_fixed_delay():
    from tests.support.scripted_llm import ScriptedLLM

    def respond(request: dict) -> dict:
        return {"verdict": "yes" if "Is it?" in request["messages"][1]["content"] else "no", "score": 2}

    with ScriptedLLM(respond=respond, delay_s=0.3) as server:
        started = time.monotonic()
        parsed, _ = ask(server.config())
        assert parsed == {"verdict": "yes", "score": 2}
        assert time.monotonic() - started >= 0.3
        assert len(server.requests) == 1


def test_an_unscripted_request_is_answered_with_http_500(scripted_llm):
    with pytest.raises(LLMError) as raised:
        ask(scripted_llm.config())
    assert raised.value.reason == "http_error"
    assert len(scripted_llm.requests) == 1
