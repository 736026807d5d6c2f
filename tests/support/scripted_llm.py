"""A real OpenAI-compatible chat-completions server on loopback, scripted per test or benchmark.

Real HTTP, real `openai` client, real JSON: only the model is scripted. Each POST to
/v1/chat/completions takes the next behaviour from a queue (`push`), or asks a `respond(request)`
callback when the queue is empty; with neither, it answers HTTP 500 "script exhausted", so an
unexpected call is visible. Every request body is recorded in `requests`.

Like real servers it honours `max_tokens` (a reply longer than the limit, at ~4 characters per
token, is cut and ends with finish_reason "length") and returns `top_logprobs` alternatives when
asked. POST /v1/completions (raw prompts) is served from the same queue; a `NextToken` behaviour answers it
with one token and exactly the top log-probabilities scripted (IGD's OpenAI-compatible backend).

`ScriptedLLM(quirks=LLAMA_CPP_QUIRKS)` behaves like llama-cpp-python's server where it differs from
OpenAI's: HTTP 500 on response_format json_schema, log-probabilities only when top_logprobs is set,
`n` ignored (one choice), system messages dropped by the chat format (`seen` records the messages
the model actually got), raw newlines and tabs inside JSON strings (its grammar lets them through), and chat log-probabilities in the completions shape on request.

Use in tests through the `scripted_llm` fixture (registered with
`pytest_plugins = ["tests.support.scripted_llm"]`), or from a benchmark:

    with ScriptedLLM(respond=my_callback, delay_s=0.05) as server:
        config = server.config(timeout_s=2)
"""
from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest

# llama-cpp-python's server, where it differs from OpenAI's API.
REJECTS_JSON_SCHEMA = "rejects_json_schema"  # HTTP 500: it takes only response_format text / json_object
LOGPROBS_NEED_TOP_LOGPROBS = "logprobs_need_top_logprobs"  # `logprobs: true` alone returns null
IGNORES_N = "ignores_n"  # one choice whatever n is
DROPS_SYSTEM = "drops_system"  # the `gemma` chat format leaves system messages out of the prompt
# Its schema grammar lets control characters into strings unescaped: a JSON reply's "\n" arrives as a raw newline.
RAW_CONTROL_CHARS_IN_STRINGS = "raw_control_chars_in_strings"
LLAMA_CPP_QUIRKS = frozenset({REJECTS_JSON_SCHEMA, LOGPROBS_NEED_TOP_LOGPROBS, IGNORES_N, DROPS_SYSTEM,
                              RAW_CONTROL_CHARS_IN_STRINGS})
# Older servers answer the chat endpoint with completions-shaped logprobs (tokens / token_logprobs / top_logprobs).
COMPLETIONS_SHAPED_LOGPROBS = "completions_shaped_logprobs"
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Reply:
    """HTTP 200 with one choice per content. A dict/list content is sent as its JSON text, a str as is."""

    contents: tuple[Any, ...]
    logprobs: tuple[tuple[float, ...], ...] | None = None  # token logprobs per choice, sent when asked for
    delay_s: float = 0.0
    finish_reason: str = "stop"


@dataclass(frozen=True)
class HTTPFailure:
    status: int = 500
    message: str = "scripted failure"
    delay_s: float = 0.0


@dataclass(frozen=True)
class NextToken:
    """A /v1/completions reply of one token: the top log-probabilities at that position (the token sent is the
    most likely). `top=None` sends no logprobs at all, as servers that do not support them do."""

    top: dict[str, float] | None
    delay_s: float = 0.0


Behaviour = Reply | HTTPFailure | NextToken
Respond = Callable[[dict], Any]  # request JSON -> content (dict or str) or a Behaviour


def answer(content: Any, *, logprobs: list[float] | None = None, delay_s: float = 0.0) -> Reply:
    """A valid reply whose message content is `content` (a dict is JSON-encoded)."""
    return Reply(contents=(content,), logprobs=(tuple(logprobs),) if logprobs is not None else None, delay_s=delay_s)


def samples(texts: list[str], *, logprobs: list[list[float]] | None = None) -> Reply:
    """Several choices in one reply (for requests with n > 1)."""
    return Reply(contents=tuple(texts), logprobs=tuple(tuple(lp) for lp in logprobs) if logprobs else None)


def invalid_json(text: str = '{"pairs": [{"refs": ["a", ') -> Reply:
    """A 200 reply whose content is not JSON (a truncated object by default)."""
    return Reply(contents=(text,))


def slow(seconds: float, content: Any = None) -> Reply:
    """Waits `seconds` before answering (past the client's timeout, typically)."""
    return Reply(contents=(content if content is not None else {"pairs": []},), delay_s=seconds)


def http_error(status: int = 500, message: str = "scripted failure") -> HTTPFailure:
    return HTTPFailure(status=status, message=message)


def verdict(
    a: str,
    b: str,
    *,
    conflict: bool = True,
    type: str = "price",  # noqa: A002 - the field's name in the schema
    explanation: str = "scripted explanation",
    snippets: dict[str, str] | None = None,
) -> dict:
    """One item of agents.llm_detector's answer schema. Invented refs / made-up quotes are just other arguments."""
    return {
        "refs": [a, b],
        "explanation": explanation,
        "conflict": conflict,
        "type": type if conflict else "none",
        "snippets": [{"ref": ref, "quote": quote} for ref, quote in (snippets or {}).items()],
    }


def verdicts(*items: dict) -> dict:
    """The whole detection answer: {"pairs": [...]}."""
    return {"pairs": list(items)}


def schema_name(request: dict) -> str:
    """The json_schema name a request asked for ("" in json_object mode or for plain text)."""
    return ((request.get("response_format") or {}).get("json_schema") or {}).get("name", "")


def message_text(request: dict, role: str) -> str:
    """The concatenated text of the request's messages with `role` (system / user)."""
    return "\n".join(
        message.get("content") or "" for message in request.get("messages", []) if message.get("role") == role
    )


class ScriptedLLM:
    def __init__(
        self, *, respond: Respond | None = None, delay_s: float = 0.0, model: str = "scripted-model",
        quirks: frozenset[str] = frozenset(),
    ) -> None:
        self.respond = respond
        self.delay_s = delay_s  # added to every response: a stand-in for model latency in benchmarks
        self.model = model
        self.quirks = frozenset(quirks)
        self.requests: list[dict] = []  # request bodies as sent
        self.seen: list[dict] = []  # the same requests as the model got them (after DROPS_SYSTEM)
        self._script: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True  # a handler sleeping for a "slow" script must not block stop()
        self._server.scripted = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "ScriptedLLM":
        self._thread.start()
        return self

    def stop(self) -> None:
        from agents.llm import forget_learnt_endpoints

        self._stopping.set()  # wakes handlers waiting out a delay
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        # What `auto` learnt about this address must not carry over to the next server on the same port.
        forget_learnt_endpoints()

    def __enter__(self) -> "ScriptedLLM":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- scripting ---------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def push(self, *behaviours: Behaviour) -> "ScriptedLLM":
        with self._lock:
            self._script.extend(behaviours)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def config(self, **overrides: Any):
        """An agents.llm.LLMConfig pointing here (json_schema mode, 5 s timeout unless overridden)."""
        from agents.llm import LLMConfig

        values: dict[str, Any] = {
            "base_url": self.base_url, "api_key": "test-key", "model": self.model, "timeout_s": 5.0,
            "json_mode": "json_schema",
        }
        values.update(overrides)
        return LLMConfig(**values)

    # --- serving -----------------------------------------------------------------------------
    def _next_behaviour(self, request: dict) -> Behaviour:
        seen = request
        if DROPS_SYSTEM in self.quirks:
            seen = {**request, "messages": [m for m in request.get("messages", []) if m.get("role") != "system"]}
        with self._lock:
            self.requests.append(request)
            self.seen.append(seen)
            if REJECTS_JSON_SCHEMA in self.quirks and (request.get("response_format") or {}).get("type") == "json_schema":
                # Refused before any script is used, as the real server refuses before generating.
                return HTTPFailure(status=500, message="response_format type must be 'text' or 'json_object'")
            if self._script:
                return self._script.popleft()
        if self.respond is not None:
            produced = self.respond(seen)
            return produced if isinstance(produced, (Reply, HTTPFailure, NextToken)) else answer(produced)
        return HTTPFailure(status=500, message="script exhausted: no behaviour queued for this request")

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _completion(self, request: dict, reply: Reply, *, chat: bool = True) -> dict:
        prompt_chars = (sum(len(message.get("content") or "") for message in request.get("messages", []))
                        if chat else len(str(request.get("prompt") or "")))
        contents = reply.contents[:1] if IGNORES_N in self.quirks else reply.contents
        choices = []
        completion_tokens = 0
        for index, content in enumerate(contents):
            text = content if isinstance(content, str) else json.dumps(content)
            if RAW_CONTROL_CHARS_IN_STRINGS in self.quirks and not isinstance(content, str):
                text = _ESCAPED_CONTROL.sub(lambda match: match.group(1) + _CONTROL[match.group(2)], text)
            finish_reason = reply.finish_reason
            limit = request.get("max_tokens")
            if limit and _rough_tokens(text) > limit:
                text, finish_reason = text[: limit * CHARS_PER_TOKEN], "length"
            completion_tokens += _rough_tokens(text)
            values = reply.logprobs[index] if reply.logprobs is not None and index < len(reply.logprobs) else None
            logprobs = self._logprobs(request, values, chat=chat)
            choice: dict = {"index": index, "finish_reason": finish_reason, "logprobs": logprobs}
            if chat:
                choice["message"] = {"role": "assistant", "content": text}
            else:
                choice["text"] = text
            choices.append(choice)
        prompt_tokens = _rough_tokens("x" * prompt_chars)
        return {
            "id": f"{'chatcmpl' if chat else 'cmpl'}-scripted-{next(self._ids)}",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": request.get("model") or self.model,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _logprobs(self, request: dict, values: tuple[float, ...] | None, *, chat: bool) -> dict | None:
        """The scripted token logprobs, each with `top` alternatives (the token itself first), in the asked shape."""
        if values is None:
            return None
        if chat:
            if not request.get("logprobs"):
                return None
            top = int(request.get("top_logprobs") or 0)
            if top < 1 and LOGPROBS_NEED_TOP_LOGPROBS in self.quirks:
                return None
        else:
            top = request.get("logprobs")
            if top is None:
                return None
            top = int(top)
        tokens = [f"t{position}" for position in range(len(values))]
        alternatives = [
            [(token, value)] + [(f"{token}-alt{rank}", value - rank) for rank in range(1, top)]
            for token, value in zip(tokens, values)
        ]
        if not chat or COMPLETIONS_SHAPED_LOGPROBS in self.quirks:
            return {
                "tokens": tokens,
                "token_logprobs": list(values),
                "top_logprobs": [dict(alts[:top]) for alts in alternatives] if top else None,
                "text_offset": [CHARS_PER_TOKEN * position for position in range(len(values))],
            }
        return {
            "content": [
                {"token": token, "logprob": value, "bytes": None,
                 "top_logprobs": [{"token": alt, "logprob": lp, "bytes": None} for alt, lp in alts[:top]]}
                for token, value, alts in zip(tokens, values, alternatives)
            ],
            "refusal": None,
        }


    def _text_completion(self, request: dict, reply: NextToken) -> dict:
        token = max(reply.top, key=reply.top.get) if reply.top else ""
        logprobs = None
        if reply.top and request.get("logprobs"):
            top = dict(sorted(reply.top.items(), key=lambda item: -item[1])[: int(request["logprobs"])])
            logprobs = {"tokens": [token], "token_logprobs": [reply.top[token]], "top_logprobs": [top], "text_offset": [0]}
        prompt_tokens = _rough_tokens(str(request.get("prompt") or ""))
        return {
            "id": f"cmpl-scripted-{next(self._ids)}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": request.get("model") or self.model,
            "choices": [{"index": 0, "text": token, "finish_reason": "length", "logprobs": logprobs}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 1, "total_tokens": prompt_tokens + 1},
        }


# An escaped newline / tab / carriage return in JSON text (an even run of backslashes before it is not escaping it).
_ESCAPED_CONTROL = re.compile(r"(?<!\\)((?:\\\\)*)\\([ntr])")
_CONTROL = {"n": "\n", "t": "\t", "r": "\r"}


def _rough_tokens(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)  # the usual ~4 characters per token; good enough for ratios


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; without this Nagle's algorithm adds ~40 ms to every reply.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence per-request logging
        return

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        scripted: ScriptedLLM = self.server.scripted  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        route = self.path.rstrip("/")
        if route not in ("/v1/chat/completions", "/v1/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            request = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
            return
        behaviour = scripted._next_behaviour(request)
        scripted._wait(scripted.delay_s + behaviour.delay_s)
        if isinstance(behaviour, HTTPFailure):
            self._send(behaviour.status, {"error": {"message": behaviour.message, "type": "server_error"}})
        elif isinstance(behaviour, NextToken):
            self._send(200, scripted._text_completion(request, behaviour))
        else:
            self._send(200, scripted._completion(request, behaviour, chat=route == "/v1/chat/completions"))

    def _send(self, status: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timed out): nothing to tell it


@pytest.fixture
def scripted_llm():
    """A started ScriptedLLM, stopped after the test."""
    server = ScriptedLLM().start()
    try:
        yield server
    finally:
        server.stop()
