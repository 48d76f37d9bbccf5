"""How many requests go to a route's server at once, whether it is answering at all, and how
long a run may wait on models.

Per route (api_base and model), for the process (a forked child starts its own):

- a try's timeout (`InFlightLimit.timeout_for`): `llm.timeout_s`, longer on a server that has
  answered but writes slowly (a small model on a busy CPU), as long as a whole reply takes it
  at the pace of its slowest recent replies, with a margin (at most `STRETCH` times the
  setting). A request given up on is still decoded by a server that decodes one at a time, and
  its retry waits behind it: a reply on its way is worth its wait. A server that never answered
  keeps the setting, and the breaker below finds it out at that pace.
- its in-flight limit (`InFlightLimit`). As many requests as the server says it decodes at once
  (llama.cpp's `/props`; one for llama-cpp-python's server). Else learnt from latency: one at
  first; one more once as many replies as are in flight came back no slower than `TOLERANCE`
  times the fastest of their agent, while calls wait for a place, and only where the new number
  of requests, were the server to decode them one at a time, would still be answered within
  `llm.timeout_s`; halved when replies slow down past that (the number that slowed them is
  tried again only after `PROBE_AFTER` calm replies, twice as many each time); one after a
  timeout or a dropped connection, since the server may still be decoding the request litpipe
  gave up on, and the retry waits for its place behind every request in flight. A hosted
  provider's model (one litellm knows, with or without an api_base: a proxy, a gateway) has no
  limit but `llm.concurrency`: it decodes many requests at once, says when it is overloaded
  (429 with Retry-After, which the retries honour), and its latency grows with the length of
  its replies, which a latency-learnt limit would take for queueing.
Per route and run (its usage scope: a `litpipe run`, a launched run):

- its breaker (`Breaker`): `llm.breaker_failures` timeouts or refused connections in a row open
  it, and every request then fails at once with `ModelUnreachableError`; `BREAKER_OPEN_S` later
  one request is let through, and a failure opens it again. Any answer closes it. Its state is
  kept beside the run's usage ledger (`HOME/usage/<scope>.routes/`), so that a step retried in
  another process (the multiprocess executor of launched runs) does not wait on a dead server
  again, while the next run asks the server afresh.

Per run and process: `llm.run_deadline_s` (`WaitBudget`), the time in which some call of the
run waited on a model, in a queue or for a reply; once spent, its calls fail with
`ModelUnreachableError` too.

Everything here is touched only on the model-call loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from litpipe.files import write_atomically
from litpipe.hashing import digest
from litpipe.llm.errors import ModelUnreachableError
from litpipe.llm.window import known_to_litellm, server_slots
from litpipe.settings import LLMSettings, Route
from litpipe.url_credentials import hide_credentials

logger = logging.getLogger(__name__)

# A reply this many times slower than the fastest of its agent came from a queue.
TOLERANCE = 1.5
# Replies a limit that slowed replies down waits before it is tried again (doubled each time).
PROBE_AFTER = 16
# How many of the latest replies bound the next limit (the slowest of them, times the limit).
RECENT_REPLIES = 8
# How long an open breaker refuses every request before it lets one through.
BREAKER_OPEN_S = 300.0
# A try's timeout on a server that answers, but slowly: its slowest recent time per token
# written, times the reply's max_tokens, times this margin; at most `STRETCH` times
# `llm.timeout_s`. A reply's time per token is counted over at least `LEAST_TOKENS` tokens (a
# short reply's time is mostly its prompt's).
MARGIN = 1.5
STRETCH = 4.0
LEAST_TOKENS = 32

# What became of a request, as the limit and the breaker read it: an answer, a timeout, a
# connection refused or dropped, an overloaded server (429, 5xx), any other refusal.
Outcome = Literal["answered", "timed_out", "unreachable", "overloaded", "refused"]


@dataclass(frozen=True)
class Ticket:
    """A place among a route's requests in flight: the limit it was given under, and which
    setting of the limit that was."""

    level: int
    epoch: int


class InFlightLimit:
    """The requests in flight to one server: `slots` where the server says how many it decodes
    at once, else a number learnt from latency (the module's docstring says how), at most
    `ceiling`."""

    def __init__(
        self, ceiling: int, timeout_s: float, slots: int | None = None, route: str = "a server"
    ) -> None:
        self.route = route
        self.learns = slots is None
        self.limit = 1 if slots is None else slots
        self.ceiling = ceiling if slots is None else slots
        self.timeout_s = timeout_s
        self.in_flight = 0
        self._waiting: deque[asyncio.Future[bool]] = deque()
        self._epoch = 0
        self._calm = 0  # replies within TOLERANCE since the limit was last set
        self._pressed = False  # a request waited for a place since the limit was last set
        self._cap = self.ceiling  # the highest limit that held
        self._probe_after = 0
        self._fastest: dict[str, float] = {}
        self._recent: deque[float] = deque(maxlen=RECENT_REPLIES)
        self._per_token: deque[float] = deque(maxlen=RECENT_REPLIES)

    async def acquire(self, breaker: Breaker | None = None) -> Ticket:
        """A place, once one is free (first come, first served); `ModelUnreachableError` as
        soon as the breaker is open, whether the request waited or not."""
        while True:
            if breaker is not None:
                breaker.check()
            if self.in_flight < self.limit and not self._waiting:
                self.in_flight += 1
                return Ticket(self.limit, self._epoch)
            self._pressed = True
            future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            self._waiting.append(future)
            try:
                handed = await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled() and future.result():
                    self._release()
                with contextlib.suppress(ValueError):
                    self._waiting.remove(future)
                raise
            if handed:
                if breaker is not None and breaker.is_open():
                    self._release()
                    breaker.check()
                return Ticket(self.limit, self._epoch)

    def finished(
        self, ticket: Ticket, outcome: Outcome, kind: str, seconds: float, written: int = 0
    ) -> None:
        """The request of `ticket` (an agent's: `kind`) is over after `seconds`, its reply
        `written` tokens long: its place is free, and what became of it teaches the limit and
        the timeout."""
        self.in_flight -= 1
        if outcome == "answered":
            self._per_token.append(seconds / max(written, LEAST_TOKENS))
        if self.learns:
            self._learn(ticket, outcome, kind, seconds)
        self._hand_over()

    def timeout_for(self, max_tokens: int) -> float:
        """A try's timeout for a reply of at most `max_tokens` (the module's docstring says
        why it may exceed `llm.timeout_s`)."""
        if not self._per_token:
            return self.timeout_s
        needed = MARGIN * max(self._per_token) * max_tokens
        return min(max(self.timeout_s, needed), STRETCH * self.timeout_s)

    def wake_all(self) -> None:
        """Every waiting request looks again (the breaker opened: they fail at once)."""
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():
                future.set_result(False)

    def _release(self) -> None:
        self.in_flight -= 1
        self._hand_over()

    def _hand_over(self) -> None:
        while self._waiting and self.in_flight < self.limit:
            future = self._waiting.popleft()
            if not future.done():
                self.in_flight += 1
                future.set_result(True)

    def _learn(self, ticket: Ticket, outcome: Outcome, kind: str, seconds: float) -> None:
        if outcome in ("timed_out", "unreachable"):
            if ticket.level > 1:
                self._cap = min(self._cap, ticket.level - 1)
            if self.limit > 1:
                self._set(1, "a request timed out or its connection failed")
            return
        if outcome == "overloaded":
            if ticket.epoch == self._epoch and self.limit > 1:
                self._set(max(1, self.limit // 2), "the server says it is overloaded")
            return
        if outcome != "answered":
            return
        fastest = self._fastest.get(kind)
        self._fastest[kind] = seconds if fastest is None else min(fastest, seconds)
        self._recent.append(seconds)
        if ticket.epoch != self._epoch:
            return  # sent under another limit: it says nothing of this one
        if fastest is not None and ticket.level > 1 and seconds > TOLERANCE * fastest:
            self._cap = min(self._cap, ticket.level - 1)
            self._probe_after = max(PROBE_AFTER, 2 * self._probe_after)
            self._set(
                max(1, min(self.limit // 2, self._cap)),
                f"a reply took {seconds:.1f} s, its agent's fastest {fastest:.1f} s",
            )
            return
        self._calm += 1
        if self._may_raise():
            self._cap = max(self._cap, self.limit)
            self._set(self.limit + 1, "replies come as fast")

    def _may_raise(self) -> bool:
        if self.limit >= self.ceiling or not (self._pressed or self._waiting):
            return False
        needed = self.limit if self.limit < self._cap else self._probe_after
        if self._calm < needed:
            return False
        # Were the server to decode one at a time, the last of limit + 1 requests would wait
        # for all the others: it must still be answered within the timeout.
        return (self.limit + 1) * max(self._recent) < self.timeout_s

    def _set(self, limit: int, why: str) -> None:
        logger.info(
            "llm requests in flight to %s: %d, was %d (%s)", self.route, limit, self.limit, why
        )
        self.limit = limit
        self._epoch += 1
        self._calm = 0
        self._pressed = False
        self._hand_over()


class Breaker:
    """Whether a route's server is answering: open after `threshold` timeouts or refused
    connections in a row (the module's docstring says for how long), its state kept in
    `state` (a file under the home) where given."""

    def __init__(self, threshold: int, route: str, state: Path | None = None) -> None:
        self.threshold = threshold
        self.route = route
        self.state = state
        self.failures = 0
        self.open_until = 0.0  # time.time(): shared with other processes through `state`
        self.reason = ""
        if state is not None:
            self._load(state)

    def is_open(self) -> bool:
        return time.time() < self.open_until

    def check(self) -> None:
        """`ModelUnreachableError` while open."""
        if self.is_open():
            raise ModelUnreachableError(self.reason)

    def answered(self) -> None:
        """The server answered (a reply, or an HTTP error: it is there)."""
        if self.failures or self.open_until:
            self.failures, self.open_until, self.reason = 0, 0.0, ""
            self._save()

    def failed(self, what: str) -> ModelUnreachableError | None:
        """A request timed out or found no server (`what` happened): the error every request
        now gets, where the breaker is open (this one opened it, or another did meanwhile)."""
        if self.is_open():
            return ModelUnreachableError(self.reason)
        self.failures += 1
        if self.failures < self.threshold:
            self._save()
            return None
        self.open_until = time.time() + BREAKER_OPEN_S
        self.reason = (
            f"model unreachable: {self.route} {what}, {self.failures} times in a row "
            f"(llm.breaker_failures={self.threshold}); not asked again for "
            f"{BREAKER_OPEN_S / 60:.0f} minutes"
        )
        logger.warning("%s: each item still to ask it is written without it", self.reason)
        self._save()
        return ModelUnreachableError(self.reason)

    def _load(self, state: Path) -> None:
        try:
            found = json.loads(state.read_text("utf-8"))
            self.failures = int(found["failures"])
            self.open_until = float(found["open_until"])
            self.reason = str(found["reason"])
        except (OSError, ValueError, KeyError, TypeError):
            pass  # none yet, or unreadable: the route is taken as answering

    def _save(self) -> None:
        if self.state is None:
            return
        state = {
            "route": self.route,
            "failures": self.failures,
            "open_until": self.open_until,
            "reason": self.reason,
        }
        try:
            self.state.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.state, json.dumps(state))
        except OSError as error:  # the breaker still holds for this process
            logger.debug("could not keep the state of %s: %s", self.route, error)


class WaitBudget:
    """The time a run may spend waiting on models (`llm.run_deadline_s`): counted while any of
    its calls waits, in a queue or for a reply, concurrent waits counted once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._spent = 0.0
        self._waiting = 0
        self._since = 0.0

    def left(self) -> float:
        ongoing = time.monotonic() - self._since if self._waiting else 0.0
        return self.seconds - self._spent - ongoing

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        if not self._waiting:
            self._since = time.monotonic()
        self._waiting += 1
        try:
            yield
        finally:
            self._waiting -= 1
            if not self._waiting:
                self._spent += time.monotonic() - self._since

    def spent_error(self, route: Route) -> ModelUnreachableError:
        return ModelUnreachableError(
            f"model unreachable in time: {described(route)} was not asked, the run having "
            f"waited {self.seconds:.0f} s on models in all (llm.run_deadline_s)"
        )


def described(route: Route) -> str:
    """The route as messages name it: its model and where it is served (no password)."""
    where = hide_credentials(route.api_base) if route.api_base else "its provider"
    return f"{route.model} at {where}"


@dataclass
class RouteGate:
    """What a request to a route passes: its in-flight limit (None: a hosted provider's, bound
    by `llm.concurrency` alone) and its breaker."""

    limit: InFlightLimit | None
    breaker: Breaker


# Per (process, api_base, model): the limit; per (process, usage scope, api_base, model): the
# breaker. A forked child has its own model-call loop: the process is in the keys.
_LIMITS: dict[tuple[int, str | None, str], InFlightLimit | None] = {}
_BREAKERS: dict[tuple[int, str, str | None, str], Breaker] = {}
# Per (process, usage scope): the run's time for waiting on models.
_WAIT_BUDGETS: dict[tuple[int, str], WaitBudget] = {}


@dataclass(frozen=True)
class RunScope:
    """The run a client's calls count towards: its usage scope's name, and where the run keeps
    its routes' breakers (None: in this process only)."""

    name: str
    routes_dir: Path | None

    @staticmethod
    def of_ledger(path: Path | None, ledger_id: int) -> RunScope:
        """The scope of a usage ledger: its file's (shared by the run's steps), else its own."""
        if path is None:
            return RunScope(f"ledger-{ledger_id}", None)
        return RunScope(str(path), path.with_suffix(".routes"))


async def route_gate(route: Route, llm: LLMSettings, scope: RunScope) -> RouteGate:
    """The gate of the route for the run (its server asked once per process how many it
    decodes at once)."""
    pid = os.getpid()
    key = (pid, route.api_base, route.model)
    if key not in _LIMITS:
        slots = await asyncio.to_thread(server_slots, route.api_base, route.model)
        limit = None
        # Learnt only for a model of the user's own server: one litellm knows, even through an
        # api_base (a proxy, a gateway), is a hosted provider's.
        if slots is not None or (route.api_base is not None and not known_to_litellm(route.model)):
            limit = InFlightLimit(llm.concurrency, llm.timeout_s, slots, described(route))
        _LIMITS.setdefault(key, limit)
    limit = _LIMITS[key]
    if limit is not None and limit.learns:
        # The client's settings of the moment (they are those of the run that asks).
        limit.ceiling, limit.timeout_s = llm.concurrency, llm.timeout_s
    breaker_key = (pid, scope.name, route.api_base, route.model)
    if breaker_key not in _BREAKERS:
        state = None
        if scope.routes_dir is not None:
            state = scope.routes_dir / f"{digest(route.api_base or '', route.model)}.json"
        _BREAKERS[breaker_key] = Breaker(llm.breaker_failures, described(route), state)
    breaker = _BREAKERS[breaker_key]
    breaker.threshold = llm.breaker_failures
    return RouteGate(limit, breaker)


def wait_budget(llm: LLMSettings, scope: RunScope) -> WaitBudget | None:
    """The run's time for waiting on models, shared by the clients of its usage scope in this
    process; None without `llm.run_deadline_s`."""
    seconds = llm.run_deadline_s
    if seconds is None:
        return None
    key = (os.getpid(), scope.name)
    if key not in _WAIT_BUDGETS or _WAIT_BUDGETS[key].seconds != seconds:
        _WAIT_BUDGETS[key] = WaitBudget(seconds)
    return _WAIT_BUDGETS[key]
