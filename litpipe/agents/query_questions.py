"""The `query_questions` agent (MAIS's question generator): up to 7 diagnostic questions from a
paper and a reader's query, questions whose answers a good summary for that query must hold.

It runs once per request, before the loop, so a stronger model can be routed to it
(`agents={"query_questions": {"model": ...}}`) at little cost.

Its offline engine (`litpipe.extractive.query_questions.offline_query_questions`) slots key
phrases of the passage sentences that bear most on the query, verbatim, into fixed question
frames, each phrase being its question's topic.
"""

from __future__ import annotations

from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.citations import evidence_block
from litpipe.extractive.query_questions import (
    DiagnosticDraft,
    QueryQuestionsInput,
    QueryQuestionsReply,
    offline_query_questions,
)
from litpipe.llm.prompts import fence
from litpipe.schemas import DiagnosticQuestion


class QueryQuestionsAgent(Agent[QueryQuestionsInput, QueryQuestionsReply]):
    name = "query_questions"
    reply_tokens = 512
    offline = staticmethod(offline_query_questions)

    def prompt_values(self, inputs: QueryQuestionsInput) -> dict[str, str]:
        return dict(
            most=str(inputs.most),
            query=fence(inputs.query, "query"),
            title=fence(inputs.title),
            abstract=fence(inputs.abstract),
            passages=evidence_block(inputs.evidence),
        )


def questions_from(
    inputs: QueryQuestionsInput, reply: QueryQuestionsReply
) -> list[DiagnosticQuestion]:
    """The reply's questions, whitespace collapsed, repeats (ignoring case) dropped, at most
    `most` kept in the order given: a model asking fewer is not padded."""
    seen: set[str] = set()
    kept: list[DiagnosticDraft] = []
    for draft in reply.questions:
        text = " ".join(draft.question.split())
        if not text or text.casefold() in seen or len(kept) == inputs.most:
            continue
        seen.add(text.casefold())
        kept.append(DiagnosticDraft(question=text, topic=" ".join(draft.topic.split())))
    return [
        DiagnosticQuestion(
            question_id=f"{inputs.paper_id}:d{index}", text=draft.question, topic=draft.topic
        )
        for index, draft in enumerate(kept)
    ]


def diagnostic_questions(
    inputs: QueryQuestionsInput,
    asker: Asker,
) -> tuple[list[DiagnosticQuestion], str]:
    """The request's diagnostic questions, and what wrote them (`offline` or a model)."""
    agent = QueryQuestionsAgent()
    reply = asker.ask(agent, inputs)
    return questions_from(inputs, reply), asker.engine(agent.name)
