"""MASS-RAG multi-view answering: three views of a question's evidence, reconciled into one answer.

The `massrag_summarizer` compresses what the passages say about the question, the
`massrag_extractor` copies the spans that bear on it word for word, and the `massrag_reasoner`
draws what follows from the passages taken together (across papers when it can); all three cite
with `[paper_id:page]` markers. `massrag_reconcile` then weighs the three views against the
passages and writes the answer. With a model, the three views of every question are asked as
three concurrent batches at once, then the reconciliations as one batch.

Offline engines, all verbatim: the summarizer takes the best sentence of each passage, the
extractor the sentences holding most of the question's terms, the reasoner pairs of sentences
of different passages (different papers first) that share terms, written "<A> [m1] <B> [m2]";
the reconciler keeps the views' sentences, one of any near-duplicates, ordered by how many views
hold them, at most four, each with its marker.

The optional answer agent (`answer_mode = "multi_view_answers"`): instead of one reconciliation
of the three views, `massrag_candidate` writes a candidate answer from each view (one call per
view and question), then `massrag_compare` weighs the three candidates against the passages and
picks the best supported or merges them into the final answer. Offline, a candidate is the
passage sentences its view holds, best first (the view's own cited text when it holds none
verbatim, as a model's view may); the comparison picks the candidate best supported by the
passages: the most question terms held by sentences whose words its cited passages hold.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from itertools import combinations
from typing import Any

from pydantic import BaseModel, Field

from litpipe import citations
from litpipe.agents.answering import (
    NO_ANSWER,
    AnswerInput,
    AnswerReply,
    EvidenceSentence,
    answer_from,
    answer_inputs,
    checked_citations,
    cited_answer,
    cited_text,
    distinct,
    evidence_sentences,
    question_and_passages,
)
from litpipe.agents.base import Agent, BatchClient, Reply, engine_name, run_batch, run_batches
from litpipe.citations import chunk_marker
from litpipe.llm.prompts import PromptLibrary, fence
from litpipe.retrieval.text import content_terms, tokenize
from litpipe.schemas import Answer, QuestionEvidence
from litpipe.settings import Settings
from litpipe.text import cited_sentences, strip_markers

logger = logging.getLogger(__name__)

NO_INFERENCE = "The retrieved passages support no inference across them."
EXTRACTED_SPANS = 3
INFERENCE_PAIRS = 2
# Two sentences sharing fewer terms than this are not about the same thing.
MIN_SHARED_TERMS = 2
# A link between two papers says more than one between two passages of the same paper.
CROSS_PAPER_WEIGHT = 2.0
RECONCILED_SENTENCES = 4
# A candidate answer is as long as a single-view answer (two to four sentences).
CANDIDATE_SENTENCES = 3


class ViewReply(BaseModel):
    text: str = Field(min_length=1, description="The view, citing as [paper_id:page].")


class ExtractedSpan(BaseModel):
    marker: str = Field(description="The [paper_id:page] of the passage it is copied from.")
    quote: str = Field(min_length=1, description="Words copied exactly from that passage.")


class ExtractorReply(BaseModel):
    spans: list[ExtractedSpan]


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

    def offline(self, inputs: AnswerInput) -> ViewReply:
        """The best sentence of each passage that holds any of the question's terms."""
        best: dict[int, EvidenceSentence] = {}
        for sentence in evidence_sentences(inputs.question.text, inputs.evidence):
            kept = best.get(sentence.rank)
            if sentence.coverage > 0 and (kept is None or sentence.coverage > kept.coverage):
                best[sentence.rank] = sentence
        chosen = distinct([best[rank] for rank in sorted(best)], len(best))
        return ViewReply(text=cited_text(chosen, self.nothing))

    def view_text(self, reply: ViewReply, inputs: AnswerInput) -> str:
        return reply.text


class ExtractorAgent(ViewAgent[ExtractorReply]):
    name = "massrag_extractor"
    reply_tokens = 768
    view = "extractor"
    nothing = NO_ANSWER

    def offline(self, inputs: AnswerInput) -> ExtractorReply:
        """The sentences holding the largest share of the question's terms, wherever they are."""
        relevant = [
            s for s in evidence_sentences(inputs.question.text, inputs.evidence) if s.coverage > 0
        ]
        ranked = sorted(relevant, key=lambda s: -s.coverage)
        return ExtractorReply(
            spans=[
                ExtractedSpan(marker=chunk_marker(s.chunk), quote=s.text)
                for s in distinct(ranked, EXTRACTED_SPANS)
            ]
        )

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


def _linked_pairs(inputs: AnswerInput) -> list[tuple[EvidenceSentence, EvidenceSentence]]:
    """Pairs of sentences of different passages that share terms, one of them bearing on the
    question: the most shared terms and question coverage first, links across papers preferred."""
    scored: list[tuple[float, EvidenceSentence, EvidenceSentence]] = []
    for first, second in combinations(evidence_sentences(inputs.question.text, inputs.evidence), 2):
        shared = first.terms & second.terms
        if (
            first.chunk.chunk_id == second.chunk.chunk_id
            or len(shared) < MIN_SHARED_TERMS
            or first.coverage + second.coverage == 0
        ):
            continue
        weight = CROSS_PAPER_WEIGHT if first.chunk.paper_id != second.chunk.paper_id else 1.0
        scored.append((len(shared) * (first.coverage + second.coverage) * weight, first, second))
    # sorted is stable: equal scores keep the evidence order.
    return [(first, second) for _, first, second in sorted(scored, key=lambda item: -item[0])]


class ReasonerAgent(ViewAgent[ViewReply]):
    name = "massrag_reasoner"
    reply_tokens = 512
    view = "reasoner"
    nothing = NO_INFERENCE

    def offline(self, inputs: AnswerInput) -> ViewReply:
        """The best linked pairs of sentences, side by side, no sentence used twice."""
        used: set[str] = set()
        written: list[str] = []
        for first, second in _linked_pairs(inputs):
            if len(written) == INFERENCE_PAIRS:
                break
            if first.text in used or second.text in used or first.text == second.text:
                continue
            used.update((first.text, second.text))
            written.append(f"{first.cited} {second.cited}")
        return ViewReply(text=" ".join(written) if written else self.nothing)

    def view_text(self, reply: ViewReply, inputs: AnswerInput) -> str:
        return reply.text


VIEW_AGENTS: dict[str, ViewAgent[Any]] = {
    agent.view: agent for agent in (SummarizerAgent(), ExtractorAgent(), ReasonerAgent())
}


class ReconcileInput(AnswerInput):
    views: dict[str, str] = Field(description="Each view's cited text, by view name.")


def offline_reconcile(inputs: ReconcileInput) -> AnswerReply:
    """The views' sentences, those more views hold first, one of any near-duplicates."""
    views = [_collapsed(text) for text in inputs.views.values()]

    def support(sentence: EvidenceSentence) -> int:
        return sum(sentence.cited in view for view in views)

    held = [s for s in evidence_sentences(inputs.question.text, inputs.evidence) if support(s) > 0]
    ranked = sorted(held, key=lambda s: (-support(s), -s.score))
    return AnswerReply(answer=cited_text(distinct(ranked, RECONCILED_SENTENCES)))


class ReconcileAgent(Agent[ReconcileInput, AnswerReply]):
    name = "massrag_reconcile"
    reply_tokens = 512
    offline = staticmethod(offline_reconcile)

    def prompt_values(self, inputs: ReconcileInput) -> dict[str, str]:
        return dict(
            question_and_passages(inputs),
            summarizer=fence(inputs.views["summarizer"], "view"),
            extractor=fence(inputs.views["extractor"], "view"),
            reasoner=fence(inputs.views["reasoner"], "view"),
            no_answer=NO_ANSWER,
        )


def _views_of(
    batch: list[AnswerInput],
    settings: Settings,
    prompts: PromptLibrary,
    client: BatchClient | None,
) -> list[dict[str, str]]:
    """Each question's three views, by view name, their citations checked: the three views of
    every question asked as three concurrent batches."""
    asked = run_batches(list(VIEW_AGENTS.values()), batch, settings, prompts, client)
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
    settings: Settings,
    prompts: PromptLibrary,
    client: BatchClient | None,
) -> list[Answer]:
    """Every question answered by the three views and their reconciliation, in order."""
    batch = answer_inputs(items)
    views = _views_of(batch, settings, prompts, client)
    reconcile = ReconcileAgent()
    reconciling = [
        ReconcileInput(question=inputs.question, evidence=inputs.evidence, views=found)
        for inputs, found in zip(batch, views, strict=True)
    ]
    answers = run_batch(reconcile, reconciling, settings, prompts, client)
    engine = engine_name(settings.route(reconcile.name))
    return [
        answer_from(inputs, reply.answer, engine, found)
        for inputs, reply, found in zip(batch, answers, views, strict=True)
    ]


# The optional answer agent: a candidate answer from each view, then a comparison.


class CandidateInput(AnswerInput):
    view: str = Field(description="The view the candidate is written from.")
    view_text: str = Field(description="That view's cited text.")


def offline_candidate(inputs: CandidateInput) -> AnswerReply:
    """The passage sentences the view holds, best first; the view itself when it holds none
    word for word (a model's paraphrase), and the fixed sentence when it has nothing to say."""
    view = _collapsed(inputs.view_text)
    held = [
        s
        for s in evidence_sentences(inputs.question.text, inputs.evidence)
        if s.coverage > 0 and s.cited in view
    ]
    if held:
        # sorted is stable: equal scores keep the evidence order.
        ranked = sorted(held, key=lambda s: -s.score)
        return AnswerReply(answer=cited_text(distinct(ranked, CANDIDATE_SENTENCES)))
    silent = view in (NO_ANSWER, NO_INFERENCE) or not citations.citations(view, inputs.evidence)[0]
    return AnswerReply(answer=NO_ANSWER if silent else view)


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


class CompareInput(AnswerInput):
    candidates: dict[str, str] = Field(description="Each view's candidate answer, by view name.")


def passage_support(candidate: str, inputs: AnswerInput) -> float:
    """How well the passages bear out a candidate: over its sentences, the share of the
    question's terms each holds times the share of its own terms its cited passages hold (a
    sentence citing nothing, or nothing given, counts for nothing)."""
    wanted = content_terms(inputs.question.text)
    if not wanted:
        return 0.0
    by_chunk = {chunk.chunk_id: chunk for chunk in inputs.evidence}
    support = 0.0
    for sentence in cited_sentences(candidate):
        resolved, _ = citations.citations(sentence, inputs.evidence)
        cited_terms = {
            term
            for citation in resolved
            for chunk_id in citation.chunk_ids
            for term in tokenize(by_chunk[chunk_id].text)
        }
        terms = set(tokenize(strip_markers(sentence)))
        if not terms or not cited_terms:
            continue
        support += len(terms & wanted) / len(wanted) * len(terms & cited_terms) / len(terms)
    return support


def offline_compare(inputs: CompareInput) -> AnswerReply:
    """The candidate best supported by the passages (the first in view order on a tie); the
    fixed sentence when none is supported at all."""
    scored = [
        (passage_support(text, inputs), text)
        for text in inputs.candidates.values()
        if text != NO_ANSWER
    ]
    best = max(scored, key=lambda item: item[0], default=(0.0, NO_ANSWER))
    return AnswerReply(answer=best[1] if best[0] > 0 else NO_ANSWER)


class CompareAgent(Agent[CompareInput, AnswerReply]):
    name = "massrag_compare"
    reply_tokens = 512
    offline = staticmethod(offline_compare)

    def prompt_values(self, inputs: CompareInput) -> dict[str, str]:
        return dict(
            question_and_passages(inputs),
            summarizer=fence(inputs.candidates["summarizer"], "candidate"),
            extractor=fence(inputs.candidates["extractor"], "candidate"),
            reasoner=fence(inputs.candidates["reasoner"], "candidate"),
            no_answer=NO_ANSWER,
        )


def answer_multi_view_answers(
    items: list[QuestionEvidence],
    settings: Settings,
    prompts: PromptLibrary,
    client: BatchClient | None,
) -> list[Answer]:
    """Every question answered by the three views, a candidate answer written from each, and
    the comparison of the candidates, in order."""
    batch = answer_inputs(items)
    views = _views_of(batch, settings, prompts, client)
    candidate = CandidateAgent()
    writing = [
        CandidateInput(
            question=inputs.question, evidence=inputs.evidence, view=view, view_text=text
        )
        for inputs, found in zip(batch, views, strict=True)
        for view, text in found.items()
    ]
    # One batch of every question's three candidates: all in flight together.
    written = iter(run_batch(candidate, writing, settings, prompts, client))
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
    answers = run_batch(compare, comparing, settings, prompts, client)
    engine = engine_name(settings.route(compare.name))
    return [
        answer_from(inputs, reply.answer, engine, found, offered)
        for inputs, reply, found, offered in zip(batch, answers, views, candidates, strict=True)
    ]
