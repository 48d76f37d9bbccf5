"""The offline engine of the `query_questions` agent (MAIS's question generator): up to 7
diagnostic questions from a paper and a reader's query.

It ranks the sentences of the passages retrieved for the query by the share of the query's
content terms they hold, takes key phrases from the best of them (phrases sharing words with
the query first) and slots each, verbatim, into a fixed question frame. Each question's topic
is its phrase: what the judge names when the summary misses it.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.extractive.fields import NON_BLANK
from litpipe.retrieval.text import content_terms, tokenize
from litpipe.schemas import RetrievedChunk
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
