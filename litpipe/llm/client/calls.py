"""One model call's requests, for `LLMClient`.

The first request goes in the route's structured-output mode (in `auto`, a server that refuses
the format is asked again in the next mode); a reply that does not validate gets one repair
request quoting the error. Every request is fitted to the model's context window (a server that
refuses one as too long, stating its window, teaches the route that window: the request is
fitted to it and sent once more), admitted by the budget (the run's, and the day's across
runs), and retried with backoff while it fails transiently. Each try waits for a place among
the route's requests in flight and passes its breaker (`routes`), then for a place in its
provider's rate limits, where they are set (`litpipe.llm.shared_limits`); its timeout covers
the server's queue and its reply, within what is left of the run's time for waiting on models.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from dataclasses import dataclass
from typing import Any, TypeVar

import litellm
from pydantic import BaseModel

from litpipe.llm.client.budget import _Budget, _call_cost
from litpipe.llm.client.model_facts import _ModelFacts
from litpipe.llm.client.provider_errors import (
    _PROVIDER_ERRORS,
    WindowRefusal,
    _format_error,
    _FormatRefused,
    _is_transient,
    _outcome,
    _permanent_error,
    _refuses_format,
    _refuses_window,
    _retry_after_s,
    _said,
    _WindowRefused,
)
from litpipe.llm.client.routes import RouteGate, RunScope, Ticket, WaitBudget, route_gate
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
from litpipe.llm.window import (
    ContextWindow,
    context_window,
    learn_token_count,
    learn_window,
    messages_tokens,
    token_counter,
)
from litpipe.settings import LLMSettings, Route
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
    """The requests of one call: `LLMClient`'s, which sets `llm` (the timeout and the
    retries), `_budget`, `_shared` (the limits shared with other processes, or None), `_scope`
    (the run its calls count towards) and `_waits` (the run's time for waiting on models, or
    None)."""

    llm: LLMSettings
    _budget: _Budget
    _shared: SharedLimits | None
    _scope: RunScope
    _waits: WaitBudget | None

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
        the model's context window. A server refusing it as longer than its window, and saying
        how long that is, teaches the route its window: the request is fitted to it (a smaller
        max_tokens) and sent once more, or fails as `ContextOverflowError` with the window (the
        prompt is too long for it: the caller may cut it and ask again)."""
        refused = False
        while True:
            max_tokens, fitted_to = await asyncio.to_thread(self._reply_room, route, messages)
            try:
                response = await self._sent_once(
                    route, messages, response_format, facts, record, max_tokens, fitted_to
                )
            except _WindowLearnt:
                continue  # learnt while the request waited for its place: fitted again
            except _WindowRefused as refusal:
                window = await asyncio.to_thread(
                    self._learn_window, route, messages, max_tokens, refusal.refusal
                )
                if refused:
                    raise ContextOverflowError(
                        f"{route.agent}: {route.model} refused the request even fitted to its "
                        f"{window:,}-token window — {refusal.said}",
                        window=window,
                    ) from refusal
                refused = True
                continue
            if route.api_base is not None and not facts.known:
                # The server's count of the prompt: where it counts more than litpipe, the
                # route's prompts are fitted by its count from now on.
                counted = getattr(getattr(response, "usage", None), "prompt_tokens", None)
                if isinstance(counted, int):
                    await asyncio.to_thread(
                        learn_token_count, route.model, route.api_base, messages, counted
                    )
            choice = response.choices[0]
            return _Reply(text=choice.message.content or "", finish_reason=choice.finish_reason)

    def _learn_window(
        self, route: Route, messages: Messages, max_tokens: int, refusal: WindowRefusal
    ) -> int:
        """The window a refusal stated, learnt for the route, with the server's count of the
        refused prompt where it says it (or says all it was asked for)."""
        learn_window(route.model, route.api_base, refusal.window)
        prompt = refusal.prompt
        if prompt is None and refusal.requested is not None:
            prompt = refusal.requested - max_tokens
        if prompt is not None:
            learn_token_count(route.model, route.api_base, messages, prompt)
        return refusal.window

    async def _sent_once(
        self,
        route: Route,
        messages: Messages,
        response_format: dict[str, Any] | None,
        facts: _ModelFacts,
        record: CallRecord,
        max_tokens: int,
        fitted_to: int | None,
    ) -> litellm.ModelResponse:
        """The request (fitted to a window of `fitted_to` tokens), admitted by the budget and
        the shared limits, retried while it fails transiently; its tokens and cost counted in
        `record`."""
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
                fitted_to,
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
        return response

    def _reply_room(self, route: Route, messages: Messages) -> tuple[int, int | None]:
        """The reply's max_tokens: the route's, or what the prompt leaves of the window where
        that is less (a repair request carries the first reply too); and the window it was
        fitted to (None: unknown)."""
        window = self.window(route).tokens
        if window is None:
            return route.max_tokens, None
        prompt = messages_tokens(messages, token_counter(route.model, route.api_base))
        room = window - prompt
        if room >= route.max_tokens:
            return route.max_tokens, window
        if room < MIN_REPLY_TOKENS:
            raise ContextOverflowError(
                f"{route.agent}: the prompt takes {prompt:,} tokens of {route.model}'s "
                f"{window:,}-token window, leaving {max(room, 0)} for the reply: fewer than "
                f"{MIN_REPLY_TOKENS}; nothing was sent",
                window=window,
            )
        logger.info(
            "llm %s %s: the reply gets %d tokens, what the %d-token prompt leaves of the window",
            route.agent,
            route.model,
            room,
            prompt,
        )
        return room, window

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
            "timeout": self.llm.timeout_s,
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
        fitted_to: int | None = None,
    ) -> litellm.ModelResponse:
        """The request's tries, each within its place among the route's requests in flight;
        `_WindowLearnt` where the route's window is no longer the one it was fitted to
        (`fitted_to`) once it has a place: another request's refusal taught it meanwhile."""
        max_retries = self.llm.max_retries
        gate = await route_gate(route, self.llm, self._scope)
        retry = 0
        while True:
            ticket = await self._place(route, gate)
            started = time.monotonic()
            try:
                if self.window(route).tokens != fitted_to:
                    raise _WindowLearnt
                timeout, by_deadline = self._timeout(route, gate, request["max_tokens"])
                if shared is not None:
                    await shared.send()  # a place in the provider's minute, for every try
                record.requests += 1
                response = await litellm.acompletion(**{**request, "timeout": timeout})
            except _PROVIDER_ERRORS as error:
                outcome = _outcome(error)
                refusal = _refuses_window(error)
                if refusal is not None:
                    # Before its place is handed on: the next request is fitted to it.
                    learn_window(route.model, route.api_base, refusal.window)
                if gate.limit is not None and ticket is not None:
                    gate.limit.finished(ticket, outcome, route.agent, time.monotonic() - started)
                ticket = None
                if outcome == "timed_out" and by_deadline:
                    # Cut short by the run's deadline, not the server's doing.
                    assert self._waits is not None
                    raise self._waits.spent_error(route) from error
                if outcome in ("timed_out", "unreachable"):
                    what = "timed out" if outcome == "timed_out" else "could not be reached"
                    unreachable = gate.breaker.failed(what)
                    if unreachable is not None:
                        if gate.limit is not None:
                            gate.limit.wake_all()
                        raise unreachable from error
                else:
                    gate.breaker.answered()
                if _refuses_format(error, request.get("response_format")):
                    raise _FormatRefused(one_line(_said(error), 200)) from error
                if refusal is not None:
                    raise _WindowRefused(refusal, one_line(_said(error), 200)) from error
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
            else:
                if gate.limit is not None and ticket is not None:
                    written = getattr(getattr(response, "usage", None), "completion_tokens", 0)
                    gate.limit.finished(
                        ticket,
                        "answered",
                        route.agent,
                        time.monotonic() - started,
                        written if isinstance(written, int) else 0,
                    )
                    ticket = None
                gate.breaker.answered()
                return response
            finally:
                if gate.limit is not None and ticket is not None:
                    # Ended otherwise (a stop, the run's time spent): its place is free, and it
                    # says nothing of the server.
                    gate.limit.finished(ticket, "refused", route.agent, 0.0)

    async def _place(self, route: Route, gate: RouteGate) -> Ticket | None:
        """A place among the route's requests in flight (None: a hosted provider's, bound by
        `llm.concurrency` alone), within the run's time for waiting on models."""
        if gate.limit is None:
            gate.breaker.check()
            return None
        if self._waits is None:
            return await gate.limit.acquire(gate.breaker)
        left = self._waits.left()
        if left <= 0:
            raise self._waits.spent_error(route)
        try:
            return await asyncio.wait_for(gate.limit.acquire(gate.breaker), left)
        except TimeoutError:
            raise self._waits.spent_error(route) from None

    def _timeout(self, route: Route, gate: RouteGate, max_tokens: int) -> tuple[float, bool]:
        """A try's timeout: `llm.timeout_s` (on the user's own server, as long as its pace
        needs for `max_tokens`: `InFlightLimit.timeout_for`), or what is left of the run's time
        for waiting, and whether that cut it."""
        timeout = self.llm.timeout_s
        if gate.limit is not None:
            timeout = gate.limit.timeout_for(max_tokens)
        if self._waits is None:
            return timeout, False
        left = self._waits.left()
        if left <= 0:
            raise self._waits.spent_error(route)
        return min(timeout, left), left < timeout

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


class _WindowLearnt(Exception):
    """The route's window changed while a request waited to be sent: it is fitted again."""


@dataclass(frozen=True)
class _Reply:
    text: str
    finish_reason: str | None


def _prompt_tokens(route: Route, messages: Messages) -> int:
    """The prompt's tokens as litpipe counts them when it fits a request to the window."""
    return messages_tokens(messages, token_counter(route.model, route.api_base))


def _cut_off_at(reply: _Reply, route: Route) -> int | None:
    return route.max_tokens if reply.finish_reason == "length" else None
