"""MASS-RAG multi-view answering: three views of a question's evidence, reconciled into one answer.

The `massrag_summarizer` compresses what the passages say about the question, the
`massrag_extractor` copies the spans that bear on it word for word, and the `massrag_reasoner`
draws what follows from the passages taken together (across papers when it can); all three cite
with `[paper_id:page]` markers. `massrag_reconcile` then weighs the three views against the
passages and writes the answer. With a model, the three views of every question are asked as
three concurrent batches at once, then the reconciliations as one batch.

The optional answer agent (`answer_mode = "multi_view_answers"`): instead of one reconciliation
of the three views, `massrag_candidate` writes a candidate answer from each view (one call per
view and question), then `massrag_compare` weighs the three candidates against the passages and
picks the best supported or merges them into the final answer.

Their offline engines, all verbatim, are `litpipe.extractive.massrag`'s: `offline_summarizer`,
`offline_extractor`, `offline_reasoner`, `offline_reconcile`, `offline_candidate` and
`offline_compare`.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from typing import Any

from litpipe.agents.answering import (
    answer_from,
    answer_inputs,
    checked_citations,
    cited_answer,
    question_and_passages,
)
from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent, Reply
from litpipe.extractive.answering import NO_ANSWER, AnswerInput, AnswerReply
from litpipe.extractive.massrag import (
    NO_INFERENCE,
    CandidateInput,
    CompareInput,
    ExtractorReply,
    ReconcileInput,
    ViewReply,
    offline_candidate,
    offline_compare,
    offline_extractor,
    offline_reasoner,
    offline_reconcile,
    offline_summarizer,
)
from litpipe.llm.prompts import fence
from litpipe.schemas import Answer, QuestionEvidence

logger = logging.getLogger(__name__)


def _collapsed(text: str) -> str:
    return " ".join(text.split())


class ViewAgent(Agent[AnswerInput, Reply]):
    """One view of a question's evidence; `view_text` is what the reconciler reads of it."""

    view: str
    nothing: str

    def prompt_values(self, inputs: AnswerInput) -> dict[str, str]:
        return dict(question_and_passages(inputs), nothing=self.nothing)

    @abstractmethod
    def view_text(self, reply: Reply, inputs: AnswerInput) -> str:
        """The reply as cited text."""


class SummarizerAgent(ViewAgent[ViewReply]):
    name = "massrag_summarizer"
    reply_tokens = 512
    view = "summarizer"
    nothing = NO_ANSWER
    offline = staticmethod(offline_summarizer)

    def view_text(self, reply: ViewReply, inputs: AnswerInput) -> str:
        return reply.text


class ExtractorAgent(ViewAgent[ExtractorReply]):
    name = "massrag_extractor"
    reply_tokens = 768
    view = "extractor"
    nothing = NO_ANSWER
    offline = staticmethod(offline_extractor)

    def view_text(self, reply: ExtractorReply, inputs: AnswerInput) -> str:
        """The spans that are words of a passage, each with its marker; a span that is not
        (a paraphrase passed off as a quote) is dropped after a warning."""
        passages = [_collapsed(chunk.text) for chunk in inputs.evidence]
        verbatim = [s for s in reply.spans if any(_collapsed(s.quote) in p for p in passages)]
        if len(verbatim) < len(reply.spans):
            logger.warning(
                "the extractor quoted words no passage holds for question %s; dropped %d span(s)",
                inputs.question.question_id,
                len(reply.spans) - len(verbatim),
            )
        cited = [f"{_collapsed(span.quote)} {span.marker}" for span in verbatim]
        return " ".join(cited) if cited else self.nothing


class ReasonerAgent(ViewAgent[ViewReply]):
    name = "massrag_reasoner"
    reply_tokens = 512
    view = "reasoner"
    nothing = NO_INFERENCE
    offline = staticmethod(offline_reasoner)

    def view_text(self, reply: ViewReply, inputs: AnswerInput) -> str:
        return reply.text


VIEW_AGENTS: dict[str, ViewAgent[Any]] = {
    agent.view: agent for agent in (SummarizerAgent(), ExtractorAgent(), ReasonerAgent())
}


def _fenced(texts: dict[str, str], kind: str) -> dict[str, str]:
    """The prompt's `summarizer`, `extractor` and `reasoner` values: each view's text fenced."""
    return {view: fence(texts[view], kind) for view in VIEW_AGENTS}


class ReconcileAgent(Agent[ReconcileInput, AnswerReply]):
    name = "massrag_reconcile"
    reply_tokens = 512
    offline = staticmethod(offline_reconcile)

    def prompt_values(self, inputs: ReconcileInput) -> dict[str, str]:
        return dict(
            question_and_passages(inputs), **_fenced(inputs.views, "view"), no_answer=NO_ANSWER
        )


def _views_of(
    batch: list[AnswerInput],
    asker: Asker,
) -> list[dict[str, str]]:
    """Each question's three views, by view name, their citations checked: the three views of
    every question asked as three concurrent batches."""
    asked = asker.ask_all(list(VIEW_AGENTS.values()), batch)
    replies = dict(zip(VIEW_AGENTS, asked, strict=True))
    return [
        {
            view: checked_citations(
                agent.view_text(replies[view][index], inputs), inputs, f"the {view}"
            )
            for view, agent in VIEW_AGENTS.items()
        }
        for index, inputs in enumerate(batch)
    ]


def answer_multi_view(
    items: list[QuestionEvidence],
    asker: Asker,
) -> list[Answer]:
    """Every question answered by the three views and their reconciliation, in order."""
    batch = answer_inputs(items)
    views = _views_of(batch, asker)
    reconcile = ReconcileAgent()
    reconciling = [
        ReconcileInput(question=inputs.question, evidence=inputs.evidence, views=found)
        for inputs, found in zip(batch, views, strict=True)
    ]
    answers = asker.ask_each(reconcile, reconciling)
    engine = asker.engine(reconcile.name)
    return [
        answer_from(inputs, reply.answer, engine, found)
        for inputs, reply, found in zip(batch, answers, views, strict=True)
    ]


# The optional answer agent: a candidate answer from each view, then a comparison.


class CandidateAgent(Agent[CandidateInput, AnswerReply]):
    name = "massrag_candidate"
    reply_tokens = 512
    offline = staticmethod(offline_candidate)

    def prompt_values(self, inputs: CandidateInput) -> dict[str, str]:
        return dict(
            question_and_passages(inputs),
            view=inputs.view,
            view_text=fence(inputs.view_text, "view"),
            no_answer=NO_ANSWER,
        )


class CompareAgent(Agent[CompareInput, AnswerReply]):
    name = "massrag_compare"
    reply_tokens = 512
    offline = staticmethod(offline_compare)

    def prompt_values(self, inputs: CompareInput) -> dict[str, str]:
        return dict(
            question_and_passages(inputs),
            **_fenced(inputs.candidates, "candidate"),
            no_answer=NO_ANSWER,
        )


def answer_multi_view_answers(
    items: list[QuestionEvidence],
    asker: Asker,
) -> list[Answer]:
    """Every question answered by the three views, a candidate answer written from each, and
    the comparison of the candidates, in order."""
    batch = answer_inputs(items)
    views = _views_of(batch, asker)
    candidate = CandidateAgent()
    writing = [
        CandidateInput(
            question=inputs.question, evidence=inputs.evidence, view=view, view_text=text
        )
        for inputs, found in zip(batch, views, strict=True)
        for view, text in found.items()
    ]
    # One batch of every question's three candidates: all in flight together.
    written = iter(asker.ask_each(candidate, writing))
    candidates = [
        {
            view: cited_answer(next(written).answer, inputs, f"the {view}'s candidate")
            for view in found
        }
        for inputs, found in zip(batch, views, strict=True)
    ]
    compare = CompareAgent()
    comparing = [
        CompareInput(question=inputs.question, evidence=inputs.evidence, candidates=found)
        for inputs, found in zip(batch, candidates, strict=True)
    ]
    answers = asker.ask_each(compare, comparing)
    engine = asker.engine(compare.name)
    return [
        answer_from(inputs, reply.answer, engine, found, offered)
        for inputs, reply, found, offered in zip(batch, answers, views, candidates, strict=True)
    ]
