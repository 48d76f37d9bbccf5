"""What runs and steps report: the papers a synthesis leaves out, the optional steps that did
not run, the checks' results, model usage, and `report.json`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from litpipe.schemas.changes import SynthesisDiff
from litpipe.schemas.papers import FailedPaper

# How the reason of a retracted paper left out begins: `retracted`, or `retracted: <why>`.
_RETRACTED = "retracted"


class LeftOutPaper(BaseModel):
    """A paper of a collection that its synthesis does not cover, and why."""

    paper_id: str
    reason: str = Field(description="One line: why it is not in the synthesis.")

    @classmethod
    def retracted(cls, paper_id: str, why: str) -> LeftOutPaper:
        """A retracted paper, left out with the reason given when it was marked."""
        return cls(paper_id=paper_id, reason=f"{_RETRACTED}: {why}" if why else _RETRACTED)

    @property
    def is_retracted(self) -> bool:
        return self.reason == _RETRACTED or self.reason.startswith(f"{_RETRACTED}: ")


# The collection steps the synthesis can do without: a model that fails one costs only it.
OptionalStep = Literal[
    "cross_paper_questions", "follow_up_questions", "plain_summary", "comparison_table"
]
OPTIONAL_STEP_NAMES: dict[OptionalStep, str] = {
    "cross_paper_questions": "the cross-paper questions",
    "comparison_table": "the comparison table",
    "follow_up_questions": "the follow-up questions",
    "plain_summary": "the plain-language summary",
}


class StepNotRun(BaseModel):
    """An optional collection step whose model work failed: its output is left empty (or
    without that part) and the synthesis is written all the same."""

    step: OptionalStep
    paper_id: str | None = Field(
        default=None, description="For follow-up questions: the thin paper they were for."
    )
    reason: str = Field(description="One line: the model error.")

    def line(self) -> str:
        """What a reader is told: which step did not run, and why."""
        name = OPTIONAL_STEP_NAMES[self.step]
        for_paper = f" for {self.paper_id}" if self.paper_id else ""
        return f"{name[:1].upper()}{name[1:]}{for_paper} did not run: {self.reason}"


class CheckReport(BaseModel):
    """The latest result of one asset check of a collection."""

    asset: str
    check: str
    passed: bool | None = Field(
        description="null when the check could not run (skipped: neither passed nor failed; "
        "`description` says why)."
    )
    severity: Literal["error", "warn"] = Field(description="`error` checks block what follows.")
    description: str

    def verdict(self) -> str:
        """As the command line says it: passed, skipped, or FAILED with its severity."""
        if self.passed is None:
            return "skipped"
        return "passed" if self.passed else f"FAILED ({self.severity})"


class CitationReport(BaseModel):
    """The collection's citation graph, for `report.json`: its counts, and what could not be
    linked, named."""

    references: int = Field(description="Entries of its papers' reference lists.")
    edges: int = Field(description="Citations between papers of the collection.")
    cited_relationships: dict[str, int] = Field(
        default_factory=dict, description="The edges by the type their citing sentences give."
    )
    often_cited: int = Field(description="Works two papers or more cite that it lacks.")
    untitled_references: dict[str, list[str]] = Field(
        default_factory=dict, description="By paper: the entries (raw) no title was read from."
    )
    unresolved_markers: dict[str, list[str]] = Field(
        default_factory=dict, description="By paper: the markers naming no entry, with why."
    )
    ambiguous_references: list[str] = Field(
        default_factory=list,
        description="References naming several papers of the collection, left unmatched: "
        "`citing paper: entry (the papers)`.",
    )


class SynthesisReport(BaseModel):
    """What the collection stages produced, for `report.json`."""

    papers: int = Field(description="Papers the analysis covers (those with answers).")
    comparative_questions: int
    insights: int
    relationships: int
    relationship_types: dict[str, int]
    follow_up_papers: list[str] = Field(description="Thin papers asked follow-up questions.")
    synthesis_pattern: str
    synthesis_words: int
    plain_words: int
    cited_papers: int = Field(description="Papers the expert synthesis cites.")
    appended_papers: int = Field(
        default=0,
        description='Of those, papers cited only by an appended "Also in this collection" '
        "sentence: the writer left them uncited.",
    )
    left_out: list[LeftOutPaper] = Field(
        default_factory=list,
        description="Papers of the collection the expert synthesis does not cover, with why.",
    )
    citations: CitationReport | None = Field(
        default=None, description="How its papers cite each other, once the graph is built."
    )
    outputs: dict[str, str] = Field(description="The files written, by name.")
    checks: list[CheckReport] = Field(
        default_factory=list, description="The syntheses' checks, as last evaluated."
    )
    changes: SynthesisDiff | None = Field(
        default=None,
        description="What this run changed in the synthesis: from the version kept when it "
        "started to the latest (`litpipe diff`).",
    )


class RunReport(BaseModel):
    """`outputs/<collection>/report.json`: what one `litpipe run` did."""

    collection: str
    source: str
    papers: int = Field(description="Papers of the source that are ingested and embedded.")
    papers_materialized: int = Field(description="Of those, papers (re)built in this run.")
    papers_up_to_date: int
    chunks: int = Field(description="Chunks of the ingested papers.")
    embedded_chunks: int = Field(description="Chunks embedded in this run (the rest reused).")
    questions: int = Field(description="Questions of the ingested papers.")
    evidence_chunks: int = Field(description="Evidence chunks kept for those questions.")
    answers: int = Field(default=0, description="Answers written for those questions.")
    synthesis: SynthesisReport | None = Field(
        default=None, description="The collection's analysis and syntheses, once written."
    )
    failed_papers: list[FailedPaper]
    collection_failure: str | None = Field(
        default=None, description="Why the collection's assets (its index) failed, if they did."
    )
    engine: str = Field(description="What wrote the text outputs: `offline` without an LLM.")
    llm_calls: dict[str, int] = Field(
        description="Model calls `made`, answered from the cache (`cached`), `failed` for good "
        "after their retries; and the `requests_sent` to the servers, every retry included."
    )
    llm_calls_by_agent: dict[str, LLMUsage] = Field(
        default_factory=dict, description="The same per agent, i.e. per stage."
    )
    tokens: dict[str, int] = Field(description="Model tokens in and out in this run.")
    cost_usd: float = Field(description="What this run's model calls cost, where prices are known.")
    embedder: str
    lancedb_table: str
    lancedb_rows: int
    timings: dict[str, float] = Field(description="Seconds per phase and in total.")


class LLMUsage(BaseModel):
    """Model calls and their cost, for one asset or one run."""

    made: int = Field(default=0, description="Calls a model answered (not from the cache).")
    cached: int = 0
    failed: int = Field(
        default=0, description="Calls that failed for good: after their retries, if any."
    )
    requests_sent: int = Field(
        default=0,
        description="Requests the model servers received: every try of every call, retries "
        "and repairs included (a cached call sends none, a call refused before it is sent, by "
        "the budget, none either).",
    )
    fallbacks: int = Field(
        default=0,
        description="Items written by the offline engine because the model's reply could not "
        "be used (marked `offline fallback` where they are shown).",
    )
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(
            **{name: getattr(self, name) + getattr(other, name) for name in LLMUsage.model_fields}
        )
