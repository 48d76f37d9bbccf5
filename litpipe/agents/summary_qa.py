"""The `summary_qa` agent (MAIS's QA agent): the diagnostic questions answered from the summary
alone. It never sees the paper, so a wrong or missing answer shows what the summary lacks.

Its offline engine (`litpipe.extractive.summary_qa.offline_summary_qa`) answers each question
with the summary's sentences that hold the most of its terms, verbatim.
"""

from __future__ import annotations

from litpipe.agents.base import Agent
from litpipe.extractive.summary_qa import (
    NOT_IN_SUMMARY,
    SummaryQAInput,
    SummaryQAReply,
    offline_summary_qa,
)
from litpipe.llm.prompts import fence


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
