"""The `answers` agent (X-Sum "answer with citations"), and answering every question at once.

A question is answered only from its evidence (typically its three best chunks, possibly from
several papers), every sentence citing its passage with a `[paper_id:page]` marker. When the
passages do not answer it, the answer says so in a fixed sentence rather than guess. Its offline
engine, the question's best evidence sentences, cited, is
`litpipe.extractive.answering.offline_answer`; the reply's checks are in
`litpipe.agents.answering`.

`answer_questions` is the entry point of the asset and the workflows: with a model, all the
questions' calls go in one concurrent batch; in multi-view mode it hands over to MASS-RAG
(`litpipe.agents.massrag`). A model failure (LLMError) is raised, not papered over: an answer
silently written by another engine would misreport what wrote it.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from litpipe import citations
from litpipe.agents import answering, massrag
from litpipe.agents.answering import answer_from, answer_inputs, question_and_passages
from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.extractive import answering as answering_engine
from litpipe.extractive import massrag as massrag_engine
from litpipe.extractive.answering import NO_ANSWER, AnswerInput, AnswerReply, offline_answer
from litpipe.hashing import digest
from litpipe.retrieval import text as retrieval_text
from litpipe.schemas import Answer, AnswerMode, QuestionEvidence

# Every agent that may answer a question (single-view, or the MASS-RAG views with
# their reconciler, or with their candidate answers and comparison):
# a step answering questions needs a model client if any of them is routed to one.
ANSWER_AGENTS = (
    "answers",
    "massrag_summarizer",
    "massrag_extractor",
    "massrag_reasoner",
    "massrag_reconcile",
    "massrag_candidate",
    "massrag_compare",
)

# The agent writing the final answer in each `synthesis.answer_mode`.
FINAL_WRITERS = {
    "single": "answers",
    "multi_view": "massrag_reconcile",
    "multi_view_answers": "massrag_compare",
}


class AnswersAgent(Agent[AnswerInput, AnswerReply]):
    name = "answers"
    reply_tokens = 512
    offline = staticmethod(offline_answer)

    def prompt_values(self, inputs: AnswerInput) -> dict[str, str]:
        return dict(question_and_passages(inputs), no_answer=NO_ANSWER)


def answer_questions(items: list[QuestionEvidence], mode: AnswerMode, asker: Asker) -> list[Answer]:
    """Every question answered from its evidence, in order, as the answer `mode` says."""
    if mode == "multi_view":
        return massrag.answer_multi_view(items, asker)
    if mode == "multi_view_answers":
        return massrag.answer_multi_view_answers(items, asker)
    agent = AnswersAgent()
    batch = answer_inputs(items)
    replies = asker.ask_each(agent, batch)
    engine = asker.engine(agent.name)
    return [
        answer_from(inputs, reply.answer, engine)
        for inputs, reply in zip(batch, replies, strict=True)
    ]


def answers_engine(mode: AnswerMode, asker: Asker) -> str:
    """What writes the final answers in `mode`: `offline` or a model."""
    return asker.engine(FINAL_WRITERS[mode])


def answers_version(mode: AnswerMode, asker: Asker) -> str:
    """Hash of all that decides the answers (the mode, its agents' prompts, schemas and routes,
    and the code turning replies into answers): the code_version of the answers asset."""
    agents_of: dict[AnswerMode, list[Agent[Any, Any]]] = {
        "single": [AnswersAgent()],
        "multi_view": [*massrag.VIEW_AGENTS.values(), massrag.ReconcileAgent()],
        "multi_view_answers": [
            *massrag.VIEW_AGENTS.values(),
            massrag.CandidateAgent(),
            massrag.CompareAgent(),
        ],
    }
    agents = agents_of[mode]
    code = (
        inspect.getsource(module)
        for module in (
            sys.modules[__name__],
            answering,
            massrag,
            answering_engine,
            massrag_engine,
            citations,
            retrieval_text,
        )
    )
    return digest(
        mode,
        *(asker.version(agent) for agent in agents),
        *code,
    )
