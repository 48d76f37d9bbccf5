"""`LLMClient`: an agent's messages in, a validated pydantic object out, for the agents of one
step.

A call is looked up in the reply cache first (on the caller's thread); one it cannot answer is
asked of the model (`ModelCalls`) on the model-call loop, within the client's concurrency bound
(each of its requests within its route's in-flight limit and breaker: `routes`), and its
validated reply is cached. A failure, an unusable reply's too,
is never cached: the run that got it reports it and writes its item offline, and the next run
asks again (the server may have been fixed, or the model pointed at another one).
Every call, hit or not, is recorded in the usage ledger. Batches of calls run concurrently and
each runs to its end before the first failure is raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar, cast

from pydantic import BaseModel, ValidationError

from litpipe.llm.cache import LLMCache
from litpipe.llm.client.budget import _Budget
from litpipe.llm.client.calls import ModelCalls
from litpipe.llm.client.loop import _all_or_first_failure, _on_model_call_loop, _run_sync
from litpipe.llm.client.model_facts import _model_facts
from litpipe.llm.client.routes import RunScope, wait_budget
from litpipe.llm.client.structured import Messages, _mode, _schema_instruction, _schema_json
from litpipe.llm.errors import LLMError, one_line
from litpipe.llm.shared_limits import SharedLimits, limits_database
from litpipe.llm.usage import CallRecord, UsageLedger
from litpipe.llm.window import token_counter
from litpipe.settings import HomePaths, LLMSettings, Route

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)


class LLMClient(ModelCalls):
    """Structured calls for the agents of one step, recorded in `usage`.

    `llm` gives the concurrency bound (`llm.concurrency`, shared by all calls of this client),
    the timeout, the retries, the breaker, the cache switch, the budget and the run's time for
    waiting on models (shared by the clients of the ledger's scope); the route of each call
    gives its model, API base and sampling; `home` the reply cache's folder. API keys come from
    the environment only.
    """

    def __init__(
        self,
        llm: LLMSettings,
        home: HomePaths,
        usage: UsageLedger,
        limits_at: str | Path | None = None,
    ) -> None:
        """`limits_at`: where `llm.rate_limits` and `llm.nightly_budget_usd` are counted (the
        instance's PostgreSQL URL; default `home.model_limits_path`, SQLite). Without either
        setting, nothing is."""
        self.llm = llm
        self.usage = usage
        self.cache = LLMCache(home.cache_dir) if llm.cache else None
        self._slots = asyncio.Semaphore(llm.concurrency)
        self._shared = shared_limits(
            llm, limits_at if limits_at is not None else home.model_limits_path
        )
        self._budget = _Budget(llm.budget_usd, usage, estimate=llm.nightly_budget_usd is not None)
        self._scope = RunScope.of_ledger(usage.path, id(usage))
        self._waits = wait_budget(llm, self._scope)

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
            return cached
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
            return [cast(T, cached) for _, cached in lookups]
        return await _on_model_call_loop(
            self._complete_many(route, list_of_messages, schema, lookups)
        )

    def complete_sync(self, route: Route, messages: Messages, schema: type[T]) -> T:
        """`complete` for synchronous callers (Dagster steps)."""
        self.usage.expect(route.agent, 1)
        key, cached = self._lookup(route, messages, schema)
        if cached is not None:
            return cached
        return _run_sync(self._ask_and_record(route, messages, schema, key))

    def complete_many_sync(
        self, route: Route, list_of_messages: Sequence[Messages], schema: type[T]
    ) -> list[T]:
        """`complete_many` for synchronous callers."""
        self.usage.expect(route.agent, len(list_of_messages))
        lookups = [self._lookup(route, messages, schema) for messages in list_of_messages]
        if all(cached is not None for _, cached in lookups):
            return [cast(T, cached) for _, cached in lookups]
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
            found: list[tuple[str | None, BaseModel | None]],
        ) -> list[BaseModel | LLMError]:
            async def one(
                messages: Messages,
                key: str | None,
                cached: BaseModel | None,
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
    ) -> tuple[str | None, T | None]:
        """The call's cache key, and its cached reply if there is one (then recorded as a hit).

        Runs on the caller's thread: a hit never waits for the model-call loop.
        """
        _check_route(route)
        if self.cache is None:
            return None, None
        started = time.perf_counter()
        try:
            key = self._key(route, messages, schema)
        except LLMError:
            # A model litellm cannot place has no key: asked, it fails, and is counted failed.
            return None, None
        cached = self._from_cache(key, schema)
        if cached is not None:
            self._record(CallRecord(agent=route.agent, model=route.model, cached=True), started)
        return key, cached

    def _key(self, route: Route, messages: Messages, schema: type[BaseModel]) -> str:
        """The cache key of a call: the model, messages, schema and sampling, and the
        structured-output mode it is asked in (in `auto`, the one this process learnt the
        server takes). Not the API base: the same model at another address answers alike."""
        assert self.cache is not None
        params = {
            "temperature": route.temperature,
            "max_tokens": route.max_tokens,
            "structured_output": _mode(route, _model_facts(route.model)),
        }
        return self.cache.key(route.model, messages, _schema_json(schema), params)

    async def _complete_many(
        self,
        route: Route,
        list_of_messages: Sequence[Messages],
        schema: type[T],
        lookups: list[tuple[str | None, T | None]],
    ) -> list[T]:
        async def one(messages: Messages, key: str | None, cached: T | None) -> T:
            if cached is not None:
                return cached
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
        """A call the cache could not answer, on the model-call loop; its valid reply is cached
        under the structured-output mode that produced it (`auto` may have learnt another one
        during the call)."""
        started = time.perf_counter()
        record = CallRecord(agent=route.agent, model=route.model)
        try:
            facts = _model_facts(route.model)
            waiting = self._waits.waiting() if self._waits is not None else contextlib.nullcontext()
            with waiting:
                async with self._slots:
                    value = await self._ask(route, messages, schema, facts, record)
        except BaseException as error:
            record.failed = True
            record.error = one_line(str(error)) or type(error).__name__
            raise
        finally:
            self._record(record, started)
            self._budget.recorded(record.cost_usd)
        if self.cache is not None and key is not None:
            self.cache.put(
                self._key(route, messages, schema),
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

    def _from_cache(self, key: str, schema: type[T]) -> T | None:
        assert self.cache is not None
        entry = self.cache.get(key)
        if entry is None:
            return None
        try:
            return schema.model_validate(entry["value"])
        except (KeyError, ValidationError):
            # The schema's validators changed since: a miss, and the entry is overwritten.
            logger.warning("cached reply %s no longer validates as %s", key, schema.__name__)
            return None


def shared_limits(llm: LLMSettings, limits_at: str | Path) -> SharedLimits | None:
    """The limits the client's requests share with every process's, counted at `limits_at`
    (a PostgreSQL URL, or a SQLite file); None, and no database opened, without any."""
    if not llm.rate_limits and llm.nightly_budget_usd is None:
        return None
    return SharedLimits(
        limits_database(limits_at),
        dict(llm.rate_limits),
        llm.nightly_budget_usd,
        llm.nightly_budget_day_start,
    )


def _check_route(route: Route) -> None:
    if route.offline:
        raise ValueError(f"agent {route.agent!r} runs offline: its calls cannot go to a model")


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
