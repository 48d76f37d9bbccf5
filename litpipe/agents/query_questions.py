"""The `query_questions` agent (MAIS's question generator): up to 7 diagnostic questions from a
paper and a reader's query, questions whose answers a good summary for that query must hold.

It runs once per request, before the loop, so a stronger model can be routed to it
(`agents={"query_questions": {"model": ...}}`) at little cost.

The offline engine ranks the sentences of the passages retrieved for the query by the share of
the query's content terms they hold, takes key phrases from the best of them (phrases sharing
words with the query first) and slots each, verbatim, into a fixed question frame. Each
question's topic is its phrase: what the judge names when the summary misses it.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.agents.base import NON_BLANK, Agent, StructuredClient, engine_name, run_agent
from litpipe.citations import evidence_block
from litpipe.llm.prompts import PromptLibrary, fence
from litpipe.retrieval.text import content_terms, tokenize
from litpipe.schemas import DiagnosticQuestion, RetrievedChunk
from litpipe.settings import Settings
from litpipe.text import Phrase, Span, phrases, sentences

MAX_QUESTIONS = 7
# Frames made only of stop words and generic words, so that a question's content terms are its
# phrase's: the judge then looks for the phrase's best sentence, the one the question is about.
FRAMES = (
    "What does the paper report about {phrase}?",
    "What is shown about {phrase}?",
    "What role does {phrase} play?",
)


class QueryQuestionsInput(BaseModel):
    paper_id: str
    title: str
    abstract: str
    query: str
    evidence: list[RetrievedChunk] = Field(description="The paper's passages for the query.")
    most: int = Field(default=MAX_QUESTIONS, ge=1, le=MAX_QUESTIONS)


class DiagnosticDraft(BaseModel):
    question: str = Field(max_length=500, pattern=NON_BLANK, description="One question.")
    topic: str = Field(
        max_length=200,
        pattern=NON_BLANK,
        description="What the question checks, in a few words (a noun phrase).",
    )


class QueryQuestionsReply(BaseModel):
    questions: list[DiagnosticDraft]


def _ranked_sentences(inputs: QueryQuestionsInput) -> list[tuple[str, Span]]:
    """(text, sentence span) of the passages, those holding the most query terms first (ties in
    passage order); the abstract's sentences when no passage sentence holds a query term."""
    wanted = content_terms(inputs.query)
    scored: list[tuple[float, int, str, Span]] = []
    for chunk in inputs.evidence:
        for span in sentences(chunk.text):
            terms = set(tokenize(span.text))
            share = len(terms & wanted) / len(wanted) if wanted else 0.0
            if share > 0:
                scored.append((-share, len(scored), chunk.text, span))
    if not scored:
        return [(inputs.abstract, span) for span in sentences(inputs.abstract)]
    return [(text, span) for _, _, text, span in sorted(scored, key=lambda item: item[:2])]


def _overlaps(phrase: Phrase, used: list[Phrase]) -> bool:
    words = set(phrase.words)
    return any(words <= set(other.words) or set(other.words) <= words for other in used)


def offline_query_questions(inputs: QueryQuestionsInput) -> QueryQuestionsReply:
    """Up to `most` questions, each a frame around a distinct phrase of the sentences that bear
    most on the query; fewer when those sentences hold fewer distinct phrases."""
    query_words = set(tokenize(inputs.query))
    used: list[Phrase] = []
    for text, span in _ranked_sentences(inputs):
        found = phrases(text, span)
        # Within a sentence, phrases naming what the query names come first.
        found.sort(key=lambda p: -len(set(tokenize(" ".join(p.words))) & query_words))
        for phrase in found:
            if len(used) == inputs.most:
                break
            if not _overlaps(phrase, used):
                used.append(phrase)
        if len(used) == inputs.most:
            break
    return QueryQuestionsReply(
        questions=[
            DiagnosticDraft(
                question=FRAMES[index % len(FRAMES)].format(phrase=p.text), topic=p.text
            )
            for index, p in enumerate(used)
        ]
    )


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
    settings: Settings,
    prompts: PromptLibrary,
    client: StructuredClient | None,
) -> tuple[list[DiagnosticQuestion], str]:
    """The request's diagnostic questions, and what wrote them (`offline` or a model)."""
    agent = QueryQuestionsAgent()
    reply = run_agent(agent, inputs, settings, prompts, client)
    return questions_from(inputs, reply), engine_name(settings.route(agent.name))
