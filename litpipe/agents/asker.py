"""Agents bound to their models, once per step: the `Asker`.

A step (an asset's run, a workflow, an evaluation) makes one `Asker` from its model settings,
its prompts and its client. Every agent it runs is then asked through it: the route of each
agent is resolved once and reused for the call, the reply's fallbacks, the output's engine name
and the code version; an agent routed offline runs its offline extractive engine, and one whose
model reply cannot be used (or whose model is unreachable) is written offline or fails, as
`llm.on_unusable` says. An item whose prompt proved too long for a window the client learnt only
while asking (the server stated it, refusing a request) is fitted to that window and asked once
more.

    asker = Asker(settings.llm, client)
    reply = asker.ask(TldrAgent(), TldrInput(title=..., abstract=...))
    asker.engine(TldrAgent())  # "offline", the model, or the model with its fallbacks
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from litpipe.agents.base import (
    OFFLINE_ENGINE,
    Agent,
    FallbackShare,
    ModelBatch,
    ModelClient,
    WindowedClient,
    fallback_engine,
    fitted_messages,
)
from litpipe.agents.code_versions import imported_code_version
from litpipe.hashing import digest
from litpipe.llm.errors import (
    ContextOverflowError,
    LLMError,
    ModelUnreachableError,
    ReplyValidationError,
    one_line,
)
from litpipe.llm.prompts import PromptLibrary
from litpipe.settings import DEFAULT_REPLY_TOKENS, LLMSettings, Route

logger = logging.getLogger(__name__)

In = TypeVar("In", bound=BaseModel)
Reply = TypeVar("Reply", bound=BaseModel)

# An agent, or an agent's name where only its route is wanted (an engine to name, a step's
# pool): the name's route then has the default reply size.
AgentOrName = Agent[Any, Any] | str


@dataclass
class _Fallbacks:
    items: int
    reasons: list[str]


class Asker:
    """What a step's agents are asked through: their routes (resolved once each), the prompts,
    the client (None when every agent the step runs is offline) and what an unusable reply
    becomes. The client is only needed by an agent routed to a model."""

    def __init__(
        self,
        llm: LLMSettings,
        client: ModelClient | Any | None = None,
        prompts: PromptLibrary | None = None,
    ) -> None:
        self.llm = llm
        # Any of the clients' protocols: a scripted test client may answer one way of asking.
        self.client = client
        self.prompts = prompts if prompts is not None else PromptLibrary(llm.prompts_dir)
        self._routes: dict[tuple[str, int], Route] = {}
        # Per agent, its last run's fallbacks on this thread (what `engine` reports): the
        # agent's output is named right after its run, on the thread that ran it.
        self._thread = threading.local()

    def route(self, agent: AgentOrName) -> Route:
        """The agent's route, its max_tokens the agent's own reply size where the settings set
        none; resolved once per asker."""
        if isinstance(agent, str):
            name, reply_tokens = agent, DEFAULT_REPLY_TOKENS
        else:
            name, reply_tokens = agent.name, agent.reply_tokens
        key = (name, reply_tokens)
        if key not in self._routes:
            self._routes[key] = self.llm.route(name, reply_tokens)
        return self._routes[key]

    def offline(self, agent: AgentOrName) -> bool:
        return self.route(agent).offline

    def any_model(self, agents: Sequence[AgentOrName]) -> bool:
        """Whether one of `agents` is routed to a model (and not only to the offline engine)."""
        return any(not self.offline(agent) for agent in agents)

    def engine(self, agent: AgentOrName) -> str:
        """What an output records as its writer: `offline`, or the route's model, with the items
        of the agent's last run on this thread that its offline engine wrote in the model's
        place ("gpt-4o-mini, offline fallback for 2 of 9: <why>")."""
        route = self.route(agent)
        if route.offline:
            return OFFLINE_ENGINE
        fallbacks = self._fallbacks().get(route.agent)
        if fallbacks is None or not fallbacks.reasons:
            return route.model
        share = FallbackShare(len(fallbacks.reasons), fallbacks.items, fallbacks.reasons[0])
        return fallback_engine(route.model, share)

    def version(self, agent: Agent[Any, Any]) -> str:
        """Hash of all that decides the agent's replies: for the code_version of its asset.

        The effective prompt text, the reply schema, the agent's module with the modules it
        imports (its offline engine and what that uses: `imported_code_version`), and the route's
        model and sampling. Not `api_base`: the same model served from another address gives
        the same replies.
        """
        route = self.route(agent)
        return digest(
            self.prompts.digest(agent.name),
            json.dumps(agent.reply_schema.model_json_schema(), sort_keys=True),
            imported_code_version(type(agent).__module__),
            route.model_dump_json(include={"model", "temperature", "max_tokens"}),
        )

    def ask(self, agent: Agent[In, Reply], inputs: In) -> Reply:
        """The agent's reply: from its offline engine when its route is offline, else from a
        model (the item written offline where the model's reply cannot be used, as
        `llm.on_unusable` says)."""
        route = self.route(agent)
        if route.offline:
            return agent.offline(inputs)
        client = self._client(agent, route)
        self._fallbacks()[agent.name] = _Fallbacks(items=1, reasons=[])
        reply: Reply | LLMError
        sent: dict[int, list[dict[str, str]]] = {}
        try:
            sent[0] = fitted_messages(agent, inputs, self.prompts, client, route)
            reply = client.complete_sync(route, sent[0], agent.reply_schema)
        except LLMError as error:
            reply = error
        (reply,) = self._asked_again(agent, route, [inputs], sent, [reply])
        return self._settled(agent, inputs, reply, route)

    def ask_each(self, agent: Agent[In, Reply], batch: Sequence[In]) -> list[Reply]:
        """The agent's reply to each input, in order: from its offline engine, or from a model
        in one concurrent batch (so the reply cache and the `llm.concurrency` bound apply), each
        item whose reply cannot be used settled as in `ask`."""
        route = self.route(agent)
        if route.offline:
            return [agent.offline(inputs) for inputs in batch]
        client = self._client(agent, route)
        self._fallbacks()[agent.name] = _Fallbacks(items=len(batch), reasons=[])
        if not batch:
            return []
        conversations, unfitted = self._conversations(agent, batch, route)
        asked = (
            client.complete_each_sync(route, conversations, agent.reply_schema)
            if conversations
            else []
        )
        replies = _with_unfitted(asked, unfitted, len(batch))
        replies = self._asked_again(agent, route, batch, _sent(conversations, unfitted), replies)
        return [
            self._settled(agent, inputs, reply, route)
            for inputs, reply in zip(batch, replies, strict=True)
        ]

    def ask_all(self, agents: Sequence[Agent[In, Any]], batch: Sequence[In]) -> list[list[Any]]:
        """Each agent's replies to the same inputs, as `ask_each` gives them; the model calls
        of all the agents go at once, and the caller waits for them in one wait (which a stop
        ends: no thread is left waiting on a reply)."""
        replies: dict[int, list[Any]] = {}
        asked: dict[int, ModelBatch] = {}
        unfitted: dict[int, dict[int, LLMError]] = {}
        client: Any = None
        for index, agent in enumerate(agents):
            route = self.route(agent)
            if route.offline or not batch:
                replies[index] = self.ask_each(agent, batch)
                continue
            client = self._client(agent, route)
            self._fallbacks()[agent.name] = _Fallbacks(items=len(batch), reasons=[])
            conversations, unfitted[index] = self._conversations(agent, batch, route)
            asked[index] = (route, conversations, agent.reply_schema)
        if asked:
            answered = client.complete_batches_sync(list(asked.values()))
            for index, found in zip(asked, answered, strict=True):
                agent, (route, fitted, _) = agents[index], asked[index]
                settled = self._asked_again(
                    agent,
                    route,
                    batch,
                    _sent(fitted, unfitted[index]),
                    _with_unfitted(found, unfitted[index], len(batch)),
                )
                replies[index] = [
                    self._settled(agent, inputs, reply, route)
                    for inputs, reply in zip(batch, settled, strict=True)
                ]
        return [replies[index] for index in range(len(agents))]

    def _client(self, agent: Agent[Any, Any], route: Route) -> Any:
        if self.client is None:
            raise ValueError(
                f"agent {agent.name!r} is routed to model {route.model!r} but no LLM client was "
                "given"
            )
        return self.client

    def _fallbacks(self) -> dict[str, _Fallbacks]:
        if not hasattr(self._thread, "fallbacks"):
            self._thread.fallbacks = {}
        found: dict[str, _Fallbacks] = self._thread.fallbacks
        return found

    def _conversations(
        self, agent: Agent[In, Any], batch: Sequence[In], route: Route
    ) -> tuple[list[list[dict[str, str]]], dict[int, LLMError]]:
        """Each input's fitted messages; an input that cannot be fitted has its error instead."""
        conversations: list[list[dict[str, str]]] = []
        unfitted: dict[int, LLMError] = {}
        for index, inputs in enumerate(batch):
            try:
                conversations.append(
                    fitted_messages(agent, inputs, self.prompts, self.client, route)
                )
            except ContextOverflowError as error:
                unfitted[index] = error
        return conversations, unfitted

    def _asked_again(
        self,
        agent: Agent[In, Any],
        route: Route,
        batch: Sequence[In],
        sent: dict[int, list[dict[str, str]]],
        replies: list[Any],
    ) -> list[Any]:
        """The replies, each item refused as too long for a window the client learnt while
        asking (the server stated it refusing a request) asked once more, its prompt fitted to
        that window; an item its window cannot change (`sent`: its messages) keeps its error."""
        again: dict[int, list[dict[str, str]]] = {}
        for index, reply in enumerate(replies):
            if not isinstance(reply, ContextOverflowError) or reply.window is None:
                continue
            try:
                refitted = fitted_messages(agent, batch[index], self.prompts, self.client, route)
            except ContextOverflowError as error:
                replies[index] = error
                continue
            if refitted != sent.get(index):
                again[index] = refitted
        if again:
            client = self._client(agent, route)
            answered = client.complete_each_sync(route, list(again.values()), agent.reply_schema)
            for index, reply in zip(again, answered, strict=True):
                replies[index] = reply
        return replies

    def _settled(
        self, agent: Agent[In, Reply], inputs: In, reply: Reply | LLMError, route: Route
    ) -> Reply:
        """The reply, or, for an item whose model reply cannot be used, the offline engine's
        (recorded and counted) where `llm.on_unusable` is `offline`; any other failure is
        raised. A grader's every failure is written offline (`Agent.grades`)."""
        if not isinstance(reply, LLMError):
            return reply
        unusable = isinstance(
            reply, ReplyValidationError | ContextOverflowError | ModelUnreachableError
        )
        if not agent.grades and (not unusable or self.llm.on_unusable == "fail"):
            raise reply
        reason = one_line(str(reply), 200)
        # An unreachable model was said once, for all its items (`litpipe.llm.client.routes`).
        level = logging.DEBUG if isinstance(reply, ModelUnreachableError) else logging.WARNING
        logger.log(level, "%s: offline fallback for one item: %s", agent.name, reason)
        self._fallbacks()[agent.name].reasons.append(reason)
        if isinstance(self.client, WindowedClient):
            self.client.record_fallback(route, reason)
        return agent.offline(inputs)


def _sent(
    conversations: Sequence[list[dict[str, str]]], unfitted: dict[int, LLMError]
) -> dict[int, list[dict[str, str]]]:
    """Each fitted input's messages, by the input's place in its batch."""
    places = (index for index in itertools.count() if index not in unfitted)
    return dict(zip(places, conversations, strict=False))


def _with_unfitted(replies: Sequence[Any], unfitted: dict[int, LLMError], size: int) -> list[Any]:
    """The replies to the fitted inputs, with each unfitted input's error in its place."""
    asked = iter(replies)
    return [unfitted[index] if index in unfitted else next(asked) for index in range(size)]
