"""What an agent is: its prompt file, its reply schema, the prompt values it fills from its
inputs, and the name of its offline function in `litpipe.extractive`; and how its messages are
fitted to a model's context window (the longest prompt value is cut, its last parts first, and
the cut is logged). An agent is asked through an `Asker` (`litpipe.agents.asker`), which binds
it to its model once per step.
"""

from __future__ import annotations

import logging
import re
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

from litpipe.llm.errors import ContextOverflowError, LLMError
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.window import messages_tokens
from litpipe.settings import DEFAULT_REPLY_TOKENS, Route

logger = logging.getLogger(__name__)

In = TypeVar("In", bound=BaseModel)
Reply = TypeVar("Reply", bound=BaseModel)
Schema = TypeVar("Schema", bound=BaseModel)

OFFLINE_ENGINE = "offline"
# How an output names a model some of whose items its offline engine wrote in the model's place
# (`Asker.engine`), and how a reader of that name finds the share again (`fallback_share`).
_FALLBACK_ENGINE = "{model}, offline fallback for {fell} of {items}: {reason}"
_FALLBACK_SHARE = re.compile(r", offline fallback for (\d+) of (\d+): (.*)$", re.S)


@dataclass(frozen=True)
class FallbackShare:
    """Of an output's items, how many the offline engine wrote in the model's place, and the
    first one's reason."""

    fell: int
    items: int
    reason: str


def fallback_engine(model: str, share: FallbackShare) -> str:
    return _FALLBACK_ENGINE.format(
        model=model, fell=share.fell, items=share.items, reason=share.reason
    )


def fallback_share(engine: str) -> FallbackShare | None:
    """The share an engine name (`fallback_engine`) records; None for a model that wrote every
    item, or the offline engine."""
    found = _FALLBACK_SHARE.search(engine)
    if found is None:
        return None
    return FallbackShare(int(found.group(1)), int(found.group(2)), found.group(3))


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
    # A grader (its reply is a check of another output): any failure of its model, not only an
    # unusable reply, is written by its offline engine, whatever `llm.on_unusable` says, so
    # that a check never blocks the output it grades.
    grades: ClassVar[bool] = False
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
        "prompt once the reply's share of it and the schema are set aside), even cut"
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
