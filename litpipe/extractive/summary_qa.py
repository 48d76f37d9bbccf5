"""The offline engine of the `summary_qa` agent (MAIS's QA agent): the diagnostic questions
answered from the summary alone.

It answers each question with the summary's sentences (verbatim, markers kept) that hold the
most of the question's content terms, the best first, a few at most; a question none of whose
terms the summary holds gets a fixed sentence.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.extractive.answering import MAX_ANSWER_SENTENCES, MIN_SHARE_OF_BEST, near_duplicate
from litpipe.extractive.query_summary import ranked_sentences, summary_sentences
from litpipe.schemas import DiagnosticQuestion

NOT_IN_SUMMARY = "The summary does not say."


class SummaryQAInput(BaseModel):
    summary: str
    questions: list[DiagnosticQuestion]


class SummaryAnswer(BaseModel):
    question_id: str = Field(description="The question's id, exactly as given.")
    answer: str = Field(description="From the summary alone.")


class SummaryQAReply(BaseModel):
    answers: list[SummaryAnswer] = Field(description="One per question, in their order.")


def answer_from_summary(question: str, summary: str) -> str:
    ranked = ranked_sentences(question, summary_sentences(summary))
    if not ranked:
        return NOT_IN_SUMMARY
    floor = MIN_SHARE_OF_BEST * ranked[0][0]
    kept: list[str] = []
    for share, sentence in ranked:
        if share < floor or len(kept) == MAX_ANSWER_SENTENCES:
            break
        if not near_duplicate(sentence, kept):
            kept.append(sentence)
    return " ".join(kept)


def offline_summary_qa(inputs: SummaryQAInput) -> SummaryQAReply:
    return SummaryQAReply(
        answers=[
            SummaryAnswer(
                question_id=question.question_id,
                answer=answer_from_summary(question.text, inputs.summary),
            )
            for question in inputs.questions
        ]
    )
