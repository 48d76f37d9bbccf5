"""Related work (LitLLM).

A request is a table of reference abstracts and a research idea. The abstracts are searched
(BM25 and dense, fused, diversified by MMR), each candidate is debated against the idea
(arguments for and against, quotes, a probability), and the top-k go to a writer whose section
cites them as `[id]`, `id` being the table's own id column.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from litpipe.schemas.grades import OutputGrades


class Reference(BaseModel):
    """One row of a reference table, or one paper of a collection, cited as `[id]`."""

    id: str = Field(
        description="The table's `id` column, or the collection's paper id, exactly as it is "
        "cited: `[id]`."
    )
    title: str
    abstract: str
    # Left out of the JSON when empty: a table's references are written as they always were.
    passage: str = Field(
        default="",
        exclude_if=lambda passage: not passage,
        description="A collection paper's full-text passage closest to the idea, when it has a "
        "full text (a table row has none).",
    )

    def text(self) -> str:
        """What is read of the reference besides its title: the abstract, then the passage."""
        return f"{self.abstract}\n\n{self.passage}" if self.passage else self.abstract


class RelatedWorkRequest(BaseModel):
    """What a user asks: a related-work section for a research idea."""

    idea: str = Field(min_length=1, description="The research idea the section motivates.")
    sentences: int = Field(ge=1, description="At most this many sentences (N).")
    words: int = Field(ge=1, description="At most this many words, citations not counted (W).")
    top_k: int = Field(ge=1, description="References given to the writer; each is cited.")


class DebateVerdict(BaseModel):
    """The debate agent's judgement of one reference against the idea."""

    arguments_for: list[str]
    quotes_for: list[str] = Field(description="The abstract's own words that support relevance.")
    arguments_against: list[str]
    quotes_against: list[str] = Field(
        default_factory=list, description="The abstract's own words that speak against it."
    )
    probability: int = Field(ge=1, le=100, description="Probability (%) that it is relevant.")

    @model_validator(mode="before")
    @classmethod
    def _one_quote_list(cls, data: Any) -> Any:
        """A verdict stored before the debate quoted each side: its one list (`quotes`, the
        quotes supporting relevance) is read as the quotes for."""
        if isinstance(data, dict) and "quotes" in data and "quotes_for" not in data:
            data = {("quotes_for" if key == "quotes" else key): v for key, v in data.items()}
        return data


class RetrievedReference(BaseModel):
    """A reference found for the idea, with where each retriever ranked it (1-based)."""

    reference: Reference
    retrieval_rank: int = Field(ge=1, description="After fusion and MMR.")
    bm25_rank: int | None = Field(default=None, description="None: no term in common.")
    dense_rank: int | None = None
    fused_score: float = Field(description="Reciprocal Rank Fusion score.")


class ScoredReference(RetrievedReference):
    verdict: DebateVerdict


class RelatedWork(BaseModel):
    """A related-work section, every citation one of `references`, each of them cited."""

    request: RelatedWorkRequest
    engine: str = Field(description="What wrote the section: `offline` or the writer's model.")
    debate_engine: str = Field(description="What scored the candidates.")
    text: str = Field(description="Plain paragraphs citing as `[id]`.")
    cited_ids: list[str] = Field(description="In order of first citation.")
    references: list[ScoredReference] = Field(
        description="The top-k given to the writer, most relevant first."
    )
    candidates: list[ScoredReference] = Field(
        description="Every retrieved reference that was debated, in retrieval order."
    )
    search_queries: list[str] = Field(
        default_factory=list,
        description="The queries written from the idea and searched besides it (fused by RRF).",
    )
    plan: str = Field(default="", description="The sentence plan the writer wrote to; empty: none.")
    table_rows: int = Field(description="Usable rows of the reference table.")
    skipped_rows: list[str] = Field(
        default_factory=list, description="Rows left out of the table, each with its reason."
    )
    sentences: int
    words: int = Field(description="Citations not counted.")
    within_length: bool = Field(description="At most the requested sentences and words.")
    revised: bool = Field(description="The writer was asked once to fix its section.")
    dropped_citations: list[str] = Field(
        default_factory=list, description="Ids cited that were not supplied, removed."
    )
    added_citations: list[str] = Field(
        default_factory=list,
        description="Top-k ids the writer left uncited, each added with a sentence of its own.",
    )
    trimmed_sentences: int = Field(default=0, description="Sentences cut to meet the length.")
    warnings: list[str] = Field(default_factory=list)
    grades: OutputGrades | None = Field(
        default=None,
        description="The support check's grade of each sentence against the abstracts it "
        "cites, for the page to mark the unsupported ones (None until graded).",
    )
