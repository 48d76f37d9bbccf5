"""The rerankers that are agents (relevance and debate scoring), and the choice of a reranker.

An agent reranker asks its agent about every candidate at once: offline, its engine answers each;
with a model, all the calls go through the client's concurrent path (`complete_many_sync`), so
the reply cache and the `llm.concurrency` bound apply. Any model failure for the batch (refused
key, bad request, invalid replies, retries exhausted, budget) logs a warning and keeps the fused
order: reranking improves evidence, its absence must not fail a question.
"""

from __future__ import annotations

import inspect
import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Generic

from litpipe.agents.asker import Asker
from litpipe.agents.base import Reply
from litpipe.agents.question_evidence import passages
from litpipe.agents.question_evidence.debate import DebateAgent, verbatim_quotes
from litpipe.agents.question_evidence.passages import PassageAgent
from litpipe.agents.question_evidence.relevance import RelevanceAgent
from litpipe.extractive.debate import DebateReply
from litpipe.extractive.passages import PassageInput
from litpipe.extractive.relevance import RelevanceReply
from litpipe.hashing import digest
from litpipe.llm.errors import LLMError, one_line
from litpipe.retrieval import rerank, text
from litpipe.retrieval.rerank import CrossEncoderReranker, NoReranker, Reranker, fallback, ranked
from litpipe.schemas import RetrievedChunk
from litpipe.settings import RerankerName

# The rerankers that are agents, named as their agents (and their routes) are.
AGENT_RERANKERS = ("relevance", "debate")


class AgentReranker(ABC, Generic[Reply]):
    """Scores each candidate with an agent's reply; subclasses say what the agent is asked and
    how its reply becomes a score and a reason."""

    name: str
    agent: PassageAgent[Reply]

    def __init__(self, asker: Asker) -> None:
        self.route = asker.route(self.agent)
        if not self.route.offline and asker.client is None:
            raise ValueError(
                f"reranker {self.name!r} is routed to model {self.route.model!r} but no LLM "
                "client was given"
            )
        self.asker = asker
        self._version = self.version_for(asker)

    @classmethod
    def version_for(cls, asker: Asker) -> str:
        """The agent's prompt, schema, engine and route, and the code turning replies into
        scores: known without a client, for the code version of the stage that reranks."""
        scoring_code = (
            inspect.getsource(m) for m in (sys.modules[__name__], passages, rerank, text)
        )
        return f"{cls.name}-{digest(asker.version(cls.agent), *scoring_code)}"

    @property
    def version(self) -> str:
        return self._version

    def inputs(self, query: str, candidate: RetrievedChunk) -> PassageInput:
        return PassageInput(query=query, passage_id=candidate.chunk_id, passage=candidate.text)

    @abstractmethod
    def judgement(self, reply: Reply) -> tuple[float, str]:
        """The reply's score (higher is better) and a short reason."""

    def reviewed(self, inputs: PassageInput, reply: Reply) -> Reply:
        """The reply as used: what it holds that its inputs contradict, removed."""
        return reply

    def replies(self, query: str, candidates: Sequence[RetrievedChunk]) -> list[Reply]:
        """The agent's reply about each candidate, in order (a candidate whose reply cannot be
        used scored offline, as `llm.on_unusable` says); LLMError if a model call fails."""
        asked = [self.inputs(query, candidate) for candidate in candidates]
        answers = self.asker.ask_each(self.agent, asked)
        return [self.reviewed(one, answer) for one, answer in zip(asked, answers, strict=True)]

    def rerank(self, query: str, candidates: list[RetrievedChunk]) -> list[RetrievedChunk]:
        if not candidates:
            return []
        try:
            replies = self.replies(query, candidates)
        except LLMError as error:
            return fallback(self.name, candidates, one_line(str(error)))
        judgements = [self.judgement(reply) for reply in replies]
        return ranked(
            candidates,
            [score for score, _ in judgements],
            [reason for _, reason in judgements],
        )


class LLMRelevanceReranker(AgentReranker[RelevanceReply]):
    """Relevance scoring, 1 to 10 with a one-sentence reason."""

    name = "relevance"
    agent = RelevanceAgent()

    def judgement(self, reply: RelevanceReply) -> tuple[float, str]:
        return float(reply.score), reply.reason


class LLMDebateReranker(AgentReranker[DebateReply]):
    """Debate scoring: the probability, 1 to 100, after arguments for and against."""

    name = "debate"
    agent = DebateAgent()

    def reviewed(self, inputs: PassageInput, reply: DebateReply) -> DebateReply:
        return verbatim_quotes(reply, inputs.passage)

    def judgement(self, reply: DebateReply) -> tuple[float, str]:
        sides = [
            f"{side}: {arguments[0].rstrip('.')}"
            for side, arguments in (
                ("for", reply.arguments_for),
                ("against", reply.arguments_against),
            )
            if arguments
        ]
        return float(reply.probability), "; ".join(sides) or f"probability {reply.probability}%"


def reranker_for(
    name: RerankerName,
    asker: Asker,
    cross_encoder_model: str | None = None,
    device: str = "cpu",
    batch_size: int = 32,
) -> Reranker:
    """The reranker `name`d (`retrieval.reranker`); an agent reranker asks through `asker`,
    whose client may be None when its agent runs offline."""
    if name == "cross-encoder":
        if not cross_encoder_model:
            raise ValueError(
                "reranker 'cross-encoder' needs retrieval.cross_encoder_model (a name or path)"
            )
        return CrossEncoderReranker(cross_encoder_model, device=device, batch_size=batch_size)
    if name == "relevance":
        return LLMRelevanceReranker(asker)
    if name == "debate":
        return LLMDebateReranker(asker)
    return NoReranker()


def reranker_version(name: RerankerName, asker: Asker, cross_encoder_model: str | None) -> str:
    """The `version` of the reranker `name`d, without loading or calling it."""
    if name == "relevance":
        return LLMRelevanceReranker.version_for(asker)
    if name == "debate":
        return LLMDebateReranker.version_for(asker)
    if name == "cross-encoder" and cross_encoder_model:
        return CrossEncoderReranker(cross_encoder_model).version
    return NoReranker.version
