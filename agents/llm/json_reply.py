"""Chat completions whose reply is a JSON object valid against a schema.

JSON replies are enforced by the server, not only asked for: `json_schema` (OpenAI and servers that
take it), `json_object` with the schema inside `response_format` (llama.cpp's server, vLLM-style
servers), or `auto`, which tries `json_schema` once per endpoint and model and falls back to
`json_object` + schema when the server rejects it, remembering the outcome (agents.llm.endpoints). The
schema and the caller's "text inside ... is data" note also go at the end of the user message: some chat
formats drop system messages (llama-cpp-python's `gemma` format does). A reply cut by the token limit
(`finish_reason == "length"`) is an `output_cut` error rather than "invalid JSON"; every mode's reply is
checked against the schema here, so every mode returns the same shapes.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.protocols
import jsonschema.validators

from agents.llm.client import FORMAT_REJECTED_STATUSES, LLMError, chat_create, usage_tokens
from agents.llm.config import LLMConfig, token_budget
from agents.llm.endpoints import learn_json_mode, learnt_json_mode


@dataclass(frozen=True)
class JsonReply:
    parsed: dict
    tokens: int  # total tokens the endpoint reported
    calls: int  # completions sent: 2 when `auto` had to fall back on this call
    json_mode: str  # the mode that produced the reply


def response_format(mode: str, *, schema: dict, schema_name: str, max_tokens: int) -> dict:
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema, "strict": True}}
    # llama.cpp's and vLLM-style servers turn this "schema" into a grammar; without it they only
    # guarantee *some* JSON object. Bounding its strings lets the grammar close a string a small
    # model would otherwise repeat until max_tokens.
    return {"type": "json_object", "schema": bounded_schema(schema, max_chars=max(MIN_STRING_CHARS, max_tokens // 4))}


# The shortest bound a free string gets in a grammar (json_object mode).
MIN_STRING_CHARS = 48


def bounded_schema(schema: Any, *, max_chars: int) -> Any:
    """A copy of `schema` in which every free string (no enum, no maxLength of its own) has maxLength `max_chars`."""
    if isinstance(schema, list):
        return [bounded_schema(item, max_chars=max_chars) for item in schema]
    if not isinstance(schema, dict):
        return schema
    bounded = {key: bounded_schema(value, max_chars=max_chars) for key, value in schema.items()}
    if bounded.get("type") == "string" and "enum" not in bounded and "maxLength" not in bounded:
        bounded["maxLength"] = max_chars
    return bounded


def with_max_items(schema: dict, key: str, max_items: int) -> dict:
    """A copy of an object `schema` whose list property `key` holds at most `max_items` items: what a call
    can usefully get (one item per pair or rule asked about), so a server's grammar ends the list
    instead of a small model repeating items until max_tokens."""
    properties = schema["properties"]
    return {**schema, "properties": {**properties, key: {**properties[key], "maxItems": max_items}}}


def schema_instruction(schema: dict) -> str:
    """The schema in words, at the end of the user message: what a model reads whatever the chat format keeps."""
    return (
        "Reply with exactly one JSON object and nothing else (no prose, no code fences). "
        "It must validate against this JSON Schema, with the properties in this order:\n"
        + json.dumps(schema, ensure_ascii=False)
    )


def json_user_message(*, user: str, schema: dict, reminder: str = "", with_schema: bool = True) -> str:
    """The user message of a JSON call: the caller's text, its reminder (e.g. "text inside ... is data")
    and, unless the server enforces it from json_schema, the schema in words."""
    return "\n\n".join(part for part in (user, reminder, schema_instruction(schema) if with_schema else "") if part)


def complete_json(**call: Any) -> tuple[dict, int]:
    """One chat completion whose reply is a JSON object valid against `schema`; returns (parsed, total tokens).

    Takes complete_json_reply's keyword arguments.
    """
    reply = complete_json_reply(**call)
    return reply.parsed, reply.tokens


def complete_json_reply(
    *,
    config: LLMConfig,
    system: str,
    user: str,
    schema: dict,
    schema_name: str,
    temperature: float | None = 0.0,
    max_tokens: int | None = None,
    reminder: str = "",
) -> JsonReply:
    """One chat completion whose reply is a JSON object valid against `schema`, with the number of
    completions it took and the JSON mode that answered.

    `max_tokens` is this call's own budget (the purpose's setting overrides it); `reminder` is the
    instruction that must reach the model even when its chat format drops the system message.
    """
    limit = token_budget(config, max_tokens)

    def send(mode: str) -> Any:
        params: dict[str, Any] = {
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": json_user_message(user=user, schema=schema, reminder=reminder,
                                                              with_schema=mode != "json_schema")},
            ],
            "response_format": response_format(mode, schema=schema, schema_name=schema_name, max_tokens=limit),
            "max_tokens": limit,
        }
        if temperature is not None:
            params["temperature"] = temperature
        return chat_create(config=config, **params)

    mode = config.json_mode
    probing = False
    if mode == "auto":
        learnt = learnt_json_mode(config)
        mode, probing = learnt or "json_schema", learnt is None
    calls = 1
    try:
        response = send(mode)
    except LLMError as error:
        if not (probing and error.status in FORMAT_REJECTED_STATUSES):
            raise
        # The server refused json_schema: ask once more with json_object + schema; remember it if that works.
        mode, calls = "json_object", 2
        try:
            response = send(mode)
        except LLMError as second:
            second.calls = calls
            raise
        learn_json_mode(config, mode, why=f"the server refused response_format json_schema ({error.detail})")
    else:
        if probing:
            learn_json_mode(config, mode)
    try:
        parsed = _parsed_reply(response, schema=schema, limit=limit)
    except LLMError as error:
        error.calls = calls
        raise
    return JsonReply(parsed=parsed, tokens=usage_tokens(response), calls=calls, json_mode=mode)


def _parsed_reply(response: Any, *, schema: dict, limit: int) -> dict:
    if not getattr(response, "choices", None):
        raise LLMError("invalid_json", "no choices in the response")
    choice = response.choices[0]
    if choice.finish_reason == "length":
        raise LLMError("output_cut", f"output cut at {limit} tokens (max_tokens) before the JSON was complete")
    parsed = parse_json_object(choice.message.content)
    problem = schema_problem(parsed, schema)
    if problem:
        raise LLMError("schema_mismatch", problem)
    return parsed


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)

# Characters of the reply shown either side of where it stops being JSON.
INVALID_JSON_CONTEXT_CHARS = 40


def parse_json_object(content: str | None) -> dict:
    """The reply as a JSON object; a reply wrapped in a code fence (common in json_object mode) is unwrapped.

    Control characters inside strings (a raw newline or tab) are accepted (`strict=False`): the
    grammar llama-cpp-python builds from a schema lets any character but `"` and `\\` into a string
    (0.3.16: `char ::= [^"\\] | "\\" ...`), and Gemma 3 270M does write raw newlines there. That is
    the model's text, not broken structure; everything else JSON forbids is still refused.
    """
    if not content or not content.strip():
        raise LLMError("invalid_json", "empty reply")
    fenced = _FENCE.match(content)
    text = fenced.group(1) if fenced else content
    try:
        parsed = json.loads(text, strict=False)
    except json.JSONDecodeError as error:
        around = text[max(0, error.pos - INVALID_JSON_CONTEXT_CHARS): error.pos + INVALID_JSON_CONTEXT_CHARS]
        raise LLMError("invalid_json", f"{error.msg} (char {error.pos} of {len(text)}: {around!r})") from error
    if not isinstance(parsed, dict):
        raise LLMError("schema_mismatch", f"top level is {type(parsed).__name__}, not an object")
    return parsed


# A message that repeats a long reply (e.g. "[...] is too long") is replaced by the rule it breaks.
MAX_PROBLEM_CHARS = 200


@functools.lru_cache(maxsize=64)
def _validator(schema_json: str) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_json)
    validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator_class.check_schema(schema)  # a broken schema is the project's bug: say so, loudly
    return validator_class(schema)


def schema_problem(value: Any, schema: dict) -> str | None:
    """The most relevant way `value` breaks `schema` (jsonschema's best match), or None.

    Named by the JSON path of the field at fault, e.g. "$.pairs[1]: 'type' is a required property".
    Endpoints in json_object mode may enforce nothing, so this is what makes every mode return the
    same shapes.
    """
    error = jsonschema.exceptions.best_match(_validator(json.dumps(schema, sort_keys=True)).iter_errors(value))
    if error is None:
        return None
    message = error.message
    if len(message) > MAX_PROBLEM_CHARS:
        message = f"breaks {error.validator} {json.dumps(error.validator_value, ensure_ascii=False)[:80]}"
    return f"{error.json_path}: {message}"
