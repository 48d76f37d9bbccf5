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

from litpipe.agents.base import BatchClient, Reply, route_of, run_batch, version
from litpipe.agents.question_evidence import passages
from litpipe.agents.question_evidence.debate import DebateAgent, DebateReply, verbatim_quotes
from litpipe.agents.question_evidence.passages import PassageAgent, PassageInput
from litpipe.agents.question_evidence.relevance import RelevanceAgent, RelevanceReply
from litpipe.hashing import digest
from litpipe.llm.errors import LLMError, one_line
from litpipe.llm.prompts import PromptLibrary
from litpipe.retrieval import rerank, text
from litpipe.retrieval.rerank import CrossEncoderReranker, NoReranker, Reranker, fallback, ranked
from litpipe.schemas import RetrievedChunk
from litpipe.settings import Settings

# The rerankers that are agents, named as their agents (and their routes) are.
AGENT_RERANKERS = ("relevance", "debate")


class AgentReranker(ABC, Generic[Reply]):
    """Scores each candidate with an agent's reply; subclasses say what the agent is asked and
    how its reply becomes a score and a reason."""

    name: str
    agent: PassageAgent[Reply]

    def __init__(
        self, settings: Settings, prompts: PromptLibrary, client: BatchClient | None
    ) -> None:
        self.route = route_of(self.agent, settings)
        if not self.route.offline and client is None:
            raise ValueError(
                f"reranker {self.name!r} is routed to model {self.route.model!r} but no LLM "
                "client was given"
            )
        self.settings = settings
        self.prompts = prompts
        self.client = client
        self._version = self.version_for(settings, prompts)

    @classmethod
    def version_for(cls, settings: Settings, prompts: PromptLibrary) -> str:
        """The agent's prompt, schema, engine and route, and the code turning replies into
        scores: known without a client, for the code version of the stage that reranks."""
        scoring_code = (
            inspect.getsource(m) for m in (sys.modules[__name__], passages, rerank, text)
        )
        return f"{cls.name}-{digest(version(cls.agent, settings, prompts), *scoring_code)}"

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
        answers = run_batch(self.agent, asked, self.settings, self.prompts, self.client)
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
    settings: Settings, prompts: PromptLibrary, client: BatchClient | None
) -> Reranker:
    """The reranker `settings.retrieval.reranker` names; `client` may be None when its agent runs
    offline."""
    if settings.retrieval.reranker == "cross-encoder":
        if not settings.retrieval.cross_encoder_model:
            raise ValueError(
                "reranker 'cross-encoder' needs retrieval.cross_encoder_model (a name or path)"
            )
        return CrossEncoderReranker(
            settings.retrieval.cross_encoder_model,
            device=settings.ingest.embed_device,
            batch_size=settings.ingest.embed_batch_size,
        )
    if settings.retrieval.reranker == "relevance":
        return LLMRelevanceReranker(settings, prompts, client)
    if settings.retrieval.reranker == "debate":
        return LLMDebateReranker(settings, prompts, client)
    return NoReranker()


def reranker_version(settings: Settings, prompts: PromptLibrary) -> str:
    """The `version` of the reranker `settings.retrieval.reranker` names, without loading or
    calling it."""
    if settings.retrieval.reranker == "relevance":
        return LLMRelevanceReranker.version_for(settings, prompts)
    if settings.retrieval.reranker == "debate":
        return LLMDebateReranker.version_for(settings, prompts)
    if settings.retrieval.reranker == "cross-encoder" and settings.retrieval.cross_encoder_model:
        return CrossEncoderReranker(settings.retrieval.cross_encoder_model).version
    return NoReranker.version
