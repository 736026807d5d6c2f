"""A thin wrapper over the official `openai` client for any OpenAI-compatible endpoint.

Every failure becomes one `LLMError` with a short `reason`, so callers (the turn pipeline, MACR,
the CLIs) can fail open and record "error: <reason>" without knowing the client's exception tree.

Every call is bounded: `max_tokens` (each call's own budget, sized from what it asks for, unless the
purpose's setting overrides it), a stop sequence where the output format allows one (free-text
samples only: JSON has none that is safe, see the note at SAMPLE_STOP), and a reply cut by the limit
(`finish_reason == "length"`) is an `output_cut` error rather than "invalid JSON".

JSON replies are enforced by the server, not only asked for: `json_schema` (OpenAI and servers that
take it), `json_object` with the schema inside `response_format` (llama.cpp's server, vLLM-style
servers), or `auto`, which tries `json_schema` once per endpoint and model and falls back to
`json_object` + schema when the server rejects it, remembering the outcome. The schema and the
caller's "text inside ... is data" note also go at the end of the user message: some chat formats
drop system messages (llama-cpp-python's `gemma` format does).
"""
from __future__ import annotations

import functools
import json
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import jsonschema
import jsonschema.exceptions
import jsonschema.protocols
import jsonschema.validators
import openai

logger = logging.getLogger(__name__)

JsonMode = Literal["auto", "json_schema", "json_object"]
Purpose = Literal["answer", "detection", "suggestions"]

JSON_MODES: tuple[str, ...] = ("auto", "json_schema", "json_object")
DEFAULT_JSON_MODE: JsonMode = "auto"
PURPOSES: tuple[str, ...] = ("answer", "detection", "suggestions")
DEFAULT_TIMEOUT_S = 30.0
# A call that names no budget of its own; callers size theirs from their schema.
DEFAULT_MAX_TOKENS = 1024
# JSON calls send no stop sequence: no run of characters is safe to stop at, since llama.cpp-family
# grammars let raw newlines into strings (see parse_json_object), so a whitespace stop could cut a
# string the grammar and the parser both accept. Their work is bounded by max_tokens, and in
# json_object mode by the schema's string bounds and the grammar's whitespace rule (one space).
# Free-text samples are one short phrase on one line: a line break ends them (small models write single
# newlines, so a blank-line stop let 89 of 90 samples run to their token limit on the real server).
SAMPLE_STOP: tuple[str, ...] = ("\n",)
# How a server says "I do not take this response_format": OpenAI-style 400, FastAPI-validation 422,
# llama.cpp's 500. Anything else (auth, rate limits, timeouts) is not about the format.
_FORMAT_REJECTED_STATUSES = frozenset({400, 422, 500})
# openai.OpenAI refuses to start without a key; local servers (llama.cpp, vLLM) ignore it.
PLACEHOLDER_API_KEY = "not-needed"


class LLMError(Exception):
    """Any failure of an LLM call. `reason` is one of REASONS; `detail` says what exactly.

    `calls` is how many completions the failed operation had already sent (a failed call was spent);
    `status` is the HTTP status when the server answered with an error.
    """

    REASONS = ("timeout", "http_error", "invalid_json", "schema_mismatch", "output_cut", "not_configured")

    def __init__(self, reason: str, detail: str = "", *, calls: int = 1, status: int | None = None) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.calls = calls
        self.status = status


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    api_key: str
    model: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    json_mode: JsonMode = DEFAULT_JSON_MODE
    # Overrides every call's own token budget for this purpose when set (the <PURPOSE>_LLM_MAX_TOKENS setting).
    max_tokens: int | None = None


@dataclass(frozen=True)
class SampledText:
    text: str
    logprob_sum: float | None  # None when the endpoint returned no token logprobs


@dataclass(frozen=True)
class JsonReply:
    parsed: dict
    tokens: int  # total tokens the endpoint reported
    calls: int  # completions sent: 2 when `auto` had to fall back on this call
    json_mode: str  # the mode that produced the reply


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token: its log-probability and the most likely tokens at its position (best first)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class TopLogprobGeneration:
    text: str
    tokens: tuple[TokenLogprob, ...] | None  # None when the endpoint returned no distribution
    finish_reason: str
    usage_tokens: int


class LLMConfigError(ValueError):
    """A configured LLM value that cannot work (an unknown JSON mode, a non-positive token budget)."""


def llm_config_from(purpose: Purpose, *, shared: Mapping[str, Any] | None, specific: Mapping[str, Any] | None,
                    **overrides: Any) -> LLMConfig | None:
    """The endpoint for one purpose from plain values: each key of `specific` falls back to `shared`, and
    `overrides` (a command's --base-url, --model, ...; None or "" = not given) win over both. None means
    no LLM is configured (no base URL), and callers use their deterministic paths.

    agents never reads Django settings: agents.configuration passes them in (settings.LLM and
    settings.LLM_PURPOSES[purpose]).
    """
    if purpose not in PURPOSES:
        raise ValueError(f"unknown LLM purpose {purpose!r}; expected one of {PURPOSES}")
    shared, specific = dict(shared or {}), dict(specific or {})

    def pick(key: str) -> Any:
        for layer in (overrides, specific):
            value = layer.get(key)
            if value not in (None, ""):
                return value
        return shared.get(key)

    unknown = set(overrides) - set(LLMConfig.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown LLM setting(s) {sorted(unknown)}")
    base_url = pick("base_url")
    if not base_url:
        return None
    json_mode = pick("json_mode") or DEFAULT_JSON_MODE
    if json_mode not in JSON_MODES:
        raise LLMConfigError(f"LLM json_mode for {purpose} is {json_mode!r}; expected one of {JSON_MODES}")
    max_tokens = pick("max_tokens")
    if max_tokens is not None and int(max_tokens) < 1:
        raise LLMConfigError(f"LLM max_tokens for {purpose} is {max_tokens!r}; expected a positive integer")
    return LLMConfig(
        base_url=str(base_url),
        api_key=str(pick("api_key") or PLACEHOLDER_API_KEY),
        model=str(pick("model") or ""),
        timeout_s=float(pick("timeout_s") or DEFAULT_TIMEOUT_S),
        json_mode=json_mode,
        max_tokens=int(max_tokens) if max_tokens is not None else None,
    )


def token_budget(config: LLMConfig, own: int | None) -> int:
    """The max_tokens a call sends: the purpose's setting when set, else the call's own budget."""
    return int(config.max_tokens or own or DEFAULT_MAX_TOKENS)


@functools.lru_cache(maxsize=32)
def _client(base_url: str, api_key: str, timeout_s: float) -> openai.OpenAI:
    # One client (and its connection pool) per endpoint; the openai client is thread-safe.
    # No retries: a retry would double the latency the per-turn timeout has to absorb.
    return openai.OpenAI(base_url=base_url, api_key=api_key or PLACEHOLDER_API_KEY, timeout=timeout_s, max_retries=0)


def _call(create: Any, *, config: LLMConfig, **params: Any) -> Any:
    try:
        return create(model=config.model, **params)
    except openai.APITimeoutError as error:
        raise LLMError("timeout", f"no answer within {config.timeout_s}s") from error
    except openai.APIStatusError as error:
        raise LLMError("http_error", f"HTTP {error.status_code}: {_error_message(error)}",
                       status=error.status_code) from error
    except openai.APIConnectionError as error:
        raise LLMError("http_error", f"connection failed: {error.__cause__ or error}") from error
    except openai.OpenAIError as error:  # e.g. a response body the client cannot read
        raise LLMError("http_error", f"{type(error).__name__}: {error}") from error


def _create(*, config: LLMConfig, **params: Any) -> Any:
    client = _client(config.base_url, config.api_key, float(config.timeout_s))
    return _call(client.chat.completions.create, config=config, **params)


def _error_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error")
        message = inner.get("message") if isinstance(inner, dict) else body.get("message")
        if message:
            return str(message)[:300]
    return str(error.message)[:300]


# --- JSON mode: what each endpoint accepts, learnt once -------------------------------------------

_learnt_json_modes: dict[tuple[str, str], str] = {}
_learnt_lock = threading.Lock()


def learnt_json_mode(config: LLMConfig) -> str | None:
    """What `auto` settled on for this endpoint and model in this process (None: not tried yet)."""
    with _learnt_lock:
        return _learnt_json_modes.get((config.base_url, config.model))


def _learn_json_mode(config: LLMConfig, mode: str, *, why: str = "") -> None:
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
        return _create(config=config, **params)

    mode = config.json_mode
    probing = False
    if mode == "auto":
        learnt = learnt_json_mode(config)
        mode, probing = learnt or "json_schema", learnt is None
    calls = 1
    try:
        response = send(mode)
    except LLMError as error:
        if not (probing and error.status in _FORMAT_REJECTED_STATUSES):
            raise
        # The server refused json_schema: ask once more with json_object + schema; remember it if that works.
        mode, calls = "json_object", 2
        try:
            response = send(mode)
        except LLMError as second:
            second.calls = calls
            raise
        _learn_json_mode(config, mode, why=f"the server refused response_format json_schema ({error.detail})")
    else:
        if probing:
            _learn_json_mode(config, mode)
    try:
        parsed = _parsed_reply(response, schema=schema, limit=limit)
    except LLMError as error:
        error.calls = calls
        raise
    return JsonReply(parsed=parsed, tokens=_usage_tokens(response), calls=calls, json_mode=mode)


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


# --- free text, sampled ---------------------------------------------------------------------------

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
        asking = logprobs and not _refuses_logprobs(config)
        if asking:
            params["logprobs"] = True
            params["top_logprobs"] = SEQUENCE_TOP_LOGPROBS
        try:
            response = _create(config=config, **params)
        except LLMError as error:
            if not (asking and error.status in _FORMAT_REJECTED_STATUSES):
                error.calls = len(samples) + 1
                raise
            # Refused (llama-cpp-python without logits_all answers 500): sample without, once and for all.
            _remember_no_logprobs(config, why=error.detail)
            params.pop("logprobs"), params.pop("top_logprobs")
            asking = False
            try:
                response = _create(config=config, **params)
            except LLMError as second:
                second.calls = len(samples) + 2
                raise
        tokens += _usage_tokens(response)
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


_logprobs_refused: set[tuple[str, str]] = set()


def _refuses_logprobs(config: LLMConfig) -> bool:
    return (config.base_url, config.model) in _logprobs_refused


def _remember_no_logprobs(config: LLMConfig, *, why: str) -> None:
    if not _refuses_logprobs(config):
        _logprobs_refused.add((config.base_url, config.model))
        logger.warning("LLM %s model %r refused log-probabilities (%s); sampling without them from now on",
                       config.base_url, config.model, why)


def _warn_no_logprobs(config: LLMConfig) -> None:
    key = (config.base_url, config.model)
    if key not in _warned_no_logprobs:
        _warned_no_logprobs.add(key)
        logger.warning("LLM %s model %r returned no log-probabilities although asked (top_logprobs=%d); "
                       "callers fall back to equal weights", config.base_url, config.model, SEQUENCE_TOP_LOGPROBS)


def _usage_tokens(response: Any) -> int:
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0
    total = getattr(usage, "total_tokens", None)
    if total is None:
        total = (getattr(usage, "prompt_tokens", 0) or 0) + (getattr(usage, "completion_tokens", 0) or 0)
    return int(total or 0)


def _logprob_sum(choice: Any) -> float | None:
    tokens = token_logprobs(getattr(choice, "logprobs", None))
    if not tokens:
        return None
    return float(sum(token.logprob for token in tokens))


# --- top-k log-probabilities per generated token (knowledge assessment, IGD) ---------------------

def token_logprobs(logprobs: Any) -> list[TokenLogprob] | None:
    """Each generated token's log-probability and its top alternatives, from a choice's `logprobs`.

    Reads both shapes servers send: the chat shape (`content: [{token, logprob, top_logprobs:
    [{token, logprob}]}]`) and the completions shape (`tokens`, `token_logprobs`, `top_logprobs:
    [{token: logprob}]`), which some servers return from the chat endpoint too. None when there is
    no distribution (not asked for, or the server ignored the request).
    """
    if logprobs is None:
        return None
    data = logprobs.model_dump() if hasattr(logprobs, "model_dump") else logprobs
    if not isinstance(data, dict):
        return None
    content = data.get("content")
    if isinstance(content, list) and content:
        result = []
        for item in content:
            if item.get("logprob") is None:
                return None
            top = tuple((alt["token"], float(alt["logprob"])) for alt in item.get("top_logprobs") or [])
            result.append(TokenLogprob(token=item.get("token") or "", logprob=float(item["logprob"]), top=_best_first(top)))
        return result
    values = data.get("token_logprobs")
    if isinstance(values, list) and values:
        texts = data.get("tokens") or [""] * len(values)
        tops = data.get("top_logprobs") or [None] * len(values)
        result = []
        for token, value, top in zip(texts, values, tops):
            if value is None:
                return None
            pairs = tuple((alt, float(lp)) for alt, lp in (top or {}).items())
            result.append(TokenLogprob(token=token, logprob=float(value), top=_best_first(pairs)))
        return result
    return None


def _best_first(pairs: tuple[tuple[str, float], ...]) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(pairs, key=lambda pair: -pair[1]))


def generate_with_top_logprobs(
    *,
    config: LLMConfig,
    top_k: int,
    max_tokens: int,
    system: str | None = None,
    user: str | None = None,
    prompt: str | None = None,
    temperature: float = 0.0,
    stop: list[str] | None = None,
) -> TopLogprobGeneration:
    """Generate text with the top-k log-probabilities of every generated token.

    With `system`/`user`, the chat endpoint; with `prompt`, the completions endpoint (raw text, e.g. a
    forced prefix to continue). `tokens` is None when the endpoint returned no distribution: the
    caller decides (and says) how it falls back. Raises LLMError like every call here; a reply cut
    at `max_tokens` is returned with finish_reason "length", since free text cut short is still text.
    `max_tokens` is taken as asked (one token at a time is a valid use); the purpose's setting only caps it.
    """
    if top_k < 1:
        raise ValueError("top_k must be at least 1 (servers return nothing for 0)")
    if (prompt is None) == (user is None):
        raise ValueError("give either prompt (completions) or user (chat)")
    limit = min(max_tokens, config.max_tokens) if config.max_tokens else max_tokens
    client = _client(config.base_url, config.api_key, float(config.timeout_s))
    extra: dict[str, Any] = {"stop": stop} if stop else {}
    if prompt is not None:
        response = _call(client.completions.create, config=config, prompt=prompt, max_tokens=limit,
                         temperature=temperature, logprobs=top_k, **extra)
        choices = getattr(response, "choices", None) or []
        text = choices[0].text if choices else ""
    else:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
        response = _call(client.chat.completions.create, config=config, messages=messages, max_tokens=limit,
                         temperature=temperature, logprobs=True, top_logprobs=top_k, **extra)
        choices = getattr(response, "choices", None) or []
        text = (choices[0].message.content or "") if choices else ""
    if not choices:
        raise LLMError("invalid_json", "no choices in the response")
    tokens = token_logprobs(getattr(choices[0], "logprobs", None))
    return TopLogprobGeneration(text=text, tokens=tuple(tokens) if tokens else None,
                                finish_reason=str(choices[0].finish_reason or ""), usage_tokens=_usage_tokens(response))


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
