"""The offline engine of the map step of map-reduce synthesis (the `paper_summary` agent), and
the sentence selection the offline synthesis writers share.

A paper's cited sentences are its insights (verbatim, each with its marker) followed by the
evidence sentences that maximal marginal relevance (MMR) picks. Relevance is the overlap of a
sentence's BM25 terms with the insights' and the theme's; redundancy its overlap with what is
already chosen. Each evidence sentence is the passage's own sentence, its marker put before its
closing full stop.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe import citations
from litpipe.retrieval.text import tokenize
from litpipe.schemas import Insight, RetrievedChunk
from litpipe.text import (
    cite,
    markers_in,
    overlap,
    sentences,
    strip_markers,
    whole_sentence,
)

# MMR's trade-off between relevance to the insights and novelty (as the retrieval's default).
MMR_LAMBDA = 0.7
# Evidence sentences added to a paper's insights: enough to ground them, few enough to read.
EVIDENCE_SENTENCES = 3
# A sentence this close to one already chosen says the same thing (an insight quoting its
# passage): it is never added.
MAX_REDUNDANCY = 0.8
# Fewer terms than this is a fragment ("See Fig. 2."), not a claim.
MIN_SENTENCE_TERMS = 4


def cited_insight(insight: Insight) -> str:
    """The insight's text, verbatim, with its first citation's marker if it holds none."""
    text = " ".join(insight.text.split())
    if markers_in(text) or not insight.citations:
        return text
    return cite(text, insight.citations[0].marker)


def evidence_sentences(evidence: list[RetrievedChunk]) -> list[str]:
    """The passages' whole sentences, each cited with its passage's marker, in order: a chunk's
    first and last sentences are often cut by its boundaries (the neighbouring chunk holds them
    whole), and a fragment would run into the next sentence of a summary. All of them if none
    is whole."""
    found: dict[str, bool] = {}
    for chunk in evidence:
        written_marker = citations.chunk_marker(chunk)
        for span in sentences(chunk.text):
            if len(tokenize(span.text)) >= MIN_SENTENCE_TERMS:
                found[cite(span.text, written_marker)] = whole_sentence(" ".join(span.text.split()))
    return [sentence for sentence, whole in found.items() if whole] or list(found)


def _terms(text: str) -> set[str]:
    return set(tokenize(strip_markers(text)))


def mmr_sentences(
    candidates: list[str], about: list[str], chosen: list[str], count: int
) -> list[str]:
    """Up to `count` of the candidates by MMR: relevant to the texts `about`, unlike `chosen`
    (and each other); near-repeats of a chosen text are left out."""
    query = set().union(*(_terms(text) for text in about)) if about else set()
    picked_terms = [_terms(text) for text in chosen]
    remaining = [(sentence, _terms(sentence)) for sentence in candidates]
    picked: list[str] = []
    while remaining and len(picked) < count:
        scored = []
        for order, (_, terms) in enumerate(remaining):
            redundancy = max((overlap(terms, other) for other in picked_terms), default=0.0)
            if redundancy >= MAX_REDUNDANCY:
                continue
            score = MMR_LAMBDA * overlap(terms, query) - (1 - MMR_LAMBDA) * redundancy
            scored.append((-score, order))
        if not scored:
            break
        _, best = min(scored)
        sentence, terms = remaining.pop(best)
        picked.append(sentence)
        picked_terms.append(terms)
    return picked


class PaperSummaryInput(BaseModel):
    paper_id: str
    title: str
    theme: str = Field(description="The collection's theme: what the summary should serve.")
    insights: list[str] = Field(description="The paper's insights, each with its marker(s).")
    evidence: list[RetrievedChunk]


class SummaryReply(BaseModel):
    summary: str = Field(description="Plain text citing as [paper_id:page].")


def distinct_insights(insights: list[str]) -> list[str]:
    """The insights without the near-repeats of an earlier one: several questions of a paper
    often find their answer in the same sentence."""
    kept: list[tuple[str, set[str]]] = []
    for insight in insights:
        terms = _terms(insight)
        if all(overlap(terms, other) < MAX_REDUNDANCY for _, other in kept):
            kept.append((insight, terms))
    return [insight for insight, _ in kept]


def offline_paper_summary(inputs: PaperSummaryInput) -> SummaryReply:
    """The paper's distinct insights, then the evidence sentences MMR picks to ground them."""
    insights = distinct_insights(inputs.insights)
    grounding = mmr_sentences(
        evidence_sentences(inputs.evidence),
        about=[*insights, inputs.theme],
        chosen=insights,
        count=EVIDENCE_SENTENCES,
    )
    return SummaryReply(summary=" ".join([*insights, *grounding]))
