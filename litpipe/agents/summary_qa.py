"""The `summary_qa` agent (MAIS's QA agent): the diagnostic questions answered from the summary
alone. It never sees the paper, so a wrong or missing answer shows what the summary lacks.

The offline engine answers each question with the summary's sentences (verbatim, markers kept)
that hold the most of the question's content terms, the best first, a few at most; a question
none of whose terms the summary holds gets a fixed sentence.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.agents.answering import MAX_ANSWER_SENTENCES, MIN_SHARE_OF_BEST, near_duplicate
from litpipe.agents.base import Agent
from litpipe.agents.query_summary import ranked_sentences, summary_sentences
from litpipe.llm.prompts import fence
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


class SummaryQAAgent(Agent[SummaryQAInput, SummaryQAReply]):
    name = "summary_qa"
    reply_tokens = 768
    offline = staticmethod(offline_summary_qa)

    def prompt_values(self, inputs: SummaryQAInput) -> dict[str, str]:
        questions = "\n".join(f"{q.question_id}: {q.text}" for q in inputs.questions)
        return dict(
            summary=fence(inputs.summary or "(empty)", "summary"),
            questions=fence(questions, "questions"),
            not_in_summary=NOT_IN_SUMMARY,
        )


def answers_by_question(inputs: SummaryQAInput, reply: SummaryQAReply) -> dict[str, str]:
    """Each question's answer: the reply's answer with its id; else, when the reply's answer at
    the question's position names no question, that one (a model that garbled the ids but kept
    the order); else the fixed sentence."""
    ids = {question.question_id for question in inputs.questions}
    by_id = {a.question_id.strip(): a.answer for a in reply.answers if a.question_id.strip() in ids}
    found: dict[str, str] = {}
    for position, question in enumerate(inputs.questions):
        if question.question_id in by_id:
            found[question.question_id] = by_id[question.question_id]
        elif (
            position < len(reply.answers) and reply.answers[position].question_id.strip() not in ids
        ):
            found[question.question_id] = reply.answers[position].answer
        else:
            found[question.question_id] = NOT_IN_SUMMARY
    return {
        question_id: " ".join(answer.split()) or NOT_IN_SUMMARY
        for question_id, answer in found.items()
    }
