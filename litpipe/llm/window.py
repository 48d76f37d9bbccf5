"""What a route's model can read and write at once, and how many calls its server decodes at once.

A request must fit the model's context window: its prompt, counted with the model's own
tokenizer, plus `max_tokens`. The window comes from, first to last: what the server said when it
refused a request that did not fit (`learn_window`: its message states the window, as OpenAI's,
vLLM's and llama-cpp-python's do), `llm.context_tokens` (or the agent's own), what litellm knows
of the model (`max_input_tokens`), what the server reports (llama.cpp's `/props`: `n_ctx`;
`/v1/models`: vLLM's `max_model_len`, LM Studio's `max_context_length`, `context_length`).
llama-cpp-python's server reports no window anywhere (its `/v1/models` lists names only): there
it is the setting or the first refusal. Tokens are counted by the server's `/tokenize` where it
has one (llama.cpp, vLLM), else by litellm's counter for the model, scaled up by the most that
the server's own counts of earlier prompts exceeded it (`learn_token_count`).

The server's decoding slots bound the calls sent to it at once: llama.cpp's `total_slots`, and
one for llama-cpp-python's server (known by its `/openapi.json`), which decodes one request at a
time behind a lock whatever it is asked. A call beyond them waits in the server's queue, where
litpipe's timeout would run out while the server still means to decode it.

Each server is asked once per process (its questions at once, each for at most
`PROBE_TIMEOUT_S`); an unreachable or silent one tells nothing, and litpipe then goes by what
litellm knows.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from litpipe.settings import LLMSettings
from litpipe.url_credentials import hide_credentials, split_basic_auth

logger = logging.getLogger(__name__)

WindowSource = Literal["refusal", "setting", "litellm", "server", "unknown"]
# Beyond the messages' own text: the chat template's role markers and separators, per message.
TEMPLATE_TOKENS_PER_MESSAGE = 8
# How long litpipe waits for a server to describe itself: it is on hand or it is not.
PROBE_TIMEOUT_S = 5.0
# A path only llama-cpp-python's server has (FastAPI lists its routes at /openapi.json).
LLAMA_CPP_PYTHON_PATH = "/extras/tokenize/count"
# Where `/v1/models` states a model's window: vLLM, LM Studio, OpenRouter and others.
_MODEL_LENGTH_FIELDS = ("max_model_len", "max_context_length", "context_length")
# Prompts shorter than this say little of how the server counts (the template dominates).
_COUNT_SAMPLE_TOKENS = 200


@dataclass(frozen=True)
class ContextWindow:
    """A route's window in tokens (None: unknown), and where that figure came from."""

    tokens: int | None
    source: WindowSource

    def describe(self) -> str:
        where = {
            "refusal": "the server's refusal of a longer request",
            "setting": "llm.context_tokens",
            "litellm": "litellm's model map",
            "server": "the server's report",
            "unknown": "nothing says",
        }[self.source]
        size = f"{self.tokens:,} tokens" if self.tokens is not None else "unknown"
        return f"{size} ({where})"


@dataclass(frozen=True)
class ServerReport:
    """What an OpenAI-compatible server says of itself (each None where it does not say)."""

    context_tokens: int | None = None
    slots: int | None = None
    tokenizes: bool = False


# Per (api_base, model), for the process: the window a server's refusal stated, and how many
# times litellm's count of a prompt the server counted at most (>= 1).
_LEARNT_WINDOWS: dict[tuple[str | None, str], int] = {}
_COUNT_SCALES: dict[tuple[str | None, str], float] = {}


def learn_window(model: str, api_base: str | None, tokens: int) -> None:
    """The window a server stated when it refused a request: the route's from now on (it is
    what the server enforces, whatever else said otherwise)."""
    known = _LEARNT_WINDOWS.get((api_base, model))
    if known != tokens:
        logger.warning(
            "llm %s at %s: its window is %d tokens, as the server said refusing a longer "
            "request: requests are fitted to it from now on (llm.context_tokens sets it ahead)",
            model,
            _shown(api_base) if api_base else "its provider",
            tokens,
        )
    _LEARNT_WINDOWS[(api_base, model)] = tokens


def learn_token_count(
    model: str, api_base: str | None, messages: list[dict[str, str]], by_server: int
) -> None:
    """The server counted `by_server` tokens in the prompt `messages`: where that is more than
    litpipe's counts so far allow for, its counts of the route's texts are scaled up to match
    (a model litellm does not know has a tokenizer of its own). Not where the server counts
    them itself (`/tokenize`)."""
    if api_base is not None and server_report(api_base, served_name(model)).tokenizes:
        return
    counted = messages_tokens(messages, functools.partial(_litellm_tokens, model))
    if counted < _COUNT_SAMPLE_TOKENS or by_server <= counted:
        return
    key = (api_base, model)
    scale = by_server / counted
    if scale > _COUNT_SCALES.get(key, 1.0):
        logger.info("llm %s: its server counts %.2f times litpipe's tokens", model, scale)
        _COUNT_SCALES[key] = scale


def context_window(model: str, api_base: str | None, configured: int | None) -> ContextWindow:
    """The route's context window: what a refusal stated, else the setting, else litellm's
    figure, else the server's."""
    learnt = _LEARNT_WINDOWS.get((api_base, model))
    if learnt is not None:
        return ContextWindow(learnt, "refusal")
    if configured is not None:
        return ContextWindow(configured, "setting")
    known = _litellm_window(model)
    if known is not None:
        return ContextWindow(known, "litellm")
    if api_base is not None:
        reported = server_report(api_base, served_name(model)).context_tokens
        if reported is not None:
            return ContextWindow(reported, "server")
    return ContextWindow(None, "unknown")


def server_slots(api_base: str | None, model: str) -> int | None:
    """How many calls the route's server decodes at once, where it says."""
    return None if api_base is None else server_report(api_base, served_name(model)).slots


def token_counter(model: str, api_base: str | None) -> Callable[[str], int]:
    """A counter of a text's tokens as the route's model reads them."""
    if api_base is not None and server_report(api_base, served_name(model)).tokenizes:
        return functools.partial(_server_tokens, api_base)
    scale = _COUNT_SCALES.get((api_base, model))
    if scale is not None:
        return functools.partial(_scaled_tokens, model, scale)
    return functools.partial(_litellm_tokens, model)


def routes_described(llm: LLMSettings) -> list[str]:
    """A line per model the settings route agents to (the default, then each agent's own):
    where it is served, its context window and where that figure came from, and its server's
    decoding slots where it says (what `litpipe status` shows)."""
    routes = {"every agent": llm.route("default")}
    routes.update({f"agent {agent}": llm.route(agent) for agent in sorted(llm.agents)})
    lines = []
    for who, route in routes.items():
        if route.offline:
            lines.append(f"model for {who}: the offline engine")
            continue
        where = f" at {hide_credentials(route.api_base)}" if route.api_base else ""
        window = context_window(route.model, route.api_base, route.context_tokens)
        slots = server_slots(route.api_base, route.model)
        decodes = f"; its server decodes {slots} at once" if slots else ""
        lines.append(f"model for {who}: {route.model}{where}; window {window.describe()}{decodes}")
    return lines


def messages_tokens(messages: list[dict[str, str]], count: Callable[[str], int]) -> int:
    """The prompt's tokens: each message's text and its share of the chat template."""
    return sum(count(message["content"]) + TEMPLATE_TOKENS_PER_MESSAGE for message in messages)


def served_name(model: str) -> str:
    """The name the server knows the model by: litellm's `openai/<name>` without the provider."""
    return model.split("/", 1)[1] if "/" in model else model


def known_to_litellm(model: str) -> bool:
    """Whether litellm's model map has the model (its window, price and tokenizer)."""
    import litellm  # here, not above: every process imports agents, few call a model

    try:
        name, provider, _, _ = litellm.get_llm_provider(model=model)
    except Exception:  # litellm raises several kinds for a name it cannot place
        return False
    return any(key in litellm.model_cost for key in (model, name, f"{provider}/{name}"))


def _litellm_window(model: str) -> int | None:
    import litellm

    if not known_to_litellm(model):
        return None
    try:
        info = litellm.get_model_info(model=model)
    except Exception:  # litellm raises several kinds for a model it has no entry for
        return None
    tokens = info.get("max_input_tokens") or info.get("max_tokens")
    return int(tokens) if tokens else None


@functools.cache
def server_report(api_base: str, served_name: str) -> ServerReport:
    """Asked once per process, all at once (a server that accepts and never answers costs
    `PROBE_TIMEOUT_S` once, not per question): llama.cpp's `/props`, `/v1/models`, whether the
    server answers `/tokenize`, and whether it is llama-cpp-python's."""
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="litpipe-probe") as probes:
        props = probes.submit(_llama_cpp_props, api_base)
        listed = probes.submit(_listed_model_length, api_base, served_name)
        tokenizes = probes.submit(_tokenize, api_base, "x")
        one_at_a_time = probes.submit(_llama_cpp_python, api_base)
    context_tokens, slots = props.result()
    if context_tokens is None:
        context_tokens = listed.result()
    if slots is None and one_at_a_time.result():
        slots = 1
    report = ServerReport(
        context_tokens=context_tokens, slots=slots, tokenizes=tokenizes.result() is not None
    )
    logger.debug("the server at %s says: %s", _shown(api_base), report)
    return report


def _shown(api_base: str) -> str:
    return split_basic_auth(api_base)[0]


def _get(api_base: str, path: str) -> Any | None:
    url, headers = _where(api_base, path)
    try:
        response = httpx.get(url, timeout=PROBE_TIMEOUT_S, headers=headers)
    except httpx.HTTPError:
        return None
    return _json(response)


def _post(api_base: str, path: str, body: dict[str, Any]) -> Any | None:
    url, headers = _where(api_base, path)
    try:
        response = httpx.post(url, json=body, timeout=PROBE_TIMEOUT_S, headers=headers)
    except httpx.HTTPError:
        return None
    return _json(response)


def _where(api_base: str, path: str) -> tuple[str, dict[str, str]]:
    """The URL of `path` (`/props` under the server's root, `v1/models` under the API's base:
    a leading slash means the root) and the basic-auth header the base's user info stands for."""
    base, authorization = split_basic_auth(api_base)
    base = base.rstrip("/")
    if path.startswith("/"):
        base = base.removesuffix("/v1")
    url = f"{base}{path}" if path.startswith("/") else f"{base}/{path}"
    return url, {} if authorization is None else {"Authorization": authorization}


def _json(response: httpx.Response) -> Any | None:
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except json.JSONDecodeError:
        return None


def _llama_cpp_props(api_base: str) -> tuple[int | None, int | None]:
    props = _get(api_base, "/props")
    if not isinstance(props, dict):
        return None, None
    settings = props.get("default_generation_settings")
    n_ctx = (settings if isinstance(settings, dict) else {}).get("n_ctx", props.get("n_ctx"))
    slots = props.get("total_slots")
    return (
        n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None,
        slots if isinstance(slots, int) and slots > 0 else None,
    )


def _listed_model_length(api_base: str, served_name: str) -> int | None:
    listing = _get(api_base, "models")
    models = listing.get("data") if isinstance(listing, dict) else None
    for entry in models if isinstance(models, list) else []:
        if isinstance(entry, dict) and entry.get("id") == served_name:
            for field in _MODEL_LENGTH_FIELDS:
                length = entry.get(field)
                if isinstance(length, int) and length > 0:
                    return length
            return None
    return None


def _llama_cpp_python(api_base: str) -> bool:
    """Whether the server is llama-cpp-python's: every request it takes waits for one lock
    (its `llama_outer_lock`/`llama_inner_lock`), so it decodes one at a time."""
    schema = _get(api_base, "/openapi.json")
    paths = schema.get("paths") if isinstance(schema, dict) else None
    return isinstance(paths, dict) and LLAMA_CPP_PYTHON_PATH in paths


def _tokenize(api_base: str, text: str) -> int | None:
    """The text's tokens by the server's `/tokenize` (llama.cpp's `content`, vLLM's `prompt`)."""
    reply = _post(api_base, "/tokenize", {"content": text, "prompt": text, "add_special": False})
    if not isinstance(reply, dict):
        return None
    if isinstance(reply.get("count"), int):
        return int(reply["count"])
    tokens = reply.get("tokens")
    return len(tokens) if isinstance(tokens, list) else None


@functools.lru_cache(maxsize=4096)
def _server_tokens(api_base: str, text: str) -> int:
    counted = _tokenize(api_base, text)
    # A server that stopped answering mid-run: litellm's general counter rather than none.
    return counted if counted is not None else _litellm_tokens("gpt-4o", text)


def _scaled_tokens(model: str, scale: float, text: str) -> int:
    return math.ceil(_litellm_tokens(model, text) * scale)


@functools.lru_cache(maxsize=4096)
def _litellm_tokens(model: str, text: str) -> int:
    import litellm

    return int(litellm.token_counter(model=model, text=text))
