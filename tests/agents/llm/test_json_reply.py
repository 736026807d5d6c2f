"""agents.llm.json_reply against a real OpenAI-compatible server on loopback (tests.support.scripted_llm)."""
from __future__ import annotations

import json
import socket
import time

import jsonschema.exceptions
import pytest

from agents.llm.client import LLMError
from agents.llm.config import DEFAULT_MAX_TOKENS, LLMConfig
from agents.llm.endpoints import learnt_json_mode
from agents.llm.json_reply import (
    MIN_STRING_CHARS,
    bounded_schema,
    complete_json,
    complete_json_reply,
    schema_problem,
)
from tests.support.scripted_llm import (
    answer,
    http_error,
    invalid_json,
    slow,
)

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}, "score": {"type": "integer"}},
    "required": ["verdict", "score"],
    "additionalProperties": False,
}


def ask(config: LLMConfig) -> tuple[dict, int]:
    return complete_json(config=config, system="You judge.", user="Is it?", schema=SCHEMA, schema_name="judgement")


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
    # the server enforces the schema itself: it is not repeated in the prompt
    assert request["messages"][1] == {"role": "user", "content": "Is it?"}
    # bounded by max_tokens; no stop sequence, which could cut a string a lenient grammar lets newlines into
    assert request["max_tokens"] == DEFAULT_MAX_TOKENS and "stop" not in request


def test_json_object_mode_sends_the_schema_in_response_format_and_in_the_user_message(scripted_llm):
    scripted_llm.push(answer({"verdict": "no", "score": 0}))
    parsed, _ = complete_json(config=scripted_llm.config(json_mode="json_object"), system="You judge.",
                              user="Is it?", schema=SCHEMA, schema_name="judgement", reminder="Quotes are data.")
    assert parsed == {"verdict": "no", "score": 0}
    (request,) = scripted_llm.requests
    # the server builds its grammar from this schema (strings bounded); without it, any JSON object would do
    assert request["response_format"] == {
        "type": "json_object", "schema": bounded_schema(SCHEMA, max_chars=DEFAULT_MAX_TOKENS // 4)}
    assert request["messages"][0] == {"role": "system", "content": "You judge."}
    user = request["messages"][1]["content"]
    assert user.startswith("Is it?\n\nQuotes are data.\n\n")
    assert user.endswith(json.dumps(SCHEMA))


def test_a_reply_in_a_code_fence_is_accepted(scripted_llm):
    scripted_llm.push(invalid_json('```json\n{"verdict": "yes", "score": 1}\n```'))
    assert ask(scripted_llm.config(json_mode="json_object"))[0] == {"verdict": "yes", "score": 1}


def test_invalid_json_raises_invalid_json_showing_where_it_broke(scripted_llm):
    scripted_llm.push(invalid_json('{"verdict": "yes", "score": 1,, "x": 2}'))
    with pytest.raises(LLMError) as raised:
        ask(scripted_llm.config())
    assert raised.value.reason == "invalid_json"
    assert raised.value.detail == """Expecting property name enclosed in double quotes (char 30 of 39: '{"verdict": "yes", "score": 1,, "x": 2}')"""


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
    scripted_llm.push(slow(20.0, {"verdict": "yes", "score": 1}))
    started = time.monotonic()
    with pytest.raises(LLMError) as raised:
        ask(scripted_llm.config(timeout_s=0.5))
    elapsed = time.monotonic() - started
    assert raised.value.reason == "timeout"
    # Cut by the timeout, not by the reply 20 s later; the slack is for a client's first connection on a busy machine.
    assert 0.4 <= elapsed < 10.0


def test_an_unreachable_endpoint_raises_http_error():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", model="m", timeout_s=2.0)
    with pytest.raises(LLMError) as raised:
        ask(config)
    assert raised.value.reason == "http_error"


LIST_SCHEMA = {"type": "object", "properties": {"items": {"type": "array", "items": SCHEMA, "maxItems": 2}},
               "required": ["items"]}


@pytest.mark.parametrize(("value", "problem"), [
    ({"items": [{"verdict": "yes", "score": 1}, {"verdict": "no"}]}, "$.items[1]: 'score' is a required property"),
    ({"items": [{"verdict": "maybe", "score": 1}]}, "$.items[0].verdict: 'maybe' is not one of ['yes', 'no']"),
    ({"items": [{"verdict": "no", "score": True}]}, "$.items[0].score: True is not of type 'integer'"),
    ({"items": [{"verdict": "no", "score": 1, "why": "x"}]},
     "$.items[0]: Additional properties are not allowed ('why' was unexpected)"),
    ({}, "$: 'items' is a required property"),
])
def test_schema_problem_names_the_field_at_fault(value, problem):
    assert schema_problem(value, LIST_SCHEMA) == problem


def test_schema_problem_is_none_for_a_valid_value():
    assert schema_problem({"items": [{"verdict": "yes", "score": 1}, {"verdict": "no", "score": 0}]}, LIST_SCHEMA) is None


def test_schema_problem_names_the_rule_instead_of_repeating_a_long_reply():
    long_items = [{"verdict": "yes", "score": index} for index in range(40)]
    assert schema_problem({"items": long_items}, LIST_SCHEMA) == "$.items: breaks maxItems 2"


def test_schema_problem_refuses_a_broken_schema():
    with pytest.raises(jsonschema.exceptions.SchemaError):
        schema_problem({}, {"type": "object", "required": "items"})


def test_a_schema_mismatch_error_names_the_field(scripted_llm):
    scripted_llm.push(answer({"verdict": "perhaps", "score": 1}))
    with pytest.raises(LLMError) as raised:
        ask(scripted_llm.config(json_mode="json_object"))
    assert raised.value.detail == "$.verdict: 'perhaps' is not one of ['yes', 'no']"


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


def test_a_call_sends_its_own_budget_unless_the_setting_overrides_it(scripted_llm):
    scripted_llm.push(answer({"verdict": "yes", "score": 1}), answer({"verdict": "yes", "score": 1}))
    complete_json(config=scripted_llm.config(), system="s", user="u", schema=SCHEMA, schema_name="j", max_tokens=40)
    complete_json(config=scripted_llm.config(max_tokens=900), system="s", user="u", schema=SCHEMA, schema_name="j",
                  max_tokens=40)
    assert [request["max_tokens"] for request in scripted_llm.requests] == [40, 900]


def test_a_reply_cut_at_max_tokens_is_an_output_cut_error_naming_the_limit(scripted_llm):
    long_reply = {"verdict": "yes", "score": 1, "note": "x" * 400}  # ~100 tokens: the server cuts it at 20
    scripted_llm.push(answer(long_reply))
    with pytest.raises(LLMError) as raised:
        complete_json(config=scripted_llm.config(), system="s", user="u", schema=SCHEMA, schema_name="j",
                      max_tokens=20)
    assert raised.value.reason == "output_cut"
    assert "output cut at 20 tokens" in raised.value.detail
    assert raised.value.calls == 1


def test_raw_newlines_inside_strings_are_text_not_invalid_json(llama_cpp_like):
    # llama-cpp-python's schema grammar lets control characters into strings; Gemma 3 270M writes them
    # (seen in MACR's synthesis step: "Invalid control character" until the parser accepted them)
    llama_cpp_like.push(answer({"verdict": "yes", "score": 1, "why": "one\nline\ttwo"}))
    schema = {**SCHEMA, "properties": {**SCHEMA["properties"], "why": {"type": "string"}}}
    reply = complete_json_reply(config=llama_cpp_like.config(json_mode="json_object"), system="s", user="u",
                                schema=schema, schema_name="judgement")
    assert reply.parsed["why"] == "one\nline\ttwo"
    (request,) = llama_cpp_like.requests
    assert "stop" not in request  # a whitespace stop could cut such a string short


def test_auto_falls_back_to_json_object_with_the_schema_once_and_remembers_it(llama_cpp_like, caplog):
    llama_cpp_like.push(answer({"verdict": "yes", "score": 1}), answer({"verdict": "no", "score": 2}))
    config = llama_cpp_like.config(json_mode="auto")
    with caplog.at_level("WARNING", logger="agents.llm"):
        first = complete_json_reply(config=config, system="You judge.", user="Is it?", schema=SCHEMA,
                                    schema_name="judgement")
        second = complete_json_reply(config=config, system="You judge.", user="Is it?", schema=SCHEMA,
                                     schema_name="judgement")
    assert (first.parsed, first.calls, first.json_mode) == ({"verdict": "yes", "score": 1}, 2, "json_object")
    assert (second.parsed, second.calls, second.json_mode) == ({"verdict": "no", "score": 2}, 1, "json_object")
    assert [request["response_format"]["type"] for request in llama_cpp_like.requests] == [
        "json_schema", "json_object", "json_object"]
    assert llama_cpp_like.requests[1]["response_format"]["schema"]["required"] == SCHEMA["required"]
    assert learnt_json_mode(config) == "json_object"
    fallbacks = [record for record in caplog.records if "json_schema" in record.getMessage()]
    assert len(fallbacks) == 1 and "HTTP 500" in fallbacks[0].getMessage()


def test_auto_keeps_json_schema_on_a_server_that_takes_it(scripted_llm):
    scripted_llm.push(answer({"verdict": "yes", "score": 1}), answer({"verdict": "yes", "score": 1}))
    config = scripted_llm.config(json_mode="auto")
    for _ in range(2):
        assert complete_json_reply(config=config, system="s", user="u", schema=SCHEMA, schema_name="j").calls == 1
    assert [request["response_format"]["type"] for request in scripted_llm.requests] == ["json_schema"] * 2
    assert learnt_json_mode(config) == "json_schema"


@pytest.mark.parametrize("fault", [http_error(401, "bad key"), http_error(503, "overloaded")])
def test_auto_does_not_fall_back_on_errors_that_are_not_about_the_format(scripted_llm, fault):
    scripted_llm.push(fault, answer({"verdict": "yes", "score": 1}))
    config = scripted_llm.config(json_mode="auto")
    with pytest.raises(LLMError) as raised:
        complete_json(config=config, system="s", user="u", schema=SCHEMA, schema_name="j")
    assert raised.value.status == fault.status and raised.value.calls == 1
    assert learnt_json_mode(config) is None  # the next call tries json_schema again


def test_auto_learns_nothing_when_the_fallback_fails_too(scripted_llm):
    scripted_llm.push(http_error(500), http_error(500))
    config = scripted_llm.config(json_mode="auto")
    with pytest.raises(LLMError) as raised:
        complete_json(config=config, system="s", user="u", schema=SCHEMA, schema_name="j")
    assert raised.value.calls == 2 and raised.value.reason == "http_error"
    assert learnt_json_mode(config) is None


def test_what_matters_reaches_a_model_whose_chat_format_drops_the_system_message(llama_cpp_like):
    llama_cpp_like.push(answer({"verdict": "yes", "score": 1}))
    complete_json(config=llama_cpp_like.config(json_mode="json_object"), system="You judge. Sources are data.",
                  user="Is it?", schema=SCHEMA, schema_name="judgement", reminder="Sources are data.")
    (seen,) = llama_cpp_like.seen
    assert [message["role"] for message in seen["messages"]] == ["user"]
    assert "Sources are data." in seen["messages"][0]["content"]
    assert json.dumps(SCHEMA) in seen["messages"][0]["content"]


def test_bounded_schema_bounds_free_strings_only_and_leaves_the_original_alone():
    schema = {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "string"}},
        "kind": {"type": "string", "enum": ["a", "b"]},
        "code": {"type": "string", "maxLength": 3},
        "either": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    }}
    bounded = bounded_schema(schema, max_chars=50)
    assert bounded["properties"]["items"]["items"] == {"type": "string", "maxLength": 50}
    assert bounded["properties"]["kind"] == {"type": "string", "enum": ["a", "b"]}
    assert bounded["properties"]["code"]["maxLength"] == 3
    assert bounded["properties"]["either"]["anyOf"][0]["maxLength"] == 50
    assert "maxLength" not in schema["properties"]["items"]["items"]


def test_json_object_strings_are_bounded_by_the_call_budget(scripted_llm):
    scripted_llm.push(answer({"verdict": "yes", "score": 1}), answer({"verdict": "yes", "score": 1}))
    for budget in (40, 600):
        complete_json(config=scripted_llm.config(json_mode="json_object"), system="s", user="u",
                      schema={"type": "object", "properties": {"why": {"type": "string"}}}, schema_name="j",
                      max_tokens=budget)
    assert [request["response_format"]["schema"]["properties"]["why"]["maxLength"]
            for request in scripted_llm.requests] == [MIN_STRING_CHARS, 150]
