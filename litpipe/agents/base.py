"""What an agent is (a prompt file, a reply schema, an offline engine) and how one is run.

Run with a model, an agent's messages are fitted to the model's context window (the longest
prompt value is cut, its last parts first, and the cut is counted and logged), and an item whose
reply is still unusable after one repair, or that cannot be fitted, is written by the agent's
offline engine (`llm.on_unusable = offline`, the default: counted as a fallback, and the engine
that outputs name says so) or fails alone (`fail`).
"""

from __future__ import annotations

import inspect
import json
import logging
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import (
    Any,
    ClassVar,
    Generic,
    Protocol,
    TypeVar,
    get_args,
    get_origin,
    runtime_checkable,
)

from pydantic import BaseModel

from litpipe import text as text_helpers
from litpipe.hashing import digest
from litpipe.llm.errors import ContextOverflowError, LLMError, ReplyValidationError, one_line
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.window import messages_tokens
from litpipe.settings import DEFAULT_REPLY_TOKENS, Route, Settings

logger = logging.getLogger(__name__)

In = TypeVar("In", bound=BaseModel)
Reply = TypeVar("Reply", bound=BaseModel)
Schema = TypeVar("Schema", bound=BaseModel)

OFFLINE_ENGINE = "offline"
# A reply field the code needs words in: the schema says so, so that a server with structured
# output never sends a blank one.
NON_BLANK = r"\S"


class StructuredClient(Protocol):
    """The one thing agents need of the LLM client: a validated reply to chat messages."""

    def complete_sync(
        self, route: Route, messages: list[dict[str, str]], schema: type[Schema]
    ) -> Schema: ...


# One agent's batch for a model: its route, one conversation per input, its reply schema.
ModelBatch = tuple[Route, Sequence[list[dict[str, str]]], type[BaseModel]]


class BatchClient(Protocol):
    """What a stage asking an agent many things at once needs of the LLM client: validated
    replies to many conversations, sent concurrently, each call's failure in its place; and
    several agents' batches at once."""

    def complete_many_sync(
        self, route: Route, list_of_messages: Sequence[list[dict[str, str]]], schema: type[Schema]
    ) -> list[Schema]: ...

    def complete_each_sync(
        self, route: Route, list_of_messages: Sequence[list[dict[str, str]]], schema: type[Schema]
    ) -> list[Schema | LLMError]: ...

    def complete_batches_sync(
        self, batches: Sequence[ModelBatch]
    ) -> list[list[BaseModel | LLMError]]: ...


@runtime_checkable
class WindowedClient(Protocol):
    """A client that knows its models' context windows (the LLM client; scripted test clients
    need not): what fitting an agent's messages asks of it."""

    def prompt_budget(self, route: Route, schema: type[BaseModel]) -> int | None: ...

    def count_tokens(self, route: Route, text: str) -> int: ...

    def record_fallback(self, route: Route, reason: str) -> None: ...


class ModelClient(StructuredClient, BatchClient, Protocol):
    """Both ways of asking (the LLM client has both): what a stage running several agents
    passes to them."""


class Agent(ABC, Generic[In, Reply]):
    """An agent is its prompt file (`name`), what a model must return (`reply_schema`) and an
    offline engine that fulfils the same schema from the inputs' own text.

    `reply_schema` is the class's `Reply` argument (`class TldrAgent(Agent[TldrInput,
    TldrReply])`, or `PassageAgent[RelevanceReply]` of a generic agent), so the two cannot
    disagree; a class may still set it itself.
    """

    name: str
    reply_schema: type[Reply]
    # The most tokens the agent's reply needs: its max_tokens where the settings set none, so
    # that a short reply does not reserve a whole window's worth of room.
    reply_tokens: ClassVar[int] = DEFAULT_REPLY_TOKENS
    # Where the reply stands among the class's type parameters: second in Agent[In, Reply]; a
    # generic agent's own (PassageAgent[Reply]: first) for its subclasses to fill.
    _reply_index: ClassVar[int] = 1

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in vars(cls).get("__orig_bases__", ()):
            origin = get_origin(base)
            if isinstance(origin, type) and issubclass(origin, Agent):
                reply = get_args(base)[origin._reply_index]
                if isinstance(reply, TypeVar):
                    cls._reply_index = vars(cls)["__parameters__"].index(reply)
                elif "reply_schema" not in vars(cls):
                    cls.reply_schema = reply

    def messages(self, inputs: In, prompts: PromptLibrary) -> list[dict[str, str]]:
        """The agent's prompt file rendered with `prompt_values`."""
        return prompts.render(self.name, **self.prompt_values(inputs))

    @abstractmethod
    def prompt_values(self, inputs: In) -> dict[str, str]:
        """The value of each placeholder of the prompt, every piece of paper text inside a
        fence."""

    @abstractmethod
    def offline(self, inputs: In) -> Reply:
        """The deterministic, extractive reply: only text taken from the inputs."""


def route_of(agent: Agent[Any, Any], settings: Settings) -> Route:
    """The agent's route, its max_tokens the agent's own reply size where the settings set
    none."""
    return settings.route(agent.name, agent.reply_tokens)


def engine_name(route: Route) -> str:
    """What an output records as its writer: `offline`, or the route's model, with the items
    of the agent's last run on this thread that its offline engine wrote in the model's place
    ("gpt-4o-mini, offline fallback for 2 of 9: <why>")."""
    if route.offline:
        return OFFLINE_ENGINE
    fallbacks = _last_run_fallbacks().get(route.agent)
    if fallbacks is None or not fallbacks.reasons:
        return route.model
    return (
        f"{route.model}, offline fallback for {len(fallbacks.reasons)} of {fallbacks.items}: "
        f"{fallbacks.reasons[0]}"
    )


@dataclass
class _Fallbacks:
    items: int
    reasons: list[str]


_thread_state = threading.local()


def _last_run_fallbacks() -> dict[str, _Fallbacks]:
    """Per agent, its last run's fallbacks on this thread (what `engine_name` reports): the
    agent's output is named right after its run, on the thread that ran it."""
    if not hasattr(_thread_state, "fallbacks"):
        _thread_state.fallbacks = {}
    found: dict[str, _Fallbacks] = _thread_state.fallbacks
    return found


# Any agent, whatever it reads and replies: callers hash several kinds of agent together.
def version(agent: Agent[Any, Any], settings: Settings, prompts: PromptLibrary) -> str:
    """Hash of all that decides the agent's replies: for the code_version of its asset.

    The effective prompt text, the reply schema, the agent's module and the shared extractive
    helpers (the offline engine), and the route's model and sampling. Not `api_base`: the same
    model served from another address gives the same replies.
    """
    route = route_of(agent, settings)
    parts = [
        prompts.digest(agent.name),
        json.dumps(agent.reply_schema.model_json_schema(), sort_keys=True),
        inspect.getsource(sys.modules[type(agent).__module__]),
        inspect.getsource(text_helpers),
        route.model_dump_json(include={"model", "temperature", "max_tokens"}),
    ]
    return digest(*parts)


def run_agent(
    agent: Agent[In, Reply],
    inputs: In,
    settings: Settings,
    prompts: PromptLibrary,
    client: StructuredClient | None,
) -> Reply:
    """The agent's reply: from its offline engine when its route is offline, else from a model
    (the item written offline where the model's reply cannot be used, as `llm.on_unusable`
    says)."""
    route = route_of(agent, settings)
    if route.offline:
        return agent.offline(inputs)
    model_client = _given(client, agent, route)
    _last_run_fallbacks()[agent.name] = _Fallbacks(items=1, reasons=[])
    reply: Reply | LLMError
    try:
        messages = fitted_messages(agent, inputs, prompts, model_client, route)
        reply = model_client.complete_sync(route, messages, agent.reply_schema)
    except LLMError as error:
        reply = error
    return _settled(agent, inputs, reply, settings, model_client, route)


C = TypeVar("C")


def _given(client: C | None, agent: Agent[Any, Any], route: Route) -> C:
    if client is None:
        raise ValueError(
            f"agent {agent.name!r} is routed to model {route.model!r} but no LLM client was given"
        )
    return client


def fitted_messages(
    agent: Agent[In, Any], inputs: In, prompts: PromptLibrary, client: object, route: Route
) -> list[dict[str, str]]:
    """The agent's messages, fitted to the route's window where the client knows it: the
    longest prompt value is cut, its last parts first (passages and lists come ranked, best
    first), until the messages fit; what was cut is logged. `ContextOverflowError` where even
    the prompt's own words do not fit."""
    values = agent.prompt_values(inputs)
    messages = prompts.render(agent.name, **values)
    if not isinstance(client, WindowedClient):
        return messages
    budget = client.prompt_budget(route, agent.reply_schema)
    if budget is None:
        return messages

    def count(text: str) -> int:
        return client.count_tokens(route, text)

    cuts: list[str] = []
    for _ in range(len(values) + 1):
        over = messages_tokens(messages, count) - budget
        if over <= 0:
            if cuts:
                logger.warning(
                    "%s: cut to fit %s's window (%d prompt tokens at most): %s",
                    agent.name,
                    route.model,
                    budget,
                    "; ".join(cuts),
                )
            return messages
        name = max(values, key=lambda key: count(values[key]))
        shorter, cut = _cut(values[name], over, count)
        if cut is None:
            break
        values[name] = shorter
        cuts.append(f"{name}: {cut}")
        messages = prompts.render(agent.name, **values)
    raise ContextOverflowError(
        f"{agent.name}: its prompt does not fit {route.model}'s window ({budget:,} tokens for the "
        f"prompt once the reply's {route.max_tokens:,} are set aside), even cut"
    )


# A fenced value's fences (`<paper>` ... `</paper>`): kept whole when the inside is cut.
_FENCE_LINES = 2


def _cut(value: str, over: int, count: Callable[[str], int]) -> tuple[str, str | None]:
    """`value` less at least `over` tokens, its last parts first (paragraphs, else lines, else
    words), and what was left out; (value, None) where nothing can be cut."""
    lines = value.split("\n")
    fenced = len(lines) > _FENCE_LINES and lines[0].startswith("<") and lines[-1].startswith("</")
    inside = "\n".join(lines[1:-1]) if fenced else value
    for separator, unit in (("\n\n", "parts"), ("\n", "lines"), (" ", "words")):
        parts = inside.split(separator)
        if len(parts) == 1:  # nothing to cut at this separator
            continue
        removed = 0
        kept = len(parts)
        while kept > 0 and removed < over:
            kept -= 1
            removed += count(parts[kept]) + 1
        shorter = separator.join(parts[:kept]) if kept else "(left out: too long for the window)"
        if fenced:
            shorter = "\n".join([lines[0], shorter, lines[-1]])
        return shorter, f"{len(parts) - kept} of {len(parts)} {unit} left out"
    return value, None


def _settled(
    agent: Agent[In, Reply],
    inputs: In,
    reply: Reply | LLMError,
    settings: Settings,
    client: object,
    route: Route,
) -> Reply:
    """The reply, or, for an item whose model reply cannot be used, the offline engine's
    (recorded and counted) where `llm.on_unusable` is `offline`; any other failure is raised."""
    if not isinstance(reply, LLMError):
        return reply
    unusable = isinstance(reply, ReplyValidationError | ContextOverflowError)
    if not unusable or settings.llm.on_unusable == "fail":
        raise reply
    reason = one_line(str(reply), 200)
    logger.warning("%s: offline fallback for one item: %s", agent.name, reason)
    _last_run_fallbacks()[agent.name].reasons.append(reason)
    if isinstance(client, WindowedClient):
        client.record_fallback(route, reason)
    return agent.offline(inputs)


def _conversations(
    agent: Agent[In, Any],
    batch: Sequence[In],
    prompts: PromptLibrary,
    client: object,
    route: Route,
) -> tuple[list[list[dict[str, str]]], dict[int, LLMError]]:
    """Each input's fitted messages; an input that cannot be fitted has its error instead."""
    conversations: list[list[dict[str, str]]] = []
    unfitted: dict[int, LLMError] = {}
    for index, inputs in enumerate(batch):
        try:
            conversations.append(fitted_messages(agent, inputs, prompts, client, route))
        except ContextOverflowError as error:
            unfitted[index] = error
    return conversations, unfitted


def _with_unfitted(replies: Sequence[Any], unfitted: dict[int, LLMError], size: int) -> list[Any]:
    """The replies to the fitted inputs, with each unfitted input's error in its place."""
    asked = iter(replies)
    return [unfitted[index] if index in unfitted else next(asked) for index in range(size)]


def run_batch(
    agent: Agent[In, Reply],
    batch: Sequence[In],
    settings: Settings,
    prompts: PromptLibrary,
    client: BatchClient | None,
) -> list[Reply]:
    """The agent's reply to each input, in order: from its offline engine, or from a model in
    one concurrent batch (so the reply cache and the `llm.concurrency` bound apply), each item
    whose reply cannot be used settled as in `run_agent`."""
    route = route_of(agent, settings)
    if route.offline:
        return [agent.offline(inputs) for inputs in batch]
    model_client = _given(client, agent, route)
    _last_run_fallbacks()[agent.name] = _Fallbacks(items=len(batch), reasons=[])
    if not batch:
        return []
    conversations, unfitted = _conversations(agent, batch, prompts, model_client, route)
    asked = (
        model_client.complete_each_sync(route, conversations, agent.reply_schema)
        if conversations
        else []
    )
    replies = _with_unfitted(asked, unfitted, len(batch))
    return [
        _settled(agent, inputs, reply, settings, model_client, route)
        for inputs, reply in zip(batch, replies, strict=True)
    ]


def run_batches(
    agents: Sequence[Agent[In, Any]],
    batch: Sequence[In],
    settings: Settings,
    prompts: PromptLibrary,
    client: BatchClient | None,
) -> list[list[Any]]:
    """Each agent's replies to the same inputs, as `run_batch` gives them; the model calls of
    all the agents go at once, and the caller waits for them in one wait (which a stop ends:
    no thread is left waiting on a reply)."""
    replies: dict[int, list[Any]] = {}
    asked: dict[int, ModelBatch] = {}
    unfitted: dict[int, dict[int, LLMError]] = {}
    for index, agent in enumerate(agents):
        route = route_of(agent, settings)
        if route.offline or not batch:
            replies[index] = run_batch(agent, batch, settings, prompts, client)
        else:
            _last_run_fallbacks()[agent.name] = _Fallbacks(items=len(batch), reasons=[])
            conversations, unfitted[index] = _conversations(
                agent, batch, prompts, _given(client, agent, route), route
            )
            asked[index] = (route, conversations, agent.reply_schema)
    if asked and client is not None:
        answered = client.complete_batches_sync(list(asked.values()))
        for index, found in zip(asked, answered, strict=True):
            agent, route = agents[index], asked[index][0]
            replies[index] = [
                _settled(agent, inputs, reply, settings, client, route)
                for inputs, reply in zip(
                    batch, _with_unfitted(found, unfitted[index], len(batch)), strict=True
                )
            ]
    return [replies[index] for index in range(len(agents))]
