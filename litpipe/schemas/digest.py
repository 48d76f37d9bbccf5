"""The nightly digest.

One digest per UTC day: what changed in each collection's synthesis that day, the papers the
catalog first registered that day, each in brief, how their insights relate to those of the
papers their collections held before that day, what they changed in their collections'
citation graphs, and the rows they added to their comparison tables.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.schemas.changes import SynthesisDiff
from litpipe.schemas.comparison import ComparisonRow
from litpipe.schemas.evidence import RetrievedChunk
from litpipe.schemas.papers import PaperSource
from litpipe.schemas.references import CitationEdge, OftenCited
from litpipe.schemas.relationships import Insight, Relationship
from litpipe.schemas.standing_questions import AnswerDiff


class PaperArrival(BaseModel):
    """A paper as the catalog first registered it: its arrival decides the digest it is in."""

    paper_id: str
    arrived_at: str = Field(
        description="First registration, UTC, ISO 8601 (a changed file keeps its first arrival)."
    )
    collections: list[str]
    source: PaperSource


class DigestPaper(BaseModel):
    """A new paper in brief."""

    paper_id: str
    title: str
    arrived_at: str = Field(description="UTC, ISO 8601.")
    collections: list[str]
    abstract: str = ""
    analysed: bool = Field(
        description="False when its answers were not built yet when the digest was made."
    )
    insights: list[Insight] = Field(
        default_factory=list, description="One per question-and-answer pair, ids `<paper>/n<k>`."
    )


class DigestCollection(BaseModel):
    """How a collection's new papers relate to the papers it held before the day."""

    collection: str
    new_papers: list[str]
    existing_papers: int = Field(description="Papers it held before the day.")
    existing_insights_from: list[str] = Field(
        description="Where the existing insights came from: `relationship_analysis` and/or "
        "`paper_answers` (papers the last analysis did not cover)."
    )
    insights: list[Insight] = Field(
        description="The existing insights the relationships name, ids `<paper>/e<k>`."
    )
    relationships: list[Relationship] = Field(
        description="Between insights of different papers, at least one of them new."
    )
    often_cited: list[OftenCited] = Field(
        default_factory=list,
        description="The works often cited, not in the collection, that a new paper cites: "
        "made often cited by the day's papers, or more often; their citing papers and sentences "
        "those of the papers it held by the day's end. Empty without its citation graph.",
    )
    citations: list[CitationEdge] = Field(
        default_factory=list,
        description="The citations between its papers that a new paper makes or receives. "
        "Empty without its citation graph.",
    )
    comparison_rows: list[ComparisonRow] = Field(
        default_factory=list,
        description="The rows the new papers have in its comparison table, as last built. Empty "
        "without the table, or before it was built with them.",
    )


class NightlyBudgetSpent(BaseModel):
    """The day's model budget across runs (`llm.nightly_budget_usd`), spent."""

    budget_usd: float
    spent_at: str = Field(description="When a call was first refused, UTC, ISO 8601.")
    calls_not_made: int = Field(description="Requests refused since, by every run.")


class Digest(BaseModel):
    day: str = Field(description="The UTC day, YYYY-MM-DD.")
    engine: str = Field(description="What wrote the insights and relationships.")
    engines: dict[str, str] = Field(
        default_factory=dict,
        description="What each agent ran on (`insights`, `relationships`); empty in a digest "
        "made before they were recorded.",
    )
    papers: list[DigestPaper] = Field(description="Oldest arrival first; empty: nothing new.")
    collections: list[DigestCollection]
    titles: dict[str, str] = Field(description="Every paper the digest names, by id.")
    passages: list[RetrievedChunk] = Field(description="Every passage its insights cite.")
    changes: list[SynthesisDiff] = Field(
        default_factory=list,
        description="What changed in each collection's synthesis during the day: from the "
        "version kept when the day began (the previous digest's end) to the one kept when it "
        "ended; the collections with new papers or a change. Empty in a digest made without "
        "the history.",
    )
    standing: list[AnswerDiff] = Field(
        default_factory=list,
        description="The standing questions whose answer changed during the day (from the "
        "version kept when the day began to the one kept when it ended), each with the papers "
        "that brought the change. Empty in a digest made without the history.",
    )
    model_budget: NightlyBudgetSpent | None = Field(
        default=None,
        description="The day's model budget across runs, where it was spent (None: it was not, "
        "or there is none).",
    )
