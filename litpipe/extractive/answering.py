"""The offline engine of every writer of an answer from evidence (the `answers` agent, MASS-RAG's
views and reconciler, the query answers): their input and reply, and the evidence sentences
scored against the question.

The offline engine answers with cited evidence sentences (`offline_answer`): it scores every
sentence of every passage by the share of the question's content terms it holds, weighted by its
passage's rank, and keeps the best few (one of any near-duplicates), each verbatim and followed
by its passage's marker. A question none of whose terms occur in the passages gets the fixed
sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from litpipe import text as text_helpers
from litpipe.citations import chunk_marker
from litpipe.retrieval.text import content_terms, tokenize
from litpipe.schemas import Question, RetrievedChunk
from litpipe.text import cite, whole_sentence

NO_ANSWER = "The retrieved passages do not answer this question."
MAX_ANSWER_SENTENCES = 3
# A passage's sentences count for less the lower the reranker put it: 1, 0.8, 0.67, ...
RANK_DECAY = 0.25
# Sentences scoring under this share of the best one would pad the answer, not answer.
MIN_SHARE_OF_BEST = 0.5
# Sentences whose content words overlap this much (cosine) say the same thing: keep one.
NEAR_DUPLICATE = 0.7


class AnswerInput(BaseModel):
    question: Question
    evidence: list[RetrievedChunk]


class AnswerReply(BaseModel):
    answer: str = Field(
        min_length=1,
        description="The answer, every sentence citing its passage(s) as [paper_id:page].",
    )


@dataclass(frozen=True)
class EvidenceSentence:
    """One sentence of a passage (whitespace collapsed, words verbatim) and how well it bears on
    the question."""

    text: str
    chunk: RetrievedChunk
    rank: int
    coverage: float
    """Share of the question's content terms the sentence holds."""
    terms: frozenset[str]
    """Its stemmed terms, as BM25 reads them."""

    @property
    def score(self) -> float:
        return self.coverage / (1 + RANK_DECAY * self.rank)

    @property
    def cited(self) -> str:
        """The sentence with its passage's marker before its full stop."""
        return cite(self.text, chunk_marker(self.chunk))


def evidence_sentences(question: str, evidence: Sequence[RetrievedChunk]) -> list[EvidenceSentence]:
    """Every sentence of the evidence, in evidence order, scored against the question."""
    wanted = content_terms(question)
    found: list[EvidenceSentence] = []
    for rank, chunk in enumerate(evidence):
        for span in text_helpers.sentences(chunk.text):
            terms = frozenset(tokenize(span.text))
            coverage = len(terms & wanted) / len(wanted) if wanted else 0.0
            found.append(
                EvidenceSentence(" ".join(span.text.split()), chunk, rank, coverage, terms)
            )
    return found


def whole_unless_none(found: Sequence[EvidenceSentence]) -> list[EvidenceSentence]:
    """The whole sentences among `found`, all of them if none is: a passage cut mid-sentence
    opens on a fragment ("showed that the REV1 protein ...") that the passage before it holds
    whole, and a title page's line ("Running title: ...") ends in no full stop; either, quoted
    beside another cited sentence, runs into it."""
    return [s for s in found if whole_sentence(s.text)] or list(found)


def near_duplicate(sentence: str, others: Sequence[str]) -> bool:
    words = set(text_helpers.words(sentence))
    return any(
        text_helpers.overlap(words, set(text_helpers.words(other))) >= NEAR_DUPLICATE
        for other in others
    )


def distinct(sentences: Sequence[EvidenceSentence], most: int) -> list[EvidenceSentence]:
    """The first `most` sentences that are no near-duplicate of one kept before them."""
    kept: list[EvidenceSentence] = []
    for sentence in sentences:
        if len(kept) == most:
            break
        if not near_duplicate(sentence.text, [other.text for other in kept]):
            kept.append(sentence)
    return kept


def best_sentences(
    question: str, evidence: Sequence[RetrievedChunk], most: int = MAX_ANSWER_SENTENCES
) -> list[EvidenceSentence]:
    """The sentences that best answer the question, best first; none when no sentence holds any
    of its terms; whole ones only, unless none is (`whole_unless_none`)."""
    relevant = whole_unless_none(
        [s for s in evidence_sentences(question, evidence) if s.coverage > 0]
    )
    if not relevant:
        return []
    floor = MIN_SHARE_OF_BEST * max(s.score for s in relevant)
    # sorted is stable: equal scores keep the evidence order.
    ranked = sorted((s for s in relevant if s.score >= floor), key=lambda s: -s.score)
    return distinct(ranked, most)


def cited_text(sentences: Sequence[EvidenceSentence], nothing: str = NO_ANSWER) -> str:
    """The sentences, each with its passage's marker before its full stop; `nothing` when there
    are none."""
    return " ".join(s.cited for s in sentences) if sentences else nothing


def offline_answer(inputs: AnswerInput) -> AnswerReply:
    sentences = best_sentences(inputs.question.text, inputs.evidence)
    return AnswerReply(answer=cited_text(sentences))
