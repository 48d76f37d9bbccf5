"""The offline engine of the `query_answer` agent: a reader's question answered in one passage
of prose, up to a word budget, from passages of several papers.

It is the `answers` engine made to cover the papers and fill the budget: every sentence of the
passages is scored by the share of the question's content terms it holds, weighted by its
passage's rank (`answering.evidence_sentences`). It takes, in this order, each paper's best
sentence holding a question term (the papers in the order of those sentences' scores: a
multi-document answer draws on every paper that bears on the question, as an expert's cites
them), then the other sentences holding a term, best first, then the remaining sentences in
passage order (the passages are the question's evidence: all of it is on its subject), skipping
near-duplicates and passing over a sentence too long for the words left for a shorter one,
until the budget is spent. Each sentence is verbatim and followed by its passage's marker; a
question none of whose terms occur in the passages gets `answering.NO_ANSWER`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from litpipe.extractive.answering import (
    AnswerInput,
    AnswerReply,
    EvidenceSentence,
    cited_text,
    evidence_sentences,
    near_duplicate,
)
from litpipe.extractive.related_work import count_words


class QueryAnswerInput(AnswerInput):
    """A question and its passages (ranked for it, best first), with the word budget."""

    words: int = Field(ge=1, description="At most this many words, markers not counted.")


def budgeted_sentences(sentences: Sequence[EvidenceSentence], words: int) -> list[EvidenceSentence]:
    """What the answer says, in order, within `words`: each paper's best sentence holding a
    question term, the other such sentences best first, then the rest in passage order; none
    when no sentence holds a question term."""
    relevant = sorted((s for s in sentences if s.coverage > 0), key=lambda s: -s.score)
    if not relevant:
        return []
    best_of_paper: dict[str, EvidenceSentence] = {}
    for sentence in relevant:
        best_of_paper.setdefault(sentence.chunk.paper_id, sentence)
    firsts = list(best_of_paper.values())
    order = [
        *firsts,
        *(s for s in relevant if s not in firsts),
        *(s for s in sentences if s.coverage == 0),
    ]
    kept: list[EvidenceSentence] = []
    left = words
    for sentence in order:
        length = count_words(sentence.text)
        if 0 < length <= left and not near_duplicate(sentence.text, [k.text for k in kept]):
            kept.append(sentence)
            left -= length
    return kept


def offline_query_answer(inputs: QueryAnswerInput) -> AnswerReply:
    found = evidence_sentences(inputs.question.text, inputs.evidence)
    return AnswerReply(answer=cited_text(budgeted_sentences(found, inputs.words)))
