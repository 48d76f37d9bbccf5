"""The offline engine of the `insights` agent: the key insight of every question-and-answer pair
of a paper, none skipped, each one sentence citing the answer's evidence.

It takes the answer's most informative cited sentence, verbatim with its marker; for an answer
citing nothing (its passages did not answer) it repeats the answer, verbatim, after the
question.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.schemas import Answer
from litpipe.text import cited_sentences, marker, markers_in, sentences, strip_markers, words

# A sentence's words that the question asks about count this much more than its other words.
_QUESTION_WORD_WEIGHT = 2


class InsightsInput(BaseModel):
    paper_id: str = Field(description="The paper; empty for the comparative answers.")
    answers: list[Answer]


class InsightDraft(BaseModel):
    question_id: str
    text: str = Field(description="One sentence citing the answer's markers.", min_length=1)


class InsightsReply(BaseModel):
    insights: list[InsightDraft]


def offline_insight(answer: Answer) -> str:
    question = " ".join(answer.question.text.split())
    text = " ".join(answer.text.split())
    if not answer.citations:
        return f'On "{question}": {text or "no answer was written."}'
    resolvable = {citation.marker for citation in answer.citations}
    cited = [
        sentence
        for sentence in cited_sentences(text)
        if any(marker(paper, page) in resolvable for paper, page in markers_in(sentence))
    ]
    asked = set(words(question))

    def informativeness(sentence: str) -> int:
        content = set(words(strip_markers(sentence)))
        return len(content) + _QUESTION_WORD_WEIGHT * len(content & asked)

    if cited:
        return max(cited, key=informativeness)
    # The answer cites, but not inside any one sentence: its best sentence with its first marker.
    best = max((span.text for span in sentences(text)), key=informativeness, default=text)
    return f"{best} {answer.citations[0].marker}"


def offline_insights(inputs: InsightsInput) -> InsightsReply:
    return InsightsReply(
        insights=[
            InsightDraft(question_id=answer.question.question_id, text=offline_insight(answer))
            for answer in inputs.answers
        ]
    )
