"""A local OpenAI-compatible chat-completions server, for tests and benchmarks.

litellm talks to it as `openai/<name>` with `api_base=stub.url`, the same code path as a real
provider. `POST /v1/chat/completions` answers in OpenAI's response shape with content that is
valid against the requested schema: `response_format.json_schema.schema` when the request has
one, else the last fenced ```json block of the messages that is a JSON schema (how the client
instructs a model without structured output). Without either, the content is a short text.

Unscripted, a request gets the smallest valid instance of its schema; with `schema_driven=True`
it gets one generated from the schema alone as a model server with structured output might
(`schema_replies`: any enum value, empty and unicode strings, ids and markers quoted from the
prompt or invented, duplicates), seeded by the request, so the same request gets the same reply.

Scripting: `script(marker, *replies)` queues replies (dicts and pydantic objects are sent as
JSON, strings as they are) for requests that match `marker`; `respond(marker, function)` answers
every matching request with `function(request_body)`. A request matches a marker when the marker
equals its model name as the server sees it (litellm strips the `openai/` prefix: route an agent
to `openai/stub-<agent>` and script `stub-<agent>`) or appears in any of its messages (e.g. a
phrase of an agent's system prompt). Queued replies come first, then functions, then the
generated reply.

Fault injection: `fail_next(kind, n)` makes the next `n` requests (matching `marker`, if given)
fail as `kind` says, before any script. The server records every request body, the number of
requests and the most requests it held at once; `latency_s` holds each request that long so
that concurrency shows. `hung=True` makes a server that accepts every connection and never
answers anything (GET or POST).

Model servers' ways: with `slots`, requests queue and only that many are decoded at once (each
for `latency_s`), and a request whose client went away (its timeout) is still decoded and
counted in `abandoned_decodes`, as llama-cpp-python's server does; with `context_tokens`, a
request whose prompt (counted roughly: `rough_tokens`) and max_tokens exceed it is refused as
OpenAI refuses it (HTTP 400, `context_length_exceeded`, the message stating the window), counted
in `window_refusals`, and replies report that count as their prompt's tokens.
`llama_cpp_python_like()` is llama-cpp-python's server (0.3.x): one slot, no `/props`, a window,
no `json_schema` response format, its routes listed at `/openapi.json` and `/v1/models` naming
the model without its window.

The server stops by itself after `lifetime_s`, and `stop()` releases hanging requests at once.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from litpipe.settings import Settings
from litpipe_tests.schema_replies import SeededChoices, reply, vocabulary

FaultKind = Literal[
    "rate_limit",  # 429 with Retry-After
    "server_error",  # 500
    "hang",  # no answer for `seconds` (meant to outlast the client's timeout)
    "drop",  # the connection closes without an answer
    "invalid_json",  # 200 whose content is not JSON
    "invalid_schema",  # 200 whose content is JSON that no object schema accepts
    "cut_off",  # 200 whose JSON stops mid-way, finish_reason "length" (it ran out of max_tokens)
    "unauthorized",  # 401
    "bad_request",  # 400
    "not_found",  # 404, the model does not exist
]
Reply = dict[str, Any] | str | BaseModel
ReplyFunction = Callable[[dict[str, Any]], Reply]

_ERRORS: dict[str, tuple[int, str, str, str]] = {
    "rate_limit": (429, "Rate limit reached; please retry later.", "rate_limit_error", "rate"),
    "server_error": (500, "The server had an error processing your request.", "server_error", ""),
    "unauthorized": (401, "Incorrect API key provided.", "invalid_request_error", "invalid_key"),
    "bad_request": (400, "Invalid value for 'temperature'.", "invalid_request_error", "invalid"),
    "not_found": (
        404,
        "The model `{model}` does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
    ),
}
_FENCED_JSON = re.compile(r"```(?:json)?\s*\n(.*?)\n\s*```", re.DOTALL)
# How a small model's tokenizer splits English, roughly: more tokens than litellm's counter of an
# unknown model (tiktoken's) finds in the same text.
CHARS_PER_TOKEN = 3.5
# The chat template's tokens around each message.
TEMPLATE_TOKENS = 4
# The routes llama-cpp-python's server (FastAPI) lists at /openapi.json.
LLAMA_CPP_PYTHON_PATHS = [
    "/v1/completions",
    "/v1/embeddings",
    "/v1/chat/completions",
    "/v1/models",
    "/extras/tokenize",
    "/extras/tokenize/count",
    "/extras/detokenize",
]


@dataclass
class _Fault:
    kind: FaultKind
    remaining: int
    marker: str | None
    retry_after: float
    seconds: float


class StubLLM:
    """The server, running in a background thread from construction until `stop()`."""

    def __init__(
        self,
        latency_s: float = 0.0,
        lifetime_s: float = 300.0,
        schema_driven: bool = False,
        *,
        hung: bool = False,
        slots: int | None = None,
        context_tokens: int | None = None,
    ) -> None:
        self.latency_s = latency_s
        self.schema_driven = schema_driven
        self.hung = hung
        self.context_tokens = context_tokens
        # What GET answers, by path (`llama_cpp_python_like`); anything else is a 404.
        self.pages: dict[str, dict[str, Any]] = {}
        self._decoding = threading.Semaphore(slots) if slots is not None else None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._requests: list[dict[str, Any]] = []
        self._request_headers: list[dict[str, str]] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._abandoned = 0
        self._window_refusals = 0
        self._faults: list[_Fault] = []
        # The response_format types this server refuses, as llama-cpp-python's server refuses
        # `json_schema`: an HTTP 500 naming the types it takes.
        self.refused_formats: set[str] = set()
        self._queued: dict[str, deque[Reply]] = {}
        self._functions: dict[str, ReplyFunction] = {}
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.stub = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        # Bounded: a server nobody stops still goes away.
        self._lifetime_s, self._started = lifetime_s, time.monotonic()
        self._reaper = threading.Timer(lifetime_s, self.stop)
        self._reaper.daemon = True
        self._reaper.start()

    def report_slots(self, slots: int) -> None:
        """Says on `/props`, as llama.cpp's server does, that it decodes `slots` requests at
        once: a test of litpipe's own bound (`llm.concurrency`) then sees that bound, not the
        in-flight limit a silent server's latency teaches."""
        self.pages["/props"] = {"total_slots": slots}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request body received, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The headers of every request (names in lower case), in arrival order."""
        with self._lock:
            return list(self._request_headers)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def max_in_flight(self) -> int:
        with self._lock:
            return self._max_in_flight

    @property
    def abandoned_decodes(self) -> int:
        """Requests decoded (with `slots`) after their client had gone."""
        with self._lock:
            return self._abandoned

    @property
    def window_refusals(self) -> int:
        """Requests refused as longer than `context_tokens`."""
        with self._lock:
            return self._window_refusals

    def script(self, marker: str, *replies: Reply) -> None:
        """Answer the next matching requests with these replies, one each, in order."""
        with self._lock:
            self._queued.setdefault(marker, deque()).extend(replies)

    def respond(self, marker: str, function: ReplyFunction) -> None:
        """Answer every matching request with `function(request_body)`."""
        with self._lock:
            self._functions[marker] = function

    def fail_next(
        self,
        kind: FaultKind,
        n: int = 1,
        *,
        marker: str | None = None,
        retry_after: float = 1.0,
        seconds: float = 10.0,
    ) -> None:
        """Make the next `n` requests (matching `marker`, if given) fail as `kind` says.

        `retry_after` is the Retry-After of `rate_limit`; `seconds` how long `hang` holds.
        """
        with self._lock:
            self._faults.append(_Fault(kind, n, marker, retry_after, seconds))

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()  # releases hanging and sleeping requests
        self._reaper.cancel()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> StubLLM:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # The handler's side.

    def _begin(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[_Fault | None, Reply | None]:
        with self._lock:
            self._requests.append(body)
            self._request_headers.append(headers)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            fault = next(
                (f for f in self._faults if f.remaining > 0 and _matches(f.marker, body)), None
            )
            if fault is not None:
                fault.remaining -= 1
                return fault, None
            for marker, queue in self._queued.items():
                if queue and _matches(marker, body):
                    return None, queue.popleft()
            for marker, function in self._functions.items():
                if _matches(marker, body):
                    return None, function(body)
        return None, None

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _abandoned_decode(self) -> None:
        with self._lock:
            self._abandoned += 1

    def _refuses_window(self, body: dict[str, Any]) -> str | None:
        """OpenAI's message refusing a request longer than `context_tokens`, if it is."""
        if self.context_tokens is None:
            return None
        prompt = prompt_tokens(body)
        completion = int(body.get("max_tokens") or 0)
        if prompt + completion <= self.context_tokens:
            return None
        with self._lock:
            self._window_refusals += 1
        return (
            f"This model's maximum context length is {self.context_tokens} tokens. However, "
            f"you requested {prompt + completion} tokens ({prompt} in the messages, "
            f"{completion} in the completion). Please reduce the length of the messages or "
            "completion."
        )

    def _wait(self, seconds: float) -> None:
        self._stopped.wait(seconds)

    def _lifetime_left(self) -> float:
        return max(0.0, self._lifetime_s - (time.monotonic() - self._started))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Many concurrent clients connect at once: the default backlog of 5 would make them retry.
    request_queue_size = 256
    stub: StubLLM


class _Handler(BaseHTTPRequestHandler):
    # Keep-alive, as real providers do: the clients reuse their connections.
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK (about 40 ms a reply), which benchmarks would count as client time.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read `StubLLM.requests`."""

    def do_GET(self) -> None:
        stub = self.server.stub
        if stub.hung:
            stub._wait(stub._lifetime_left())
            self.close_connection = True
            return
        page = stub.pages.get(self.path.rstrip("/"))
        if page is None:
            self._send_json(404, {"detail": "Not Found"})
        else:
            self._send_json(200, page)

    def do_POST(self) -> None:
        stub = self.server.stub
        chat = self.path.rstrip("/").endswith("/chat/completions")
        if not chat and not stub.hung:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        headers = {name.lower(): value for name, value in self.headers.items()}
        if not chat:  # a hung server's other routes: never answered, not counted
            stub._wait(stub._lifetime_left())
            self.close_connection = True
            return
        fault, scripted = stub._begin(body, headers)
        try:
            if stub.hung:
                stub._wait(stub._lifetime_left())
                self.close_connection = True
            elif stub._decoding is None:
                if stub.latency_s:
                    stub._wait(stub.latency_s)
                self._answer(body, fault, scripted)
            else:
                with stub._decoding:  # queued until a slot decodes it
                    if stub.latency_s:
                        stub._wait(stub.latency_s)
                    if self._client_gone():
                        stub._abandoned_decode()
                        self.close_connection = True
                    else:
                        self._answer(body, fault, scripted)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout) before the answer
        finally:
            stub._end()

    def _client_gone(self) -> bool:
        """Whether the client closed its connection (its timeout ran out) while the request
        waited and was decoded."""
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _answer(self, body: dict[str, Any], fault: _Fault | None, scripted: Reply | None) -> None:
        format_type = (body.get("response_format") or {}).get("type")
        refused = format_type in self.server.stub.refused_formats
        too_long = None if refused or fault else self.server.stub._refuses_window(body)
        if refused:
            message = "1 validation error: response_format.type Input should be 'text' or ..."
            self._send_json(500, {"error": {"message": message, "type": "server_error"}})
        elif too_long is not None:
            error = {
                "message": too_long,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
            self._send_json(400, {"error": error})
        elif fault is None:
            self._send_completion(body, _content(scripted, body, self.server.stub.schema_driven))
        elif fault.kind == "hang":
            self.server.stub._wait(fault.seconds)
            self.close_connection = True
        elif fault.kind == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif fault.kind == "invalid_json":
            self._send_completion(body, '{"this is": not JSON')
        elif fault.kind == "invalid_schema":
            self._send_completion(body, json.dumps(["not", "an", "object"]))
        elif fault.kind == "cut_off":
            self._send_completion(body, '{"questions": ["What', finish_reason="length")
        else:
            status, message, error_type, code = _ERRORS[fault.kind]
            error = {"message": message.format(model=body.get("model")), "type": error_type}
            headers = {"Retry-After": f"{fault.retry_after:g}"} if status == 429 else {}
            self._send_json(status, {"error": {**error, "code": code or None}}, headers)

    def _send_completion(
        self, body: dict[str, Any], content: str, finish_reason: str = "stop"
    ) -> None:
        if self.server.stub.context_tokens is not None:
            prompt_count = prompt_tokens(body)
        else:
            prompt_count = max(1, len(json.dumps(body.get("messages", []))) // 4)
        completion_tokens = max(1, len(content) // 4)
        self._send_json(
            200,
            {
                "id": f"chatcmpl-stub-{time.monotonic_ns()}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "stub"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": finish_reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_count,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_count + completion_tokens,
                },
            },
        )

    def _send_json(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def rough_tokens(text: str) -> int:
    """A text's tokens as the stub counts them (a small model's tokenizer, roughly)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def prompt_tokens(body: dict[str, Any]) -> int:
    """A request's prompt tokens as the stub counts them: its messages and their template."""
    return sum(
        rough_tokens(str(message.get("content", ""))) + TEMPLATE_TOKENS
        for message in body.get("messages", [])
    )


def llama_cpp_python_like(
    context_tokens: int = 2048, decode_s: float = 0.1, lifetime_s: float = 300.0
) -> StubLLM:
    """A stub that behaves as llama-cpp-python's server (0.3.36) with one model: one request
    decoded at a time (a request whose client went away still decoded), no `/props`, a
    `context_tokens` window it states only in refusing a longer request (HTTP 400,
    `context_length_exceeded`), no `json_schema` response format (a 500, as
    llama-cpp-python's validation gives), its routes at `/openapi.json` and the model at
    `/v1/models` (no window)."""
    stub = StubLLM(
        latency_s=decode_s, lifetime_s=lifetime_s, slots=1, context_tokens=context_tokens
    )
    stub.refused_formats = {"json_schema"}
    stub.pages = {
        "/openapi.json": {
            "openapi": "3.1.0",
            "info": {"title": "🦙 llama.cpp Python API", "version": "0.3.36"},
            "paths": {path: {} for path in LLAMA_CPP_PYTHON_PATHS},
        },
        "/v1/models": {
            "object": "list",
            "data": [
                {
                    "id": "/models/SmolLM2-135M-Instruct-Q8_0.gguf",
                    "object": "model",
                    "owned_by": "me",
                    "permissions": [],
                }
            ],
        },
    }
    return stub


def _matches(marker: str | None, body: dict[str, Any]) -> bool:
    if marker is None or body.get("model") == marker:
        return True
    return any(marker in str(message.get("content", "")) for message in body.get("messages", []))


def _content(scripted: Reply | None, body: dict[str, Any], schema_driven: bool) -> str:
    if isinstance(scripted, BaseModel):
        return scripted.model_dump_json()
    if isinstance(scripted, dict):
        return json.dumps(scripted)
    if isinstance(scripted, str):
        return scripted
    schema = requested_schema(body)
    if schema is None:
        return "A stub reply."
    if not schema_driven:
        return json.dumps(example_from_schema(schema))
    messages = body.get("messages", [])
    seed = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    generated = reply(schema, SeededChoices(seed), vocabulary(messages))
    return json.dumps(generated, ensure_ascii=False)


def requested_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks its reply to follow, if it names one."""
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return response_format["json_schema"]["schema"]
    for message in reversed(body.get("messages", [])):
        for block in reversed(_FENCED_JSON.findall(str(message.get("content", "")))):
            try:
                candidate = json.loads(block)
            except json.JSONDecodeError:
                continue
            if isinstance(candidate, dict) and {"type", "properties", "$defs"} & candidate.keys():
                return candidate
    return None


def example_from_schema(
    schema: dict[str, Any], root: dict[str, Any] | None = None, name: str = "value"
) -> Any:
    """A small instance valid against `schema`: required properties only, arrays of
    max(minItems, 1) items, the first enum value or anyOf branch, bounds respected."""
    root = root if root is not None else schema
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        siblings = {key: value for key, value in schema.items() if key != "$ref"}
        return example_from_schema({**target, **siblings}, root, name)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            options = schema[combinator]
            chosen = next((o for o in options if o.get("type") != "null"), options[0])
            return example_from_schema(chosen, root, name)
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(part)
        return example_from_schema(merged, root, name)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            key: example_from_schema(properties.get(key, {}), root, key)
            for key in schema.get("required", [])
        }
    if kind == "array":
        count = max(schema.get("minItems", 1), 1)
        count = min(count, schema.get("maxItems", count))
        items = schema.get("items", {})
        values = [example_from_schema(items, root, name) for _ in range(count)]
        # Distinct strings, so that uniqueItems holds too.
        return [f"{v} {i + 1}" if isinstance(v, str) else v for i, v in enumerate(values)]
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string(schema, name)


def _number(schema: dict[str, Any], integer: bool) -> int | float:
    low, high = schema.get("minimum"), schema.get("maximum")
    above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if integer:
        if low is not None or above is not None:
            return math.ceil(low) if low is not None else math.floor(above) + 1
        if high is not None or below is not None:
            return min(0, math.floor(high) if high is not None else math.ceil(below) - 1)
        return 0
    floor = low if low is not None else above
    ceiling = high if high is not None else below
    if floor is not None and ceiling is not None:
        return (floor + ceiling) / 2
    if floor is not None:
        return float(floor + 1)
    return float(ceiling - 1) if ceiling is not None else 0.0


def _string(schema: dict[str, Any], name: str) -> str:
    formats = {"date-time": "2024-01-01T00:00:00Z", "date": "2024-01-01", "uri": "https://x.org"}
    text = formats.get(schema.get("format", ""), f"stub {name}")
    text = text.ljust(schema.get("minLength", 0), "x")
    return text[: schema.get("maxLength", len(text))]


def stub_settings(home: Path, stub: StubLLM, **overrides: Any) -> Settings:
    """Settings whose agents call the stub as `openai/stub` (a model litellm does not know, so
    the client instructs and parses); `overrides` are Settings fields (an `llm` group's fields
    join the stub's)."""
    llm = {"model": "openai/stub", "api_base": stub.url} | overrides.pop("llm", {})
    return Settings(home=home, llm=llm, **overrides)


@pytest.fixture
def stub_llm() -> Iterator[StubLLM]:
    """A fresh stub server for one test, stopped at teardown."""
    with StubLLM() as stub:
        yield stub
