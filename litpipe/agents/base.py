"""What an agent is (a prompt file, a reply schema, an offline engine) and how one is run."""

from __future__ import annotations

import inspect
import json
import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar, get_args, get_origin

from pydantic import BaseModel

from litpipe import text as text_helpers
from litpipe.hashing import digest
from litpipe.llm.prompts import PromptLibrary
from litpipe.settings import Route, Settings

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
    replies to many conversations, sent concurrently; and several agents' batches at once."""

    def complete_many_sync(
        self, route: Route, list_of_messages: Sequence[list[dict[str, str]]], schema: type[Schema]
    ) -> list[Schema]: ...

    def complete_batches_sync(self, batches: Sequence[ModelBatch]) -> list[list[BaseModel]]: ...


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


def engine_name(route: Route) -> str:
    """What an output records as its writer: `offline`, or the route's model."""
    return OFFLINE_ENGINE if route.offline else route.model


# Any agent, whatever it reads and replies: callers hash several kinds of agent together.
def version(agent: Agent[Any, Any], settings: Settings, prompts: PromptLibrary) -> str:
    """Hash of all that decides the agent's replies: for the code_version of its asset.

    The effective prompt text, the reply schema, the agent's module and the shared extractive
    helpers (the offline engine), and the route's model and sampling. Not `api_base`: the same
    model served from another address gives the same replies.
    """
    route = settings.route(agent.name)
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
    """The agent's reply: from its offline engine when its route is offline, else from a model."""
    route = settings.route(agent.name)
    if route.offline:
        return agent.offline(inputs)
    return _given(client, agent, route).complete_sync(
        route, agent.messages(inputs, prompts), agent.reply_schema
    )


C = TypeVar("C")


def _given(client: C | None, agent: Agent[Any, Any], route: Route) -> C:
    if client is None:
        raise ValueError(
            f"agent {agent.name!r} is routed to model {route.model!r} but no LLM client was given"
        )
    return client


def run_batch(
    agent: Agent[In, Reply],
    batch: Sequence[In],
    settings: Settings,
    prompts: PromptLibrary,
    client: BatchClient | None,
) -> list[Reply]:
    """The agent's reply to each input, in order: from its offline engine, or from a model in
    one concurrent batch (so the reply cache and the `llm.concurrency` bound apply)."""
    route = settings.route(agent.name)
    if route.offline:
        return [agent.offline(inputs) for inputs in batch]
    model_client = _given(client, agent, route)
    if not batch:
        return []
    conversations = [agent.messages(inputs, prompts) for inputs in batch]
    return model_client.complete_many_sync(route, conversations, agent.reply_schema)


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
    for index, agent in enumerate(agents):
        route = settings.route(agent.name)
        if route.offline or not batch:
            replies[index] = run_batch(agent, batch, settings, prompts, client)
        else:
            _given(client, agent, route)
            conversations = [agent.messages(inputs, prompts) for inputs in batch]
            asked[index] = (route, conversations, agent.reply_schema)
    if asked and client is not None:
        replies.update(zip(asked, client.complete_batches_sync(list(asked.values())), strict=True))
    return [replies[index] for index in range(len(agents))]
