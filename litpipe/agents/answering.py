"""What every writer of an answer from evidence shares (the `answers` agent, MASS-RAG's views
and reconciler, the query answers): the prompt values of the question and its passages, and the
reply turned into a cited `Answer`. Their input, reply schema and offline engine are in
`litpipe.extractive.answering`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from litpipe import citations
from litpipe.extractive.answering import NO_ANSWER, AnswerInput
from litpipe.llm.prompts import fence
from litpipe.schemas import Answer, QuestionEvidence
from litpipe.text import without_markers

logger = logging.getLogger(__name__)


def question_and_passages(inputs: AnswerInput) -> dict[str, str]:
    """The prompt values every answering agent shows the model: the question, fenced, and its
    passages, each fenced under its marker."""
    return dict(
        question=fence(inputs.question.text, "question"),
        passages=citations.evidence_block(inputs.evidence),
    )


def checked_citations(text: str, inputs: AnswerInput, writer: str) -> str:
    """`text` without the markers that resolve to no passage it was given (a model citing a page
    it was not shown), after a warning naming them."""
    _, unresolved = citations.citations(text, inputs.evidence)
    if not unresolved:
        return text
    logger.warning(
        "%s cited pages it was not given for question %s; removed: %s",
        writer,
        inputs.question.question_id,
        ", ".join(unresolved),
    )
    return without_markers(text, unresolved)


def cited_answer(text: str, inputs: AnswerInput, writer: str) -> str:
    """`text` with its unresolvable markers removed (`checked_citations`); the fixed sentence
    when nothing but blanks and such markers was written, so that no answer is left empty."""
    cleaned = checked_citations(text, inputs, writer)
    return cleaned if any(char.isalnum() for char in cleaned) else NO_ANSWER


def answer_from(
    inputs: AnswerInput,
    text: str,
    engine: str,
    views: dict[str, str] | None = None,
    candidates: dict[str, str] | None = None,
) -> Answer:
    """The reply's text as an `Answer`: unresolvable markers removed (the fixed sentence if
    nothing is left), the rest resolved."""
    cleaned = cited_answer(text, inputs, "the answer")
    resolved, _ = citations.citations(cleaned, inputs.evidence)
    return Answer(
        question=inputs.question,
        text=cleaned,
        citations=resolved,
        evidence=inputs.evidence,
        views=views or {},
        candidates=candidates or {},
        engine=engine,
    )


def answer_inputs(items: Sequence[QuestionEvidence]) -> list[AnswerInput]:
    return [AnswerInput(question=item.question, evidence=item.chunks) for item in items]
