"""The offline engine of the `query_summary` agent (MAIS's summarizer): a summary of one paper
focused on a reader's query, with its key highlights, every sentence citing its passage; from
the second pass on, the previous summary revised from the judge's topics of mismatch. Also the
sentence ranking the other MAIS engines share (`ranked_sentences`, `terms_of`).

It is extractive, over the passages' whole sentences. Its first draft is short on purpose: the
few sentences, each verbatim with its marker, that maximal marginal relevance picks for the
query (none at all, and the evidence declared insufficient, when no sentence holds a query
term). A revision keeps the previous summary and adds, for each topic of mismatch, the sentence
not yet in it that holds the most of the topic's terms: the loop grows the summary by what the
judge found missing, and ends when nothing is.
"""

from __future__ import annotations

import functools

from pydantic import BaseModel, Field

from litpipe.extractive.paper_summary import evidence_sentences, mmr_sentences
from litpipe.retrieval.text import content_terms, tokenize
from litpipe.schemas import RetrievedChunk
from litpipe.text import sentences, strip_markers

# A first draft this short leaves the judge something to find, as MAIS's loop expects.
FIRST_DRAFT_SENTENCES = 3
HIGHLIGHTS = 3


class QuerySummaryInput(BaseModel):
    paper_id: str
    title: str
    query: str
    passages: list[RetrievedChunk] = Field(
        description="The paper's evidence for the query and the questions, or the whole paper."
    )
    previous: str = Field(default="", description="The summary to revise; empty at first.")
    mismatch_topics: list[str] = Field(
        default_factory=list, description="What the judge found wrong or missing in `previous`."
    )

    @property
    def revising(self) -> bool:
        return bool(self.previous or self.mismatch_topics)


class QuerySummaryReply(BaseModel):
    # First: whether to write at all from these passages decides what follows (Self-Route).
    evidence_sufficient: bool = Field(
        description="False when the passages do not hold what the query asks about."
    )
    summary: str = Field(
        description="The query-focused summary, every sentence citing [paper_id:page]; empty "
        "only when the passages are insufficient."
    )
    highlights: list[str] = Field(
        description="The summary's key points for the query, each a short cited sentence."
    )
    # No check that a summary found sufficient is written: JSON schema cannot say so, and the
    # judge rejects an empty summary like any other that answers nothing.


def unmarked(sentence: str) -> str:
    """A cited sentence without its markers, spaced once: what two copies of it share."""
    return " ".join(strip_markers(sentence).split())


# The judge and the summarizer score the same source sentences against every question and topic
# of every pass: their terms are worth keeping.
@functools.lru_cache(maxsize=8192)
def terms_of(sentence: str) -> frozenset[str]:
    return frozenset(tokenize(unmarked(sentence)))


def ranked_sentences(text: str, candidates: list[str]) -> list[tuple[float, str]]:
    """(share, sentence) for the candidates holding any of `text`'s content terms, most first,
    ties in the candidates' order. `text` is a question, a query or a topic."""
    wanted = content_terms(text)
    if not wanted:
        return []
    scored = [(len(terms_of(c) & wanted) / len(wanted), c) for c in candidates]
    return sorted(((share, c) for share, c in scored if share > 0), key=lambda item: -item[0])


def summary_sentences(summary: str) -> list[str]:
    return [span.text for span in sentences(summary)]


def highlights_of(chosen: list[str], query: str) -> list[str]:
    """The summary sentences that hold the most of the query's terms, in summary order."""
    best = {sentence for _, sentence in ranked_sentences(query, chosen)[:HIGHLIGHTS]}
    return [sentence for sentence in chosen if sentence in best]


def offline_query_summary(inputs: QuerySummaryInput) -> QuerySummaryReply:
    candidates = evidence_sentences(inputs.passages)
    if not inputs.revising:
        relevant = {sentence for _, sentence in ranked_sentences(inputs.query, candidates)}
        if not relevant:
            return QuerySummaryReply(evidence_sufficient=False, summary="", highlights=[])
        # In passage order, so that MMR's ties go to the earlier sentence.
        in_order = [c for c in candidates if c in relevant]
        chosen = mmr_sentences(
            in_order, about=[inputs.query], chosen=[], count=FIRST_DRAFT_SENTENCES
        )
    else:
        chosen = summary_sentences(inputs.previous)
        for topic in inputs.mismatch_topics:
            present = {unmarked(sentence) for sentence in chosen}
            fresh = [c for c in candidates if unmarked(c) not in present]
            ranked = ranked_sentences(topic, fresh)
            if ranked:
                chosen.append(ranked[0][1])
    return QuerySummaryReply(
        evidence_sufficient=True,
        summary=" ".join(chosen),
        highlights=highlights_of(chosen, inputs.query),
    )
