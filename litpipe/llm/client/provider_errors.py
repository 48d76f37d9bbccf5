"""What a provider's error means: a transient failure (retried, after the wait the provider
asks for), a permanent one (failed at once, saying what to fix), the server refusing the
response format it was sent (asked again in another mode, in `auto`), or refusing a request
longer than its context window (its message read for the window: `window_refusal`); and what a
request's end tells the route's in-flight limit and breaker (`_outcome`)."""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import litellm
import openai

from litpipe.llm.client.routes import Outcome
from litpipe.llm.errors import ContextOverflowError, PermanentLLMError, one_line
from litpipe.settings import Route, StructuredOutput

_PROVIDER_ERRORS = (
    litellm.APIError,
    litellm.Timeout,
    litellm.APIConnectionError,
    litellm.RateLimitError,
    litellm.InternalServerError,
    litellm.ServiceUnavailableError,
    litellm.BadGatewayError,
    litellm.AuthenticationError,
    litellm.PermissionDeniedError,
    litellm.NotFoundError,
    litellm.BadRequestError,
    litellm.UnprocessableEntityError,
)
# Besides 5xx: request timeout, conflict, too early, too many requests.
_TRANSIENT_STATUS = {408, 409, 425, 429}
# How a server that does not take a response format says so: a bad request (or, from
# llama-cpp-python's server, a 500) naming the format.
_REFUSAL_STATUS = {400, 415, 422, 500, 501}
_NAMES_A_FORMAT = re.compile(r"response_format|json_schema|json_object|grammar", re.IGNORECASE)


def _n(name: str) -> str:
    """A count of tokens as providers write them (2048, 2,048, 2_048), as the group `name`."""
    return rf"(?P<{name}>\d{{1,3}}(?:[,_]\d{{3}})+|\d+)"


_W, _P, _R, _C = _n("window"), _n("prompt"), _n("requested"), _n("completion")
# How servers say a request does not fit their window, each naming the window and what it can
# of the request (the prompt's tokens, all it was asked for, the completion's): OpenAI, vLLM and
# llama-cpp-python (chat and text completions, older and newer wordings), llama.cpp's server
# (its message, or its error's fields), Anthropic, Hugging Face TGI, Mistral, Gemini, LM Studio,
# and the plainer "context length/window of N" of others. The first that matches is read.
_WINDOW_REFUSALS = [
    re.compile(pattern, re.IGNORECASE | re.DOTALL)
    for pattern in (
        rf"maximum context length is {_W} tokens.{{0,40}}?requested {_R} tokens"
        rf"(?: \({_P} in (?:the messages|your prompt)[,;] {_C} (?:in|for) the completion)?",
        rf"maximum context length is {_W} tokens.{{0,40}}?messages resulted in {_P} tokens",
        rf"maximum context length is {_W} tokens and your request has {_P} input tokens",
        rf"maximum context length is {_W}\b",
        rf"prompt \((?:total length )?{_P}(?: tokens)?\) is too long.{{0,60}}?"
        rf"(?:context length|limit of) {_W}",
        rf"n_prompt_tokens['\"]?\s*[:=]\s*{_P}.{{0,80}}?n_ctx['\"]?\s*[:=]\s*{_W}",
        rf"n_ctx['\"]?\s*[:=]\s*{_W}.{{0,80}}?n_prompt_tokens['\"]?\s*[:=]\s*{_P}",
        rf"request \({_P} tokens\) exceeds the available context size \({_W} tokens\)",
        rf"available context size \({_W} tokens\)",
        rf"prompt is too long: {_P} tokens > {_W} maximum",
        rf"tokens \+ `?max_new_tokens`? must be <= {_W}\. Given: {_P} `?inputs`? tokens "
        rf"and {_C} `?max_new_tokens",
        rf"prompt contains {_P} tokens.{{0,40}}?too large for model with {_W} maximum context",
        rf"input token count \({_P}\) exceeds the maximum number of tokens allowed \({_W}\)",
        rf"(?:context length|context window|context size) (?:of (?:only )?|is |= ?){_W}",
    )
]


@dataclass(frozen=True)
class WindowRefusal:
    """What a server's refusal of a request too long for its window says: the window, the
    prompt's tokens as the server counted them, and all the tokens it was asked for (prompt
    and max_tokens), each where it says."""

    window: int
    prompt: int | None = None
    requested: int | None = None


def window_refusal(message: str) -> WindowRefusal | None:
    """The window (and the prompt's tokens) a provider's message states in refusing a request
    that does not fit it; None where it states none."""
    for pattern in _WINDOW_REFUSALS:
        found = pattern.search(message)
        if found is None:
            continue
        tokens = _number(found, "window")
        if tokens is None or tokens <= 0:
            continue
        stated = _number(found, "prompt")
        asked, completing = _number(found, "requested"), _number(found, "completion")
        if stated is None and asked is not None and completing is not None:
            stated = asked - completing
        return WindowRefusal(tokens, stated, asked)
    return None


def _number(found: re.Match[str], group: str) -> int | None:
    """The count in `group` of a refusal's match, where the pattern has it and it matched."""
    text = found.groupdict().get(group)
    return int(re.sub(r"[,_]", "", text)) if text else None


class _WindowRefused(Exception):
    """The server refused the request as longer than its window, which it stated."""

    def __init__(self, refusal: WindowRefusal, said: str) -> None:
        super().__init__(said)
        self.refusal = refusal
        self.said = said


def _refuses_window(error: Exception) -> WindowRefusal | None:
    """The window the server stated, where the error is its refusal of a request too long."""
    status = getattr(error, "status_code", None)
    if not isinstance(error, litellm.ContextWindowExceededError) and status not in {400, 413, 422}:
        return None
    return window_refusal(_said(error))


def _outcome(error: Exception) -> Outcome:
    """What a failed request tells its route's in-flight limit and breaker. litellm reports a
    refused or dropped connection as a 500 ("Connection error."): the cause it wraps says."""
    causes = _causes(error)
    if any(isinstance(cause, openai.APITimeoutError | httpx.TimeoutException) for cause in causes):
        return "timed_out"
    lost = (litellm.APIConnectionError, openai.APIConnectionError, httpx.TransportError)
    if any(isinstance(cause, lost) for cause in causes):
        return "unreachable"
    status = getattr(error, "status_code", None)
    if isinstance(status, int) and (status == 429 or status >= 500):
        return "overloaded"
    return "refused"


def _causes(error: BaseException, most: int = 12) -> list[BaseException]:
    """The error and what it was raised from, outermost first."""
    chain: list[BaseException] = []
    cause: BaseException | None = error
    while cause is not None and len(chain) < most and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    return chain


class _FormatRefused(Exception):
    """The server does not take the response format sent; `said` is its message."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


def _said(error: Exception) -> str:
    return str(getattr(error, "message", None) or error)


def _refuses_format(error: Exception, response_format: dict[str, Any] | None) -> bool:
    """Whether the error is the server refusing the response format sent."""
    status = getattr(error, "status_code", None)
    return (
        response_format is not None
        and status in _REFUSAL_STATUS
        and not isinstance(error, litellm.ContextWindowExceededError)
        and _NAMES_A_FORMAT.search(_said(error)) is not None
    )


def _format_error(route: Route, mode: StructuredOutput, said: str) -> PermanentLLMError:
    return PermanentLLMError(
        f"{route.agent}: the server of {route.model} does not take structured output {mode!r} "
        f"(llm.structured_output): set it to `auto`, which falls back to what the server takes, "
        f"or to `json_object` or `prompt` — {said}"
    )


def _is_transient(error: Exception) -> bool:
    if isinstance(error, litellm.Timeout | litellm.APIConnectionError):
        return True  # dropped connections included
    status = getattr(error, "status_code", None)
    if not isinstance(status, int):
        return True
    return status in _TRANSIENT_STATUS or status >= 500 or status < 400


def _permanent_error(
    error: Exception, route: Route, response_format: dict[str, Any] | None
) -> PermanentLLMError:
    status = getattr(error, "status_code", None)
    said = one_line(getattr(error, "message", None) or str(error), 200)
    where = f"{route.agent}: {route.model}"
    if isinstance(error, litellm.AuthenticationError | litellm.PermissionDeniedError):
        missing = litellm.validate_environment(model=route.model).get("missing_keys") or []
        fix = (
            f"set {' and '.join(missing)} in the environment"
            if missing
            else "check the provider's API key in the environment"
        )
        return PermanentLLMError(
            f"{where}: the provider refused the key ({status}): {fix} — {said}"
        )
    if isinstance(error, litellm.NotFoundError):
        return PermanentLLMError(
            f"{where}: the provider has no such model ({status}): check llm.model, or "
            f"llm.agents.{route.agent}.model — {said}"
        )
    if isinstance(error, litellm.ContextWindowExceededError):
        return ContextOverflowError(
            f"{where}: the messages do not fit the model's context window: use a model with a "
            f"larger one or shorten the agent's input — {said}"
        )
    # A server that does not take the response format sent says so only as a bad request.
    also = (
        f", and that the server takes response_format {response_format['type']!r} "
        f"(else set llm.structured_output to one it takes)"
        if response_format is not None
        else ""
    )
    return PermanentLLMError(
        f"{where}: the provider rejected the request ({status}): check the model name and the "
        f"agent's temperature and max_tokens{also} — {said}"
    )


def _retry_after_s(error: Exception) -> float | None:
    """The wait the provider asked for, in seconds (Retry-After or retry-after-ms), if any."""
    headers = getattr(error, "litellm_response_headers", None)
    if not isinstance(headers, Mapping):
        return None
    lowered = {str(name).lower(): str(value).strip() for name, value in headers.items()}
    milliseconds, seconds = lowered.get("retry-after-ms", ""), lowered.get("retry-after", "")
    if _is_number(milliseconds):
        return max(0.0, float(milliseconds) / 1000)
    if _is_number(seconds):
        return max(0.0, float(seconds))
    moment = email.utils.parsedate_tz(seconds) if seconds else None  # an HTTP date
    return None if moment is None else max(0.0, email.utils.mktime_tz(moment) - time.time())


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
