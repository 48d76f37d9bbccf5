"""The `answers` agent (X-Sum "answer with citations"), and answering every question at once.

A question is answered only from its evidence (typically its three best chunks, possibly from
several papers), every sentence citing its passage with a `[paper_id:page]` marker. When the
passages do not answer it, the answer says so in a fixed sentence rather than guess. The
offline engine's evidence sentences and the reply's checks are in `litpipe.agents.answering`.

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
from litpipe.agents.answering import (
    NO_ANSWER,
    AnswerInput,
    AnswerReply,
    answer_from,
    answer_inputs,
    best_sentences,
    cited_text,
    question_and_passages,
)
from litpipe.agents.base import Agent, BatchClient, engine_name, run_batch, version
from litpipe.hashing import digest
from litpipe.llm.prompts import PromptLibrary
from litpipe.retrieval import text as retrieval_text
from litpipe.schemas import Answer, AnswerMode, QuestionEvidence
from litpipe.settings import Settings

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


def offline_answer(inputs: AnswerInput) -> AnswerReply:
    sentences = best_sentences(inputs.question.text, inputs.evidence)
    return AnswerReply(answer=cited_text(sentences))


class AnswersAgent(Agent[AnswerInput, AnswerReply]):
    name = "answers"
    reply_tokens = 512
    offline = staticmethod(offline_answer)

    def prompt_values(self, inputs: AnswerInput) -> dict[str, str]:
        return dict(question_and_passages(inputs), no_answer=NO_ANSWER)


def answer_questions(
    items: list[QuestionEvidence],
    settings: Settings,
    prompts: PromptLibrary,
    client: BatchClient | None,
) -> list[Answer]:
    """Every question answered from its evidence, in order, as `synthesis.answer_mode` says."""
    if settings.synthesis.answer_mode == "multi_view":
        return massrag.answer_multi_view(items, settings, prompts, client)
    if settings.synthesis.answer_mode == "multi_view_answers":
        return massrag.answer_multi_view_answers(items, settings, prompts, client)
    agent = AnswersAgent()
    batch = answer_inputs(items)
    replies = run_batch(agent, batch, settings, prompts, client)
    engine = engine_name(settings.route(agent.name))
    return [
        answer_from(inputs, reply.answer, engine)
        for inputs, reply in zip(batch, replies, strict=True)
    ]


def answers_engine(settings: Settings) -> str:
    """What writes the final answers in the configured mode: `offline` or a model."""
    return engine_name(settings.route(FINAL_WRITERS[settings.synthesis.answer_mode]))


def answers_version(settings: Settings, prompts: PromptLibrary) -> str:
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
    agents = agents_of[settings.synthesis.answer_mode]
    code = (
        inspect.getsource(module)
        for module in (sys.modules[__name__], answering, massrag, citations, retrieval_text)
    )
    return digest(
        settings.synthesis.answer_mode,
        *(version(agent, settings, prompts) for agent in agents),
        *code,
    )
