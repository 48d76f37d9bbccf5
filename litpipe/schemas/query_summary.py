"""Query-focused summaries (MAIS).

One request is a paper and a query. Diagnostic questions are written once; then each iteration
is a summary, the diagnostic questions answered from it alone, and the judge's verdict on those
answers against the paper. Every iteration is kept, so convergence can be reported over runs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from litpipe.schemas.evidence import Citation, RetrievedChunk
from litpipe.schemas.grades import OutputGrades
from litpipe.schemas.papers import sha256_text

SummaryRoute = Literal["evidence", "whole_paper"]
QuerySummaryStatus = Literal["approved", "max_iterations_reached"]


class QuerySummaryRequest(BaseModel):
    """What a reader asks: a query-focused summary of one paper."""

    paper_id: str
    query: str

    @field_validator("paper_id")
    @classmethod
    def _a_paper_id(cls, paper_id: str) -> str:
        paper_id = paper_id.strip()
        if not paper_id:
            raise ValueError("the paper id is empty: name the paper to summarize")
        return paper_id

    @field_validator("query")
    @classmethod
    def _a_query(cls, query: str) -> str:
        # Spacing is not meaning: the same words make the same request (and key).
        query = " ".join(query.split())
        if not query:
            raise ValueError("the query is empty: say what the summary should focus on")
        return query

    @property
    def key(self) -> str:
        """Stable, short and URL-safe (a partition key): the same paper and query, spaced
        alike, always give the same key."""
        return "q-" + sha256_text(f"{self.paper_id}\n{self.query}")[:16]


class DiagnosticQuestion(BaseModel):
    """A question whose answer a good summary for the query must hold."""

    question_id: str = Field(description="`<paper_id>:d<index>`, in the generator's order.")
    text: str
    topic: str = Field(
        description="What the question checks, in a few words: the topic of mismatch the judge "
        "names when the summary answers it wrongly."
    )


class QAPair(BaseModel):
    """A diagnostic question answered from the summary alone, and the judge's view of it."""

    question_id: str
    question: str
    answer: str = Field(description="From the summary alone.")
    accepted: bool = Field(description="The judge finds the answer consistent with the paper.")
    judgement: str = Field(default="", description="Why, when the judge says.")


class JudgeVerdict(BaseModel):
    approved: bool
    mismatch_topics: list[str] = Field(
        description="What the summary gets wrong or leaves out; empty when approved."
    )
    accuracy: float = Field(
        ge=0, le=1, description="Share of the diagnostic answers the judge accepts."
    )
    parts: int = Field(
        default=1,
        ge=1,
        description="Judge calls of the pass: 1 on what the summarizer read, or one per part of "
        "a paper longer than query_summary.context_tokens, which the judge checks whole.",
    )


class AtomicContentUnit(BaseModel):
    """An atomic content unit (ACU): one short fact of the paper that a summary for the query
    must hold; the share held is an iteration's ACU accuracy."""

    acu_id: str = Field(description="`<paper_id>:u<index>`, in the writer's order.")
    text: str


class SummaryIteration(BaseModel):
    """One pass of the loop: the summary, its diagnostic answers and the verdict."""

    iteration: int = Field(ge=1)
    revised_from: list[str] = Field(
        description="The mismatch topics the summarizer was given (empty on the first pass)."
    )
    summary: str = Field(description="Citing its source as `[paper_id:page]`.")
    highlights: list[str] = Field(description="The key points, each cited.")
    citations: list[Citation]
    qa: list[QAPair]
    verdict: JudgeVerdict
    acu_accuracy: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Share of the request's ACUs the summary holds; None without ACUs.",
    )


class QuerySummary(BaseModel):
    """A query-focused summary of one paper, with the trace of the loop that wrote it."""

    request: QuerySummaryRequest
    title: str
    status: QuerySummaryStatus
    route: SummaryRoute = Field(
        description="What the summarizer and the judge read: the paper's evidence retrieved "
        "for the query and the questions, or the whole paper (Self-Route)."
    )
    route_reason: str = Field(description="Why that route was taken.")
    questions: list[DiagnosticQuestion]
    acus: list[AtomicContentUnit] = Field(
        default_factory=list,
        description="The atomic content units each iteration's summary is checked against.",
    )
    iterations: list[SummaryIteration]
    max_iterations: int
    summary: str = Field(description="The last iteration's summary.")
    highlights: list[str]
    citations: list[Citation]
    source: list[RetrievedChunk] = Field(
        description="The passages the summarizer read, in reading order; the judge's too, "
        "unless the paper is longer than query_summary.context_tokens: then the judge reads it "
        "whole, in parts."
    )
    engine: str = Field(description="What wrote the summary: `offline` or a model.")
    engines: dict[str, str] = Field(description="What each agent of the loop ran on.")
    grades: OutputGrades | None = Field(
        default=None,
        description="The support check's grade of each sentence of the summary and its "
        "highlights, for the page to mark the unsupported ones (None until graded).",
    )


class IterationAccuracy(BaseModel):
    iteration: int = Field(ge=1)
    runs: int = Field(description="Runs that reached this iteration.")
    mean_accuracy: float
    mean_acu_accuracy: float | None = Field(
        default=None,
        description="Over the runs that reached this iteration with ACUs; None without any.",
    )


class ConvergenceReport(BaseModel):
    """How the MAIS loop converged over many requests (the table of the MAIS paper)."""

    runs: int
    approved: int
    approved_share: float
    single_iteration: int = Field(description="Runs approved at their first iteration.")
    single_iteration_share: float = Field(description="Of all runs, as MAIS reports it.")
    mean_iterations: float | None = Field(description="Over approved runs; None without any.")
    variance_iterations: float | None = Field(
        description="Sample variance (n - 1) of the iterations of approved runs; None with "
        "fewer than two."
    )
    max_iterations: list[int] = Field(description="The iteration caps the runs had.")
    accuracy_by_iteration: list[IterationAccuracy]
    engines: dict[str, list[str]] = Field(
        default_factory=dict, description="What each agent of the loop ran on, over the runs."
    )
    notice: str | None = Field(
        default=None,
        description="Set when the summarizer or the judge ran offline: why the figures then "
        "measure nothing about MAIS (`litpipe.report.notices`).",
    )
