"""The one way litpipe calls a model: an agent's messages in, a validated pydantic object out.

Calls go through litellm's `acompletion`, so any litellm model string works. How the reply's
schema reaches the model is the route's `structured_output`: by default (`auto`) a model that
litellm says takes a JSON-schema response format gets one, and any other is told the schema in
its system message; `json_schema`, `json_object` and `prompt` choose for a server whose model
litellm does not know. In `auto`, a model litellm does not know is asked with a JSON schema
first, and a server that refuses a response format is asked again in the next mode
(`json_schema`, then `json_object`, then `prompt`), which is remembered for that server and
model. Every request is fitted to the model's context window (`litpipe.llm.window`): its reply
gets what room the prompt leaves, down to `MIN_REPLY_TOKENS`, else it fails as
`ContextOverflowError` before anything is sent. A reply is parsed tolerantly (fences and
surrounding prose), and one that fails validation gets one repair request quoting the error.
Transient failures are retried with backoff; permanent ones fail at once with a message saying
what to fix. Validated replies are cached on disk; every call is recorded in the usage ledger,
and a budget stops a run before a call could take it over.

Every model call of every client runs on one event loop per process, in a daemon thread: a
client's concurrency bound then holds across all its callers (async or not, from any thread),
and litellm's connection pools and logging worker live on a loop that never closes. Cache hits
are served on the caller's thread and never wait for that loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import gc
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar, cast

import litellm
from pydantic import BaseModel, ValidationError

from litpipe.llm.cache import LLMCache
from litpipe.llm.errors import (
    BudgetExceededError,
    ContextOverflowError,
    LLMError,
    PermanentLLMError,
    ReplyValidationError,
    TransientLLMError,
    one_line,
)
from litpipe.llm.usage import CallRecord, UsageLedger
from litpipe.llm.window import (
    ContextWindow,
    context_window,
    known_to_litellm,
    messages_tokens,
    server_slots,
    token_counter,
)
from litpipe.settings import Route, Settings, StructuredOutput
from litpipe.stopping import result_when_done
from litpipe.url_credentials import split_basic_auth

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")
Messages = list[dict[str, str]]

# litellm otherwise prints a "Give Feedback / Get Help" banner on stdout with every error.
litellm.suppress_debug_info = True
# Importing litellm leaves ~300,000 long-lived objects, which every full pass of the cyclic
# garbage collector would walk again (0.13 s a pass, measured): exempt what exists by now.
gc.freeze()

# What an OpenAI-compatible server without authentication (vLLM, the test stub) gets as key when
# the environment has none: litellm will not call `openai/...` without one.
PLACEHOLDER_API_KEY = "not-needed"

SCHEMA_INSTRUCTION = (
    "Answer with one JSON object that is valid against this JSON schema, and nothing else "
    "(no prose, no Markdown):\n```json\n{schema}\n```"
)
REPAIR_INSTRUCTION = (
    "That reply cannot be used: {problem}. Answer again with only the corrected JSON object."
)

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
# In `auto`, the mode to ask in once a server refuses one: each carries the schema less strictly.
_NEXT_MODE: dict[StructuredOutput, StructuredOutput] = {
    "json_schema": "json_object",
    "json_object": "prompt",
}
# A reply squeezed into less room than this cannot be of use: the request does not fit.
MIN_REPLY_TOKENS = 64
_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class LLMClient:
    """Structured calls for the agents of one step, recorded in `usage`.

    `settings` gives the concurrency bound (`llm.concurrency`, shared by all calls of this
    client), the timeout, the retries, the cache switch and the budget; the route of each call
    gives its model, API base and sampling. API keys come from the environment only.
    """

    # Full-jitter exponential backoff between retries, and the longest Retry-After honoured
    # (a provider asking for more is reported, not waited for). Tests shorten them.
    backoff_base_s = 0.5
    backoff_cap_s = 30.0
    retry_after_cap_s = 60.0

    def __init__(self, settings: Settings, usage: UsageLedger) -> None:
        self.settings = settings
        self.usage = usage
        self.cache = LLMCache(settings.cache_dir) if settings.llm.cache else None
        self._slots = asyncio.Semaphore(settings.llm.concurrency)
        self._budget = _Budget(settings.llm.budget_usd, usage)

    def window(self, route: Route) -> ContextWindow:
        """The route's context window, and where litpipe learnt it."""
        return context_window(route.model, route.api_base, route.context_tokens)

    def count_tokens(self, route: Route, text: str) -> int:
        """The text's tokens as the route's model reads them."""
        return token_counter(route.model, route.api_base)(text)

    def prompt_budget(self, route: Route, schema: type[BaseModel]) -> int | None:
        """The most tokens an agent's messages may take so that they, what litpipe adds to
        them (the schema, where it goes in the prompt) and the reply fit the route's window;
        None where the window is unknown."""
        window = self.window(route).tokens
        if window is None:
            return None
        added = 0
        if _mode(route, _model_facts(route.model)) != "json_schema":
            added = self.count_tokens(route, _schema_instruction(schema))
        # At most half the window is set aside for the reply: a synthesis' 2,048 tokens would
        # leave a 2,048-token window nothing for what it is written from. A reply still gets
        # all the room its prompt leaves (`_reply_room`).
        return window - min(route.max_tokens, window // 2) - added

    def record_fallback(self, route: Route, reason: str) -> None:
        """An item the agent's offline engine wrote because the model's reply could not be used:
        counted with the calls (`LLMUsage.fallbacks`) and logged."""
        record = CallRecord(agent=route.agent, model=route.model, fallback=True, error=reason)
        self._record(record, time.perf_counter())

    async def complete(self, route: Route, messages: Messages, schema: type[T]) -> T:
        """The agent's reply to `messages`, validated against `schema`."""
        self.usage.expect(route.agent, 1)
        key, cached = self._lookup(route, messages, schema)
        if cached is not None:
            return _raised_if_unusable(cached)
        return await _on_model_call_loop(self._ask_and_record(route, messages, schema, key))

    async def complete_many(
        self, route: Route, list_of_messages: Sequence[Messages], schema: type[T]
    ) -> list[T]:
        """One reply per conversation, concurrently (within `llm.concurrency`), in order.

        Every call runs to its end, its reply cached, before the first failure is raised: a
        rerun then only repeats the calls that failed.
        """
        self.usage.expect(route.agent, len(list_of_messages))
        lookups = [self._lookup(route, messages, schema) for messages in list_of_messages]
        if all(cached is not None for _, cached in lookups):
            return [_raised_if_unusable(cast(T, cached)) for _, cached in lookups]
        return await _on_model_call_loop(
            self._complete_many(route, list_of_messages, schema, lookups)
        )

    def complete_sync(self, route: Route, messages: Messages, schema: type[T]) -> T:
        """`complete` for synchronous callers (Dagster steps)."""
        self.usage.expect(route.agent, 1)
        key, cached = self._lookup(route, messages, schema)
        if cached is not None:
            return _raised_if_unusable(cached)
        return _run_sync(self._ask_and_record(route, messages, schema, key))

    def complete_many_sync(
        self, route: Route, list_of_messages: Sequence[Messages], schema: type[T]
    ) -> list[T]:
        """`complete_many` for synchronous callers."""
        self.usage.expect(route.agent, len(list_of_messages))
        lookups = [self._lookup(route, messages, schema) for messages in list_of_messages]
        if all(cached is not None for _, cached in lookups):
            return [_raised_if_unusable(cast(T, cached)) for _, cached in lookups]
        return _run_sync(self._complete_many(route, list_of_messages, schema, lookups))

    def complete_each_sync(
        self, route: Route, list_of_messages: Sequence[Messages], schema: type[T]
    ) -> list[T | LLMError]:
        """`complete_many_sync`, with each call's failure in its place rather than raised: the
        caller decides what becomes of an item whose call failed."""
        return self.complete_batches_sync([(route, list_of_messages, schema)])[0]  # type: ignore[return-value]

    def complete_batches_sync(
        self, batches: Sequence[tuple[Route, Sequence[Messages], type[BaseModel]]]
    ) -> list[list[BaseModel | LLMError]]:
        """Several batches (several agents' conversations) at once: their calls share
        `llm.concurrency`, and the caller waits once for all of them. Each call runs to its end;
        a call that failed has its `LLMError` in its place (any other error is raised)."""
        for route, list_of_messages, _ in batches:
            self.usage.expect(route.agent, len(list_of_messages))
        lookups = [
            [self._lookup(route, messages, schema) for messages in list_of_messages]
            for route, list_of_messages, schema in batches
        ]
        if all(cached is not None for batch in lookups for _, cached in batch):
            return [[cast(BaseModel, cached) for _, cached in batch] for batch in lookups]

        async def each(
            route: Route,
            list_of_messages: Sequence[Messages],
            schema: type[BaseModel],
            found: list[tuple[str | None, BaseModel | ReplyValidationError | None]],
        ) -> list[BaseModel | LLMError]:
            async def one(
                messages: Messages,
                key: str | None,
                cached: BaseModel | ReplyValidationError | None,
            ) -> BaseModel | LLMError:
                if cached is not None:
                    return cached
                try:
                    return await self._ask_and_record(route, messages, schema, key)
                except LLMError as error:
                    return error

            return await asyncio.gather(
                *(
                    one(messages, key, cached)
                    for messages, (key, cached) in zip(list_of_messages, found, strict=True)
                )
            )

        return _run_sync(
            _all_or_first_failure(
                [each(*batch, found) for batch, found in zip(batches, lookups, strict=True)]
            )
        )

    def _lookup(
        self, route: Route, messages: Messages, schema: type[T]
    ) -> tuple[str | None, T | ReplyValidationError | None]:
        """The call's cache key, and its cached reply if there is one (then recorded as a hit):
        a validated reply, or the error of one that could not be used.

        Runs on the caller's thread: a hit never waits for the model-call loop.
        """
        _check_route(route)
        if self.cache is None:
            return None, None
        started = time.perf_counter()
        params = {"temperature": route.temperature, "max_tokens": route.max_tokens}
        # Not the route's structured_output: a reply that validated is as good whichever way the
        # schema reached the model, so the modes share replies and switching costs no call.
        key = self.cache.key(route.model, messages, _schema_json(schema), params)
        cached = self._from_cache(key, schema)
        if cached is not None:
            unusable = isinstance(cached, ReplyValidationError)
            record = CallRecord(
                agent=route.agent,
                model=route.model,
                cached=True,
                failed=unusable,
                error=str(cached) if unusable else None,
            )
            self._record(record, started)
        return key, cached

    async def _complete_many(
        self,
        route: Route,
        list_of_messages: Sequence[Messages],
        schema: type[T],
        lookups: list[tuple[str | None, T | ReplyValidationError | None]],
    ) -> list[T]:
        async def one(
            messages: Messages, key: str | None, cached: T | ReplyValidationError | None
        ) -> T:
            if cached is not None:
                return _raised_if_unusable(cached)
            return await self._ask_and_record(route, messages, schema, key)

        return await _all_or_first_failure(
            [
                one(messages, key, cached)
                for messages, (key, cached) in zip(list_of_messages, lookups, strict=True)
            ]
        )

    async def _ask_and_record(
        self, route: Route, messages: Messages, schema: type[T], key: str | None
    ) -> T:
        """A call the cache could not answer, on the model-call loop; its reply is cached."""
        started = time.perf_counter()
        record = CallRecord(agent=route.agent, model=route.model)
        try:
            facts = _model_facts(route.model)
            server = await _server_slots(route)
            async with self._slots, server:
                value = await self._ask(route, messages, schema, facts, record)
        except BaseException as error:
            record.failed = True
            record.error = one_line(str(error)) or type(error).__name__
            if isinstance(error, ReplyValidationError) and self.cache is not None and key:
                # Asked again, the same request would get the same unusable reply (the cache
                # key holds the sampling): a rerun reads the failure, and its item is written
                # offline again, with no call.
                self.cache.put(
                    key,
                    {
                        "model": route.model,
                        "schema": schema.__name__,
                        "unusable": str(error),
                        "created": record.at.isoformat(),
                    },
                )
            raise
        finally:
            self._record(record, started)
            self._budget.recorded(record.cost_usd)
        if self.cache is not None and key is not None:
            self.cache.put(
                key,
                {
                    "model": route.model,
                    "schema": schema.__name__,
                    "value": value.model_dump(mode="json", by_alias=True),
                    "usage": record.model_dump(include={"tokens_in", "tokens_out", "cost_usd"}),
                    "created": record.at.isoformat(),
                },
            )
        return value

    def _record(self, record: CallRecord, started: float) -> None:
        record.seconds = round(time.perf_counter() - started, 4)
        self.usage.record(record)
        _log_call(record)

    def _from_cache(self, key: str, schema: type[T]) -> T | ReplyValidationError | None:
        assert self.cache is not None
        entry = self.cache.get(key)
        if entry is None:
            return None
        if "unusable" in entry:
            return ReplyValidationError(str(entry["unusable"]))
        try:
            return schema.model_validate(entry["value"])
        except (KeyError, ValidationError):
            # The schema's validators changed since: a miss, and the entry is overwritten.
            logger.warning("cached reply %s no longer validates as %s", key, schema.__name__)
            return None

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
        cost = 0.0
        try:
            response = await self._with_retries(
                route,
                self._request(route, messages, response_format, facts, max_tokens),
                record,
            )
            usage = getattr(response, "usage", None)
            record.tokens_in += getattr(usage, "prompt_tokens", None) or 0
            record.tokens_out += getattr(usage, "completion_tokens", None) or 0
            cost = _call_cost(response, facts)
            record.cost_usd += cost
        finally:
            self._budget.settle(estimate, cost)
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
        self, route: Route, request: dict[str, Any], record: CallRecord
    ) -> litellm.ModelResponse:
        max_retries = self.settings.llm.max_retries
        retry = 0
        while True:
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


class UnusableReply(Exception):
    """What is wrong with a reply, in words the model can act on (asked for a repair)."""


class _FormatRefused(Exception):
    """The server does not take the response format sent; `said` is its message."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


# The structured output that works, per (api_base, model), learnt in `auto` from a refusal: for
# the process, so that each server refuses once. Touched only on the model-call loop.
_WORKING_MODE: dict[tuple[str | None, str], StructuredOutput] = {}
# Per (process, api_base, model): as many calls at once as the server decodes at once, where it
# says. The process is in the key: a forked child has its own model-call loop, and a semaphore
# serves the loop it was first used on.
_SERVER_SLOTS: dict[
    tuple[int, str | None, str], asyncio.Semaphore | contextlib.nullcontext[None]
] = {}


@dataclass(frozen=True)
class _ModelFacts:
    provider: str
    known: bool  # litellm's model map has the model
    structured: bool  # litellm says the model takes a JSON-schema response format
    takes_response_format: bool  # litellm passes a response_format on to the model at all
    priced: bool  # litellm knows its price per token


class _Budget:
    """Keeps a client's calls within `llm.budget_usd`: what the run's scope has recorded, plus
    what this client's unfinished calls have spent or may still spend, plus the next request's
    most (its prompt, and max_tokens of output), must not exceed it.

    Only touched from the model-call loop, so its arithmetic needs no lock.
    """

    def __init__(self, limit: float | None, usage: UsageLedger) -> None:
        self.limit = limit
        self.usage = usage
        self.pending = 0.0

    def admit(
        self,
        route: Route,
        messages: Messages,
        response_format: dict[str, Any] | None,
        facts: _ModelFacts,
    ) -> float:
        if self.limit is None:
            return 0.0
        estimate = _estimate_cost(route, messages, response_format, facts)
        total = self.usage.scope_summary().cost_usd + self.pending + estimate
        if total > self.limit:
            raise BudgetExceededError(
                f"{route.agent}: the next call to {route.model} (up to ${estimate:.6f}) would take "
                f"the run to ${total:.6f}, over llm.budget_usd=${self.limit:.6f}; raise the budget "
                "(LITPIPE_LLM__BUDGET_USD), lower the agent's max_tokens or use a cheaper model"
            )
        self.pending += estimate
        return estimate

    def settle(self, estimate: float, cost: float) -> None:
        """A request is over: it cost `cost`, not yet in the ledger's file."""
        if self.limit is not None:
            self.pending += cost - estimate

    def recorded(self, cost: float) -> None:
        """A call's record, with its cost, is now in the ledger's file."""
        if self.limit is not None:
            self.pending -= cost


def _raised_if_unusable(cached: T | ReplyValidationError) -> T:
    """A cached reply, or the cached failure of one that could not be used, raised again."""
    if isinstance(cached, ReplyValidationError):
        raise cached
    return cached


def _check_route(route: Route) -> None:
    if route.offline:
        raise ValueError(f"agent {route.agent!r} runs offline: its calls cannot go to a model")


@lru_cache(maxsize=256)
def _model_facts(model: str) -> _ModelFacts:
    try:
        name, provider, _, _ = litellm.get_llm_provider(model=model)
    except litellm.BadRequestError as error:
        raise PermanentLLMError(
            f"litellm does not know which provider serves {model!r}: name it provider/model "
            f"(e.g. openai/{model} with llm.api_base) — {one_line(str(error), 160)}"
        ) from error
    try:
        info = litellm.get_model_info(model=model)
        priced = bool(info.get("input_cost_per_token") or info.get("output_cost_per_token"))
    except Exception:  # litellm raises several kinds for a model it has no entry for
        priced = False
    if not priced:
        logger.info(
            "litellm knows no price for %s: its calls count as $0 and llm.budget_usd cannot "
            "limit them",
            model,
        )
    structured = litellm.supports_response_schema(model=model, custom_llm_provider=provider)
    known = known_to_litellm(model)
    # Asked of the provider's own name for the model (`gpt-4`, not `openai/gpt-4`), as litellm
    # asks when it sends the request.
    supported = litellm.get_supported_openai_params(model=name, custom_llm_provider=provider)
    return _ModelFacts(
        provider=provider,
        known=known,
        structured=structured,
        takes_response_format="response_format" in (supported or []),
        priced=priced,
    )


@lru_cache(maxsize=256)
def _schema_json(schema: type[BaseModel]) -> dict[str, Any]:
    return schema.model_json_schema()


@lru_cache(maxsize=256)
def _schema_instruction(schema: type[BaseModel]) -> str:
    return SCHEMA_INSTRUCTION.format(schema=json.dumps(_schema_json(schema), ensure_ascii=False))


def _mode(route: Route, facts: _ModelFacts) -> StructuredOutput:
    """The route's structured output, `auto` resolved by what this process learnt of the
    server, else by what litellm knows of the model: a model it does not know (one served by
    the user's own server) is asked with a JSON schema first."""
    if route.structured_output != "auto":
        return route.structured_output
    learnt = _WORKING_MODE.get((route.api_base, route.model))
    if learnt is not None:
        return learnt
    return "json_schema" if facts.structured or not facts.known else "prompt"


async def _server_slots(route: Route) -> asyncio.Semaphore | contextlib.nullcontext[None]:
    """The process's bound on calls to the route's server, as many as it decodes at once (no
    bound where it does not say)."""
    key = (os.getpid(), route.api_base, route.model)
    if key not in _SERVER_SLOTS:
        slots = await asyncio.to_thread(server_slots, route.api_base, route.model)
        _SERVER_SLOTS.setdefault(
            key, contextlib.nullcontext() if slots is None else asyncio.Semaphore(slots)
        )
    return _SERVER_SLOTS[key]


def structured_request(
    messages: Messages, schema: type[BaseModel], mode: StructuredOutput
) -> tuple[Messages, dict[str, Any] | None]:
    """The messages to send and the response format, if any: the schema goes in one of them
    (in both for `json_object`, which asks for JSON but cannot say which)."""
    if mode == "json_schema":
        # Not strict: OpenAI's strict mode takes a subset of JSON schema (every property
        # required, no open dicts) that litpipe's schemas need not fit, and the reply is
        # validated (and repaired once) here anyway.
        name = re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64]
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": _schema_json(schema), "strict": False},
        }
        return messages, response_format
    instruction = _schema_instruction(schema)
    if messages and messages[0].get("role") == "system":
        system = {**messages[0], "content": f"{messages[0]['content']}\n\n{instruction}"}
        instructed = [system, *messages[1:]]
    else:
        instructed = [{"role": "system", "content": instruction}, *messages]
    return instructed, {"type": "json_object"} if mode == "json_object" else None


def parse_reply(text: str, schema: type[T], cut_off_at: int | None = None) -> T:
    """The reply's JSON object validated against `schema`: fences and prose around the object
    tolerated; `UnusableReply` says what is wrong (with `cut_off_at`, the max_tokens the reply
    was cut off at)."""
    text = text.strip()
    fenced = _FENCED.search(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        problem = "the reply is empty"
    else:
        try:
            return schema.model_validate_json(text)
        except ValidationError as error:
            problem = _describe(error)
            # The object with some prose around it.
            start, end = text.find("{"), text.rfind("}")
            if start != -1 and end > start and (start, end) != (0, len(text) - 1):
                try:
                    return schema.model_validate_json(text[start : end + 1])
                except ValidationError:
                    pass
    if cut_off_at is not None:
        problem += f" (cut off at max_tokens={cut_off_at}: raise the agent's max_tokens)"
    raise UnusableReply(problem)


def _cut_off_at(reply: _Reply, route: Route) -> int | None:
    return route.max_tokens if reply.finish_reason == "length" else None


def _describe(error: ValidationError, most: int = 8) -> str:
    parts = [
        f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
        if item["loc"]
        else item["msg"]
        for item in error.errors(include_url=False)[:most]
    ]
    more = error.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


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


def _call_cost(response: litellm.ModelResponse, facts: _ModelFacts) -> float:
    if not facts.priced:
        return 0.0
    # litellm prices every reply it returns (its completion_cost, kept in the hidden params):
    # computing it again would double that work.
    known = getattr(response, "_hidden_params", {}).get("response_cost")
    if isinstance(known, int | float):
        return float(known)
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # a reply litellm cannot price (odd usage fields) costs what we know: 0
        logger.debug("litellm could not price a reply of %s", response.model, exc_info=True)
        return 0.0


def _estimate_cost(
    route: Route,
    messages: Messages,
    response_format: dict[str, Any] | None,
    facts: _ModelFacts,
) -> float:
    """The most one request may cost: its prompt, and max_tokens of output."""
    if not facts.priced:
        return 0.0
    prompt_tokens = litellm.token_counter(model=route.model, messages=messages)
    if response_format is not None:
        prompt_tokens += litellm.token_counter(model=route.model, text=json.dumps(response_format))
    prompt_cost, output_cost = litellm.cost_per_token(
        model=route.model, prompt_tokens=prompt_tokens, completion_tokens=route.max_tokens
    )
    return prompt_cost + output_cost


def _log_call(record: CallRecord) -> None:
    outcome = "cache hit" if record.cached else "failed" if record.failed else "made"
    logger.info(
        "llm call %s %s: %s, %d in / %d out tokens, $%.6f, %.2f s, %d retries%s",
        record.agent,
        record.model,
        outcome,
        record.tokens_in,
        record.tokens_out,
        record.cost_usd,
        record.seconds,
        record.retries,
        ", repaired" if record.repaired else "",
    )


# One event loop per process for every model call (see the module's docstring).
_loop_lock = threading.Lock()
_loop_of_process: tuple[int, asyncio.AbstractEventLoop] | None = None


def model_call_loop() -> asyncio.AbstractEventLoop:
    """The process's event loop for model calls, started on first use. Run any other litellm
    call on it too: litellm rebinds its logging worker whenever it meets another loop."""
    global _loop_of_process
    with _loop_lock:
        # A forked child inherits the variable but not the thread: it starts its own.
        if _loop_of_process is None or _loop_of_process[0] != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="litpipe-llm", daemon=True).start()
            _loop_of_process = (os.getpid(), loop)
        return _loop_of_process[1]


async def _all_or_first_failure(calls: Sequence[Coroutine[Any, Any, R]]) -> list[R]:
    """Each call's result, in order; every call runs to its end (its reply cached) before the
    first failure is raised, so that a rerun repeats only the calls that failed."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return cast(list[R], results)


async def _on_model_call_loop(coroutine: Coroutine[Any, Any, R]) -> R:
    loop = model_call_loop()
    if asyncio.get_running_loop() is loop:
        return await coroutine
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, loop))


def _run_sync(coroutine: Coroutine[Any, Any, R]) -> R:
    loop = model_call_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coroutine.close()
        raise RuntimeError("a synchronous call from the model-call loop would wait for itself")
    return result_when_done(asyncio.run_coroutine_threadsafe(coroutine, loop))
