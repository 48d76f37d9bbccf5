"""`collection_answer`: a reader's question answered from a whole collection.

The question is searched among the collection's chunks as a paper's questions are
(`question_evidence`): hybrid candidates fused by RRF, MMR, the reranker in force, the best
ANSWER_PASSAGES kept. The answer is written from them by the agents `synthesis.answer_mode`
names, as per-paper answers are: `single`, the `query_answer` agent (the long-form,
multi-paper answer); `multi_view`, MASS-RAG's three views and their reconciliation;
`multi_view_answers`, the views' candidate answers and their comparison. Every marker that
resolves to no passage given is removed (`answering.answer_from`).

The answer is declined, NOT_ANSWERED with no citation and the nearest passages listed, when the
writer says the passages do not answer (`NO_ANSWER`), when the writer is the offline engine and
no passage holds OFFLINE_LEAST_COVERAGE of the question's terms, when nothing it wrote cites a
passage, or, once the support check has graded it (`with_grades`), when no sentence is supported
by its passages: a confident answer from unrelated text is what this refuses to write.

Runs without Dagster:

    retriever = HybridRetriever(store, embedder, collection, index_dir, papers=members)
    search = collection_search(retriever, NoReranker(), settings.retrieval)
    answer = answer_question(request, search(request.question), "single", asker)
    result = collection_answer(request, answer, members, "single", titles)
    grades = grading.grade_output(result.text, cited_passages(...), grading, asker)
    result = with_grades(result, grades)
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import ValidationError

from litpipe.agents.answers import ANSWER_AGENTS, AnswersAgent, answers_version
from litpipe.agents.asker import Asker
from litpipe.agents.base import OFFLINE_ENGINE
from litpipe.agents.massrag import answer_multi_view, answer_multi_view_answers
from litpipe.agents.query_answer import QueryAnswerAgent, answer_queries
from litpipe.extractive.answering import NO_ANSWER
from litpipe.extractive.query_answer import QueryAnswerInput
from litpipe.hashing import digest
from litpipe.retrieval.rerank import term_coverage
from litpipe.schemas import (
    NOT_ANSWERED,
    Answer,
    AnswerMode,
    CollectionAnswer,
    CollectionAnswerRequest,
    OutputGrades,
    Question,
    QuestionEvidence,
    RetrievedChunk,
)
from litpipe.settings import RetrievalSettings
from litpipe.validation import validation_problems

if TYPE_CHECKING:
    from litpipe.retrieval.hybrid import HybridRetriever
    from litpipe.retrieval.rerank import Reranker

# Every agent that may write a collection answer (any answer mode): a step answering needs a
# model client if any of them is routed to one.
COLLECTION_ANSWER_AGENTS = (
    QueryAnswerAgent.name,
    *(agent for agent in ANSWER_AGENTS if agent != AnswersAgent.name),
)
# Passages an answer is written from: a question of a collection draws on several papers
# (ScholarQA's expert answers cite two to ten), where a paper's own question needs three.
ANSWER_PASSAGES = 8
# The `query_answer` agent's word budget: ScholarQA's expert answers run to some 240 words.
ANSWER_WORDS = 240
# The offline engine copies whichever sentences share a term with the question, so a question
# the collection does not treat still gets sentences that are verbatim, hence "supported": it
# answers only where a passage holds this share of the question's content terms. (On the
# bundled biology papers, a question one paper answers has a passage holding 0.7 to 0.9 of
# them; questions on other subjects, 0.2 to 0.4.) A model judges relevance itself.
OFFLINE_LEAST_COVERAGE = 0.5
# The passages of the collection that best answer a text, best first.
Search = Callable[[str], list[RetrievedChunk]]


class CollectionAnswerError(ValueError):
    """A request that cannot be served (an empty or too long question, an unknown collection,
    one with no embedded paper): the message says what is wrong, and nothing is written."""


def request_for(collection: str, question: str) -> CollectionAnswerRequest:
    """The request, or a CollectionAnswerError whose message is the validation's own words."""
    try:
        return CollectionAnswerRequest(collection=collection, question=question)
    except ValidationError as error:
        raise CollectionAnswerError(validation_problems(error, locations=False)) from None


def collection_search(
    retriever: HybridRetriever, reranker: Reranker, retrieval: RetrievalSettings
) -> Search:
    """Search of the collection's chunks (`retriever` holds only its papers') as
    `question_evidence` searches: hybrid candidates, MMR, the reranker, the best ANSWER_PASSAGES
    kept."""

    def search(text: str) -> list[RetrievedChunk]:
        shortlist = retriever.search(
            text,
            limit=max(retrieval.rerank_candidates, ANSWER_PASSAGES),
            candidates=retrieval.candidates,
            scope="all",
        )
        return reranker.rerank(text, shortlist)[:ANSWER_PASSAGES]

    return search


def answer_question(
    request: CollectionAnswerRequest,
    passages: list[RetrievedChunk],
    mode: AnswerMode,
    asker: Asker,
) -> Answer:
    """The question answered from `passages` by the agents of `mode`, its markers resolved
    against them."""
    question = Question(question_id=request.key, paper_id="", style="broad", text=request.question)
    if mode == "single":
        batch = [QueryAnswerInput(question=question, evidence=passages, words=ANSWER_WORDS)]
        return answer_queries(batch, asker)[0]
    evidence = QuestionEvidence(
        question=question,
        chunks=passages,
        reranked=any(chunk.rerank_score is not None for chunk in passages),
    )
    multi_view = answer_multi_view if mode == "multi_view" else answer_multi_view_answers
    return multi_view([evidence], asker)[0]


def collection_answer(
    request: CollectionAnswerRequest,
    answer: Answer,
    papers: list[str],
    mode: AnswerMode,
    titles: dict[str, str],
) -> CollectionAnswer:
    """The answer as the reader gets it, before grading (`titles`: the passages' papers'):
    declined when the writer found no answer in the passages or cited none of them."""
    result = CollectionAnswer(
        request=request,
        answered=True,
        text=answer.text,
        citations=answer.citations,
        passages=answer.evidence,
        papers=papers,
        titles=titles,
        mode=mode,
        engine=answer.engine,
        views=answer.views,
    )
    if not answer.evidence:
        return declined(result, "no passage of the collection was retrieved for the question")
    if answer.engine == OFFLINE_ENGINE and not _on_the_question(request.question, answer.evidence):
        return declined(
            result,
            f"no passage holds {OFFLINE_LEAST_COVERAGE:.0%} of the question's terms (the offline "
            "engine judges relevance by shared terms alone)",
        )
    if NO_ANSWER in answer.text:
        return declined(result, "the writer found no answer in the passages retrieved")
    if not answer.citations:
        return declined(result, "the answer cites none of the passages retrieved")
    return result


def _on_the_question(question: str, passages: list[RetrievedChunk]) -> bool:
    """Whether a passage holds OFFLINE_LEAST_COVERAGE of the question's content terms."""
    return any(
        term_coverage(question, chunk.text).share >= OFFLINE_LEAST_COVERAGE for chunk in passages
    )


def with_grades(result: CollectionAnswer, grades: OutputGrades) -> CollectionAnswer:
    """The answer with the support check's grades; declined when no sentence of it is
    supported by the passages it cites."""
    if not any(sentence.verdict == "supported" for sentence in grades.sentences):
        return declined(result, "no sentence of the answer is supported by the passages it cites")
    return result.model_copy(update={"grades": grades})


def declined(result: CollectionAnswer, because: str) -> CollectionAnswer:
    """NOT_ANSWERED in the answer's place, citing nothing; the passages stay, as the nearest."""
    return result.model_copy(
        update={
            "answered": False,
            "declined_because": because,
            "text": NOT_ANSWERED,
            "citations": [],
            "grades": None,
        }
    )


def collection_answer_version(mode: AnswerMode, asker: Asker) -> str:
    """Hash of all that decides a collection answer but retrieval (its own versions): the
    writers of `mode` (the `query_answer` agent, or the answers' MASS-RAG agents) and this
    workflow's code, its passage count and word budget among it."""
    writers = (
        asker.version(QueryAnswerAgent()) if mode == "single" else answers_version(mode, asker)
    )
    return digest(mode, writers, inspect.getsource(sys.modules[__name__]))
