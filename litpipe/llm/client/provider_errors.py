"""What a provider's error means: a transient failure (retried, after the wait the provider
asks for), a permanent one (failed at once, saying what to fix), or the server refusing the
response format it was sent (asked again in another mode, in `auto`)."""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from typing import Any

import litellm

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
