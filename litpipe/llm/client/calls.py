"""One model call's requests, for `LLMClient`.

The first request goes in the route's structured-output mode (in `auto`, a server that refuses
the format is asked again in the next mode); a reply that does not validate gets one repair
request quoting the error. Every request is fitted to the model's context window, admitted by
the budget (the run's, and the day's across runs), and retried with backoff while it fails
transiently; each try waits for a place in its provider's rate limits, where they are set
(`litpipe.llm.shared_limits`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from dataclasses import dataclass
from typing import Any, TypeVar

import litellm
from pydantic import BaseModel

from litpipe.llm.client.budget import _Budget, _call_cost
from litpipe.llm.client.model_facts import _ModelFacts
from litpipe.llm.client.provider_errors import (
    _PROVIDER_ERRORS,
    _format_error,
    _FormatRefused,
    _is_transient,
    _permanent_error,
    _refuses_format,
    _retry_after_s,
    _said,
)
from litpipe.llm.client.structured import (
    _NEXT_MODE,
    _WORKING_MODE,
    Messages,
    UnusableReply,
    _mode,
    parse_reply,
    structured_request,
)
from litpipe.llm.errors import (
    ContextOverflowError,
    ReplyValidationError,
    TransientLLMError,
    one_line,
)
from litpipe.llm.shared_limits import SharedLimits, SharedRequest
from litpipe.llm.usage import CallRecord
from litpipe.llm.window import ContextWindow, context_window, messages_tokens, token_counter
from litpipe.settings import Route, Settings
from litpipe.url_credentials import split_basic_auth

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

# What an OpenAI-compatible server without authentication (vLLM, the test stub) gets as key when
# the environment has none: litellm will not call `openai/...` without one.
PLACEHOLDER_API_KEY = "not-needed"
REPAIR_INSTRUCTION = (
    "That reply cannot be used: {problem}. Answer again with only the corrected JSON object."
)
# A reply squeezed into less room than this cannot be of use: the request does not fit.
MIN_REPLY_TOKENS = 64


class ModelCalls:
    """The requests of one call: `LLMClient`'s, which sets `settings` (the timeout and the
    retries), `_budget` and `_shared` (the limits shared with other processes, or None)."""

    settings: Settings
    _budget: _Budget
    _shared: SharedLimits | None

    # Full-jitter exponential backoff between retries, and the longest Retry-After honoured
    # (a provider asking for more is reported, not waited for). Tests shorten them.
    backoff_base_s = 0.5
    backoff_cap_s = 30.0
    retry_after_cap_s = 60.0

    def window(self, route: Route) -> ContextWindow:
        """The route's context window, and where litpipe learnt it."""
        return context_window(route.model, route.api_base, route.context_tokens)

    async def _ask(
        self,
        route: Route,
        messages: Messages,
        schema: type[T],
        facts: _ModelFacts,
        record: CallRecord,
    ) -> T:
        """Ask, and if the reply does not validate, ask once more quoting the error (not when
        it ran out of max_tokens: under the same limit, with the whole of it in the prompt, a
        repair runs out too; a small model's runaway reply would cost its minute twice)."""
        request, response_format, reply = await self._first_reply(
            route, messages, schema, facts, record
        )
        try:
            return parse_reply(reply.text, schema, _cut_off_at(reply, route))
        except UnusableReply as problem:
            if reply.finish_reason == "length":
                raise ReplyValidationError(
                    f"{route.agent}: {route.model} gave no valid {schema.__name__}: {problem}"
                ) from None
            record.repaired = True
            logger.warning(
                "llm %s %s: unusable reply, asking for a repair: %s",
                route.agent,
                route.model,
                problem,
            )
            request = [
                *request,
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": REPAIR_INSTRUCTION.format(problem=problem)},
            ]
        reply = await self._send(route, request, response_format, facts, record)
        try:
            return parse_reply(reply.text, schema, _cut_off_at(reply, route))
        except UnusableReply as problem:
            raise ReplyValidationError(
                f"{route.agent}: {route.model} gave no valid {schema.__name__} even after one "
                f"repair: {problem}"
            ) from None

    async def _first_reply(
        self,
        route: Route,
        messages: Messages,
        schema: type[BaseModel],
        facts: _ModelFacts,
        record: CallRecord,
    ) -> tuple[Messages, dict[str, Any] | None, _Reply]:
        """The first reply, and the request and format it was asked in: in `auto`, a server
        that refuses the format is asked again in the next mode, remembered for the route."""
        mode = _mode(route, facts)
        while True:
            request, response_format = structured_request(messages, schema, mode)
            try:
                reply = await self._send(route, request, response_format, facts, record)
            except _FormatRefused as refusal:
                following = _NEXT_MODE.get(mode) if route.structured_output == "auto" else None
                if following is None:
                    raise _format_error(route, mode, refusal.said) from refusal
                logger.warning(
                    "llm %s at %s refuses structured output %r (%s): asking in %r from now on",
                    route.model,
                    route.api_base or "its provider",
                    mode,
                    refusal.said,
                    following,
                )
                _WORKING_MODE[(route.api_base, route.model)] = following
                mode = following
                continue
            return request, response_format, reply

    async def _send(
        self,
        route: Route,
        messages: Messages,
        response_format: dict[str, Any] | None,
        facts: _ModelFacts,
        record: CallRecord,
    ) -> _Reply:
        """One request to the model (retried while it fails transiently), within the budget and
        the model's context window."""
        max_tokens = await asyncio.to_thread(self._reply_room, route, messages)
        estimate = self._budget.admit(route, messages, response_format, facts)
        cost, used, shared = 0.0, None, None
        try:
            if self._shared is not None:
                shared = await self._shared.request(
                    route.agent,
                    route.model,
                    facts.provider,
                    estimate,
                    lambda: _prompt_tokens(route, messages) + max_tokens,
                )
            response = await self._with_retries(
                route,
                self._request(route, messages, response_format, facts, max_tokens),
                record,
                shared,
            )
            usage = getattr(response, "usage", None)
            tokens_in = getattr(usage, "prompt_tokens", None) or 0
            tokens_out = getattr(usage, "completion_tokens", None) or 0
            record.tokens_in += tokens_in
            record.tokens_out += tokens_out
            used = tokens_in + tokens_out or None
            cost = _call_cost(response, facts)
            record.cost_usd += cost
        finally:
            self._budget.settle(estimate, cost)
            if shared is not None:
                await shared.end(cost, used)
        choice = response.choices[0]
        return _Reply(text=choice.message.content or "", finish_reason=choice.finish_reason)

    def _reply_room(self, route: Route, messages: Messages) -> int:
        """The reply's max_tokens: the route's, or what the prompt leaves of the window where
        that is less (a repair request carries the first reply too)."""
        window = self.window(route).tokens
        if window is None:
            return route.max_tokens
        prompt = messages_tokens(messages, token_counter(route.model, route.api_base))
        room = window - prompt
        if room >= route.max_tokens:
            return route.max_tokens
        if room < MIN_REPLY_TOKENS:
            raise ContextOverflowError(
                f"{route.agent}: the prompt takes {prompt:,} tokens of {route.model}'s "
                f"{window:,}-token window, leaving {max(room, 0)} for the reply: fewer than "
                f"{MIN_REPLY_TOKENS}; nothing was sent"
            )
        logger.info(
            "llm %s %s: the reply gets %d tokens, what the %d-token prompt leaves of the window",
            route.agent,
            route.model,
            room,
            prompt,
        )
        return room

    def _request(
        self,
        route: Route,
        messages: Messages,
        response_format: dict[str, Any] | None,
        facts: _ModelFacts,
        max_tokens: int,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": route.model,
            "messages": messages,
            "temperature": route.temperature,
            "max_tokens": max_tokens,
            "timeout": self.settings.llm.timeout_s,
            # Retries are this client's (counted, logged, honouring Retry-After): none beneath.
            "max_retries": 0,
            # A parameter a model does not take (temperature, for reasoning models) is left out
            # rather than failing the call.
            "drop_params": True,
        }
        if response_format is not None:
            request["response_format"] = response_format
            if not facts.takes_response_format:
                # With drop_params, litellm would silently leave out a format it believes the
                # model lacks (`openai/gpt-4`, whatever the server behind it): the model would
                # then get no schema at all. Only where it would: elsewhere litellm translates
                # the format for its provider (Anthropic's tools), which forcing it would undo.
                request["allowed_openai_params"] = ["response_format"]
        if route.api_base:
            request["api_base"], authorization = split_basic_auth(route.api_base)
            if authorization is not None:
                # Replaces the provider's `Bearer` key, as basic auth in the URL would.
                request["extra_headers"] = {"Authorization": authorization}
            if facts.provider == "openai" and not os.environ.get("OPENAI_API_KEY"):
                request["api_key"] = PLACEHOLDER_API_KEY
        return request

    async def _with_retries(
        self,
        route: Route,
        request: dict[str, Any],
        record: CallRecord,
        shared: SharedRequest | None = None,
    ) -> litellm.ModelResponse:
        max_retries = self.settings.llm.max_retries
        retry = 0
        while True:
            if shared is not None:
                await shared.send()  # a place in the provider's minute, for every try
            record.requests += 1
            try:
                return await litellm.acompletion(**request)
            except _PROVIDER_ERRORS as error:
                if _refuses_format(error, request.get("response_format")):
                    raise _FormatRefused(one_line(_said(error), 200)) from error
                if not _is_transient(error):
                    raise _permanent_error(error, route, request.get("response_format")) from error
                if retry >= max_retries:
                    raise TransientLLMError(
                        f"{route.agent}: {route.model} still failing after {retry + 1} tries "
                        f"(llm.max_retries={max_retries}); last error: {one_line(str(error))}"
                    ) from error
                delay = self._retry_delay(error, retry, route)
                retry += 1
                record.retries = retry
                logger.warning(
                    "llm %s %s: %s; retry %d/%d in %.2f s",
                    route.agent,
                    route.model,
                    one_line(str(error), 160),
                    retry,
                    max_retries,
                    delay,
                )
                await asyncio.sleep(delay)

    def _retry_delay(self, error: Exception, retry: int, route: Route) -> float:
        asked = _retry_after_s(error)
        if asked is None:
            return random.uniform(0, min(self.backoff_cap_s, self.backoff_base_s * 2**retry))
        if asked > self.retry_after_cap_s:
            raise TransientLLMError(
                f"{route.agent}: {route.model} asks to wait {asked:.0f} s before the next try "
                f"(Retry-After), more than litpipe waits ({self.retry_after_cap_s:.0f} s): "
                "try again later, or lower llm.concurrency"
            ) from error
        # A little on top, so that the callers told the same wait do not all return at once.
        return asked * random.uniform(1.0, 1.1)


@dataclass(frozen=True)
class _Reply:
    text: str
    finish_reason: str | None


def _prompt_tokens(route: Route, messages: Messages) -> int:
    """The prompt's tokens as litpipe counts them when it fits a request to the window."""
    return messages_tokens(messages, token_counter(route.model, route.api_base))


def _cut_off_at(reply: _Reply, route: Route) -> int | None:
    return route.max_tokens if reply.finish_reason == "length" else None
