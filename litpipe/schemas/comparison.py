"""A collection's comparison table: its papers as rows, its aspects as columns, every cell a
short value citing the passage of its own paper it came from, or "not reported"."""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.schemas.evidence import Citation, RetrievedChunk
from litpipe.schemas.grades import SentenceGrade
from litpipe.schemas.reports import StepNotRun

# What a cell says where its paper's passages do not give the aspect: never a guess.
NOT_REPORTED = "not reported"


class ComparisonCell(BaseModel):
    """One paper's value for one aspect."""

    aspect: str
    value: str = Field(
        description="A short value in the paper's terms, citing its passages as "
        f"`[paper_id:page]`; `{NOT_REPORTED}` where they do not give the aspect."
    )
    citations: list[Citation] = Field(
        description="The value's markers resolved to the row's passages; empty when not reported."
    )
    not_reported: bool
    engine: str = Field(description="`offline` or the model that wrote the cell.")
    grade: SentenceGrade | None = Field(
        default=None, description="The support check's grade of the value; None until graded."
    )


class ComparisonRow(BaseModel):
    """One paper's cells, in the table's aspect order, and the passages they were written
    from: the row depends on these, the aspects and the writer alone."""

    paper_id: str
    title: str
    cells: list[ComparisonCell]
    passages: list[RetrievedChunk] = Field(
        description="The paper's passages retrieved for the aspects, each once: what the cells "
        "may cite."
    )


class ComparisonTable(BaseModel):
    """A collection's comparison table."""

    collection: str
    aspects: list[str]
    aspects_engine: str = Field(
        description="`settings` (comparison.aspects), `offline` (the fixed set) or the model "
        "that proposed them."
    )
    rows: list[ComparisonRow]
    not_run: list[StepNotRun] = Field(
        default_factory=list,
        description="What the model failed (a model error): the aspects (the table is then "
        "empty), or a paper's row (left out), each with why. The table is optional: the "
        "collection's outputs are written all the same.",
    )
