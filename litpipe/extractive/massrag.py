"""The offline engines of MASS-RAG's multi-view answering (`litpipe.agents.massrag`): the three
views of a question's evidence, their reconciliation, and the optional candidate answers and
their comparison.

All verbatim, and whole sentences wherever the passages hold any (`whole_unless_none`): the
summarizer takes the best sentence of each passage, the extractor the sentences holding most of
the question's terms, the reasoner pairs of sentences of different passages (different papers
first) that share terms, written "<A> [m1] <B> [m2]"; the reconciler keeps the views'
sentences, one of any near-duplicates, ordered by how many views hold them, at most four, each
with its marker.

A candidate is the passage sentences its view holds, best first (the view's own cited text when
it holds none verbatim, as a model's view may); the comparison picks the candidate best
supported by the passages: the most question terms held by sentences whose words its cited
passages hold.
"""

from __future__ import annotations

from itertools import combinations

from pydantic import BaseModel, Field

from litpipe import citations
from litpipe.citations import chunk_marker
from litpipe.extractive.answering import (
    NO_ANSWER,
    AnswerInput,
    AnswerReply,
    EvidenceSentence,
    cited_text,
    distinct,
    evidence_sentences,
    whole_unless_none,
)
from litpipe.retrieval.text import content_terms, tokenize
from litpipe.text import cited_sentences, strip_markers

NO_INFERENCE = "The retrieved passages support no inference across them."
EXTRACTED_SPANS = 3
INFERENCE_PAIRS = 2
# Two sentences sharing fewer terms than this are not about the same thing.
MIN_SHARED_TERMS = 2
# A link between two papers says more than one between two passages of the same paper.
CROSS_PAPER_WEIGHT = 2.0
RECONCILED_SENTENCES = 4
# A candidate answer is as long as a single-view answer (two to four sentences).
CANDIDATE_SENTENCES = 3


class ViewReply(BaseModel):
    text: str = Field(min_length=1, description="The view, citing as [paper_id:page].")


class ExtractedSpan(BaseModel):
    marker: str = Field(description="The [paper_id:page] of the passage it is copied from.")
    quote: str = Field(min_length=1, description="Words copied exactly from that passage.")


class ExtractorReply(BaseModel):
    spans: list[ExtractedSpan]


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def offline_summarizer(inputs: AnswerInput) -> ViewReply:
    """The best sentence of each passage that holds any of the question's terms."""
    best: dict[int, EvidenceSentence] = {}
    for sentence in whole_unless_none(evidence_sentences(inputs.question.text, inputs.evidence)):
        kept = best.get(sentence.rank)
        if sentence.coverage > 0 and (kept is None or sentence.coverage > kept.coverage):
            best[sentence.rank] = sentence
    chosen = distinct([best[rank] for rank in sorted(best)], len(best))
    return ViewReply(text=cited_text(chosen, NO_ANSWER))


def offline_extractor(inputs: AnswerInput) -> ExtractorReply:
    """The sentences holding the largest share of the question's terms, wherever they are."""
    relevant = whole_unless_none(
        [s for s in evidence_sentences(inputs.question.text, inputs.evidence) if s.coverage > 0]
    )
    ranked = sorted(relevant, key=lambda s: -s.coverage)
    return ExtractorReply(
        spans=[
            ExtractedSpan(marker=chunk_marker(s.chunk), quote=s.text)
            for s in distinct(ranked, EXTRACTED_SPANS)
        ]
    )


def _linked_pairs(inputs: AnswerInput) -> list[tuple[EvidenceSentence, EvidenceSentence]]:
    """Pairs of sentences of different passages that share terms, one of them bearing on the
    question: the most shared terms and question coverage first, links across papers preferred."""
    scored: list[tuple[float, EvidenceSentence, EvidenceSentence]] = []
    found = whole_unless_none(evidence_sentences(inputs.question.text, inputs.evidence))
    for first, second in combinations(found, 2):
        shared = first.terms & second.terms
        if (
            first.chunk.chunk_id == second.chunk.chunk_id
            or len(shared) < MIN_SHARED_TERMS
            or first.coverage + second.coverage == 0
        ):
            continue
        weight = CROSS_PAPER_WEIGHT if first.chunk.paper_id != second.chunk.paper_id else 1.0
        scored.append((len(shared) * (first.coverage + second.coverage) * weight, first, second))
    # sorted is stable: equal scores keep the evidence order.
    return [(first, second) for _, first, second in sorted(scored, key=lambda item: -item[0])]


def offline_reasoner(inputs: AnswerInput) -> ViewReply:
    """The best linked pairs of sentences, side by side, no sentence used twice."""
    used: set[str] = set()
    written: list[str] = []
    for first, second in _linked_pairs(inputs):
        if len(written) == INFERENCE_PAIRS:
            break
        if first.text in used or second.text in used or first.text == second.text:
            continue
        used.update((first.text, second.text))
        written.append(f"{first.cited} {second.cited}")
    return ViewReply(text=" ".join(written) if written else NO_INFERENCE)


class ReconcileInput(AnswerInput):
    views: dict[str, str] = Field(description="Each view's cited text, by view name.")


def offline_reconcile(inputs: ReconcileInput) -> AnswerReply:
    """The views' sentences, those more views hold first, one of any near-duplicates."""
    views = [_collapsed(text) for text in inputs.views.values()]

    def support(sentence: EvidenceSentence) -> int:
        return sum(sentence.cited in view for view in views)

    held = [s for s in evidence_sentences(inputs.question.text, inputs.evidence) if support(s) > 0]
    ranked = sorted(held, key=lambda s: (-support(s), -s.score))
    return AnswerReply(answer=cited_text(distinct(ranked, RECONCILED_SENTENCES)))


class CandidateInput(AnswerInput):
    view: str = Field(description="The view the candidate is written from.")
    view_text: str = Field(description="That view's cited text.")


def offline_candidate(inputs: CandidateInput) -> AnswerReply:
    """The passage sentences the view holds, best first; the view itself when it holds none
    word for word (a model's paraphrase), and the fixed sentence when it has nothing to say."""
    view = _collapsed(inputs.view_text)
    held = [
        s
        for s in evidence_sentences(inputs.question.text, inputs.evidence)
        if s.coverage > 0 and s.cited in view
    ]
    if held:
        # sorted is stable: equal scores keep the evidence order.
        ranked = sorted(held, key=lambda s: -s.score)
        return AnswerReply(answer=cited_text(distinct(ranked, CANDIDATE_SENTENCES)))
    silent = view in (NO_ANSWER, NO_INFERENCE) or not citations.citations(view, inputs.evidence)[0]
    return AnswerReply(answer=NO_ANSWER if silent else view)


class CompareInput(AnswerInput):
    candidates: dict[str, str] = Field(description="Each view's candidate answer, by view name.")


def passage_support(candidate: str, inputs: AnswerInput) -> float:
    """How well the passages bear out a candidate: over its sentences, the share of the
    question's terms each holds times the share of its own terms its cited passages hold (a
    sentence citing nothing, or nothing given, counts for nothing)."""
    wanted = content_terms(inputs.question.text)
    if not wanted:
        return 0.0
    by_chunk = {chunk.chunk_id: chunk for chunk in inputs.evidence}
    support = 0.0
    for sentence in cited_sentences(candidate):
        resolved, _ = citations.citations(sentence, inputs.evidence)
        cited_terms = {
            term
            for citation in resolved
            for chunk_id in citation.chunk_ids
            for term in tokenize(by_chunk[chunk_id].text)
        }
        terms = set(tokenize(strip_markers(sentence)))
        if not terms or not cited_terms:
            continue
        support += len(terms & wanted) / len(wanted) * len(terms & cited_terms) / len(terms)
    return support


def offline_compare(inputs: CompareInput) -> AnswerReply:
    """The candidate best supported by the passages (the first in view order on a tie); the
    fixed sentence when none is supported at all."""
    scored = [
        (passage_support(text, inputs), text)
        for text in inputs.candidates.values()
        if text != NO_ANSWER
    ]
    best = max(scored, key=lambda item: item[0], default=(0.0, NO_ANSWER))
    return AnswerReply(answer=best[1] if best[0] > 0 else NO_ANSWER)
