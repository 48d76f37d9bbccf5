"""Pydantic models that flow between litpipe's stages.

Offsets are character offsets into `PaperDocument.text`; pages are 1-based. A chunk's
(`paper_id`, `char_start`, `char_end`) is enough for a citation to point at the exact place.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pdf_content_sha256(file_digest: str, fields: Mapping[str, str]) -> str:
    """A PDF's `PaperSource.content_sha256`: its bytes' hash (`file_digest`) alone, or with
    what a reference manager says of it (`fields`: title, authors, ...), so that an edit of
    those in the manager is a change of the paper, whose `paper_document` carries them. A plain
    PDF's is its bytes' hash, as it always was."""
    if not fields:
        return file_digest
    return sha256_text(json.dumps({"file": file_digest, "fields": dict(fields)}, sort_keys=True))


class PaperSource(BaseModel):
    """Where a paper comes from: a PDF file, or one row of an abstract table."""

    paper_id: str
    kind: Literal["pdf", "table_row"]
    path: str = Field(description="The PDF, or the table the row came from.")
    row_number: int | None = Field(default=None, description="1-based data row in the table.")
    external_id: str | None = Field(default=None, description="The table's own id for the row.")
    content_sha256: str = Field(
        description="Of the file's bytes (with a reference manager's fields, "
        "`pdf_content_sha256`), or of the row's fields."
    )
    size_bytes: int = 0
    fields: dict[str, str] = Field(
        default_factory=dict,
        description="A table row's columns (title, abstract and extras), or what a reference "
        "manager knows of a PDF (title, authors, year, venue, doi, abstract).",
    )


class Section(BaseModel):
    heading: str
    char_start: int
    char_end: int
    page_start: int
    page_end: int


class PaperReference(BaseModel):
    """What a reference list says of a paper besides its title: from the user's reference
    manager (Zotero, BibTeX) or an abstract table's columns."""

    authors: list[str] = Field(
        default_factory=list,
        description="In order; `Family, Given` where the family name is known, else as written.",
    )
    year: int | None = None
    venue: str | None = Field(default=None, description="Journal, proceedings, book or publisher.")
    doi: str | None = None

    def label(self) -> str:
        """The author-year label: `Müller (2021)`, `Müller and Smith (2021)`, `Müller et al.
        (2021)`; `n.d.` without a year, the year alone without authors."""
        year = str(self.year) if self.year is not None else "n.d."
        names = [family_name(author) for author in self.authors if author.strip()]
        if not names:
            return f"({year})"
        if len(names) == 1:
            who = names[0]
        elif len(names) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        return f"{who} ({year})"


def family_name(author: str) -> str:
    """The family name of `Family, Given`; a name written without a comma (an organisation,
    or a name whose parts are not known) is given whole."""
    family, comma, _ = author.partition(",")
    return " ".join((family if comma else author).split())


class PaperDocument(BaseModel):
    """A parsed paper: clean body text (no references) and where each part of it lies."""

    paper_id: str
    source_path: str
    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = Field(
        default=None, description="Publication year, from a reference manager or a table."
    )
    venue: str | None = Field(
        default=None, description="Journal, proceedings, book or publisher, as `year`."
    )
    abstract: str = ""
    text: str = Field(description="Body text, sections in reading order, references excluded.")
    sections: list[Section] = Field(default_factory=list)
    page_starts: list[int] = Field(
        default_factory=list,
        description="Offset in `text` where each page begins; page_starts[0] is page 1.",
    )
    pages: int = 0
    references: list[str] = Field(default_factory=list)
    doi: str | None = None
    arxiv_id: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)

    def reference(self) -> PaperReference | None:
        """What a reference list says of the paper: None unless a reference manager or a
        table gave its year or venue (a PDF's own first page gives neither, and its authors,
        read from the layout, are a guess)."""
        if self.year is None and not self.venue:
            return None
        return PaperReference(
            authors=self.authors, year=self.year, venue=self.venue or None, doi=self.doi
        )

    @classmethod
    def single_section(cls, *, heading: str, text: str, **fields: Any) -> PaperDocument:
        """A one-page document whose whole text is one section (an abstract-only paper)."""
        section = Section(
            heading=heading, char_start=0, char_end=len(text), page_start=1, page_end=1
        )
        return cls(text=text, sections=[section], page_starts=[0], pages=1, **fields)

    def page_at(self, offset: int) -> int:
        """1-based page holding `offset` (1 for documents without page information)."""
        if not self.page_starts:
            return 1
        return max(1, bisect.bisect_right(self.page_starts, offset))


class Chunk(BaseModel):
    chunk_id: str = Field(description="`<paper_id>:<index>`, stable while the text is.")
    paper_id: str
    index: int
    section: str
    page_start: int
    page_end: int
    char_start: int
    char_end: int
    text: str
    n_tokens: int = Field(description="Length in the embedder's tokens, special tokens excluded.")
    content_sha256: str


class PaperChunks(BaseModel):
    paper_id: str
    title: str = Field(
        default="", description="The paper's title: BM25 reads it with each of its chunks."
    )
    tokenizer: str = Field(description="The embedder whose tokens sized the chunks.")
    max_tokens: int
    overlap_tokens: int
    chunks: list[Chunk]


class EmbeddingResult(BaseModel):
    """What `chunk_embeddings` did for one paper; the vectors themselves live in LanceDB."""

    paper_id: str
    embedder_id: str
    table: str
    chunks: int
    embedded: int = Field(description="Chunks embedded in this run (not found in the store).")
    reused: int = Field(description="Chunks whose (content hash, embedder) was already stored.")
    removed: int = Field(default=0, description="Stale rows of this paper deleted.")


class FailedPaper(BaseModel):
    paper_id: str | None
    file: str
    row: int | None = None
    reason: str


class PaperFailure(BaseModel):
    """Why a per-paper asset last failed for a paper, in the step that built it with others."""

    paper_id: str
    asset: str
    reason: str
    run_id: str


class IngestError(Exception):
    """Bad input for one paper: the message is the one-line reason shown to the user."""


class LeftOutPaper(BaseModel):
    """A paper of a collection that its synthesis does not cover, and why."""

    paper_id: str
    reason: str = Field(description="One line: why it is not in the synthesis.")


# The collection steps the synthesis can do without: a model that fails one costs only it.
OptionalStep = Literal["cross_paper_questions", "follow_up_questions", "plain_summary"]
OPTIONAL_STEP_NAMES: dict[OptionalStep, str] = {
    "cross_paper_questions": "the cross-paper questions",
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
    outputs: dict[str, str] = Field(description="The files written, by name.")
    checks: list[CheckReport] = Field(
        default_factory=list, description="The syntheses' checks, as last evaluated."
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
    llm_calls: dict[str, int] = Field(description="Model calls made, answered from cache, failed.")
    llm_calls_by_agent: dict[str, LLMUsage] = Field(
        default_factory=dict, description="The same per agent, i.e. per stage."
    )
    tokens: dict[str, int] = Field(description="Model tokens in and out in this run.")
    cost_usd: float = Field(description="What this run's model calls cost, where prices are known.")
    embedder: str
    lancedb_table: str
    lancedb_rows: int
    timings: dict[str, float] = Field(description="Seconds per phase and in total.")


class PaperAbstract(BaseModel):
    """A paper's title and abstract: parsed when the paper has one, written by an agent if not."""

    paper_id: str
    title: str
    abstract: str
    source: Literal["parsed", "generated"]
    engine: str = Field(description="`parsed`, `offline` or the model that wrote it.")
    reference: PaperReference | None = Field(
        default=None,
        description="Authors, year, venue and DOI, where a reference manager or a table gave them.",
    )


QuestionStyle = Literal["broad", "inner_workings", "comparative", "follow_up"]


class Question(BaseModel):
    question_id: str = Field(
        description="`<paper_id>:q<index>` for a paper's own questions, `<paper_id>:f<index>` "
        "for its follow-ups, `<collection>:x<index>` for comparative ones; stable while the "
        "questions are."
    )
    paper_id: str = Field(description="The paper asked about; empty for a comparative question.")
    style: QuestionStyle
    text: str
    papers: list[str] = Field(
        default_factory=list, description="The papers a comparative question compares."
    )


class PaperQuestions(BaseModel):
    paper_id: str
    engine: str = Field(description="`offline` or the model that wrote the questions.")
    questions: list[Question]


class LLMUsage(BaseModel):
    """Model calls and their cost, for one asset or one run."""

    made: int = 0
    cached: int = 0
    failed: int = 0
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


class RetrievedChunk(BaseModel):
    """A chunk found by hybrid retrieval, with where it sits in its paper and how each retriever
    ranked it (ranks from 1; None when that retriever did not return it)."""

    chunk_id: str
    paper_id: str
    section: str
    page_start: int
    page_end: int
    char_start: int
    char_end: int
    text: str
    bm25_rank: int | None = None
    bm25_score: float | None = None
    dense_rank: int | None = None
    dense_score: float | None = Field(default=None, description="Cosine similarity to the query.")
    fused_rank: int = Field(description="Rank by Reciprocal Rank Fusion, before diversification.")
    fused_score: float
    rerank_score: float | None = Field(
        default=None, description="The reranker's score (its own scale); None when not reranked."
    )
    rerank_reason: str | None = Field(
        default=None, description="Why the reranker scored it so, when it says (LLM rerankers)."
    )


class QuestionEvidence(BaseModel):
    """One question's evidence: its best chunks after fusion, diversification and reranking."""

    question: Question
    chunks: list[RetrievedChunk]
    reranked: bool = Field(
        description="False when no reranker is configured or it failed (fused order kept)."
    )


class PaperEvidence(BaseModel):
    paper_id: str
    scope: Literal["own", "all", "others"] = Field(
        description="Where the questions looked: the paper's own chunks, or the chunks of every "
        "paper that shares a collection with it (`all`), or of those papers but it (`others`)."
    )
    reranker: str = Field(description="The configured reranker's version, `none` without one.")
    questions: list[QuestionEvidence]


class CorpusIndex(BaseModel):
    """A collection's retrieval index: its BM25 index (persisted) over the embedder's table."""

    collection: str
    embedder_id: str
    papers: int
    chunks: int
    bm25_fingerprint: str = Field(description="Names the BM25 index file; changes with any chunk.")
    bm25_built: bool = Field(description="False when the saved index was up to date and loaded.")


class StoredChunk(BaseModel):
    """Where a chunk lies, as the chunk store (a LanceDB row) records it."""

    chunk_id: str
    paper_id: str
    page_start: int
    page_end: int


class Citation(BaseModel):
    """A citation in written text: its marker `[paper_id:page]` and the chunks it stands for,
    those of that paper's page among the evidence the writer was given."""

    marker: str = Field(description="As written in the text, e.g. `[10.1093_nar_gkae252:4]`.")
    paper_id: str
    page: int
    chunk_ids: list[str] = Field(description="Never empty: a citation resolves to its chunks.")


class Answer(BaseModel):
    """A question answered only from its evidence, every claim cited."""

    question: Question
    text: str = Field(description="The answer, citing its evidence as `[paper_id:page]`.")
    citations: list[Citation]
    evidence: list[RetrievedChunk] = Field(description="The chunks the answer was written from.")
    views: dict[str, str] = Field(
        default_factory=dict,
        description="Multi-view answering: what the summarizer, extractor and reasoner each "
        "wrote before the reconciliation (empty in single-view mode).",
    )
    candidates: dict[str, str] = Field(
        default_factory=dict,
        description="`multi_view_answers`: the candidate answer written from each view, which "
        "the comparison picked from or merged (empty in the other modes).",
    )
    engine: str = Field(description="`offline` or the model that wrote it.")


AnswerMode = Literal["single", "multi_view", "multi_view_answers"]


class PaperAnswers(BaseModel):
    paper_id: str
    mode: AnswerMode
    engine: str
    answers: list[Answer]


class CrossPaperQuestions(BaseModel):
    """A collection's comparative questions, searched across all its papers and answered."""

    collection: str
    engine: str
    answers: list[Answer] = Field(description="One per comparative question, in their order.")
    not_run: StepNotRun | None = Field(
        default=None, description="Why there are none, when the model work failed."
    )


RelationshipType = Literal["extension", "contradiction", "complementary", "improvement", "parallel"]
RELATIONSHIP_TYPES: tuple[RelationshipType, ...] = (
    "extension",
    "contradiction",
    "complementary",
    "improvement",
    "parallel",
)


class Insight(BaseModel):
    """The key insight of one question-and-answer pair."""

    insight_id: str = Field(description="`i<index>`, in the order of the analysis.")
    paper_id: str = Field(description="The paper it is about; empty for a comparative one.")
    papers: list[str] = Field(description="Every paper it concerns (its citations' papers).")
    question_ids: list[str] = Field(description="The question(s) whose answer it comes from.")
    text: str
    citations: list[Citation]


class Relationship(BaseModel):
    """How an insight of one paper relates to an insight of another."""

    source: str = Field(description="Insight id.")
    target: str = Field(description="Insight id, of another paper.")
    type: RelationshipType
    explanation: str = Field(description="One or two sentences.")


class FollowUp(BaseModel):
    """The refinement pass for one paper whose insights were thin."""

    paper_id: str
    reason: str = Field(description="Why the paper was thin: too few insights, or unnamed.")
    answers: list[Answer] = Field(description="The follow-up questions, retrieved and answered.")


class RelationshipAnalysis(BaseModel):
    collection: str
    engine: str
    papers: list[str] = Field(description="The collection's papers that have answers.")
    theme: str
    narrative: str = Field(description="3-5 sentences naming every paper.")
    insights: list[Insight]
    relationships: list[Relationship]
    type_distribution: dict[str, int] = Field(
        description="Relationships of each type, every type listed (a corpus where all are "
        "`complementary` is a warning sign)."
    )
    follow_ups: list[FollowUp] = Field(
        default_factory=list, description="The refinement pass: papers asked again, and why."
    )
    follow_ups_not_run: list[StepNotRun] = Field(
        default_factory=list,
        description="The thin papers whose follow-up questions failed (a model error), with why: "
        "the analysis is made without them.",
    )
    left_out: list[LeftOutPaper] = Field(
        default_factory=list,
        description="The collection's papers without answers (their own assets failed or are "
        "not built yet), with why: the analysis and the syntheses are of the others.",
    )
    references: dict[str, PaperReference] = Field(
        default_factory=dict,
        description="Authors, year, venue and DOI of the papers whose reference manager (or "
        "table) gave them, by paper id: the reference lists' author-year labels.",
    )


SynthesisPattern = Literal["stuff", "map_reduce", "hierarchical", "refine"]

# Grading of a written output (`litpipe.evaluation.grading`): each sentence split into its cited
# segments, each segment graded against its own markers' passages.

Verdict = Literal["supported", "partially_supported", "unsupported"]
# A sentence's verdict: its worst segment's, or `uncited` when it has no marker.
SentenceVerdict = Literal["supported", "partially_supported", "unsupported", "uncited"]


class SegmentGrade(BaseModel):
    """One cited segment of a sentence (its text up to and with one group of markers) against
    the passages those markers cite."""

    text: str = Field(description="The segment as written, markers included.")
    markers: list[str] = Field(description="Its markers, as the citation format names them.")
    verdict: Verdict
    reason: str = Field(description="Why, in a sentence: the judge's, or the score's.")
    score: float | None = Field(
        default=None, description="The offline support score (None when a judge graded it)."
    )
    missing: list[str] = Field(
        default_factory=list, description="Offline: the segment's words its passages lack."
    )


class SentenceGrade(BaseModel):
    """One sentence of an output: its segments' grades and the worst of them."""

    sentence: str
    verdict: SentenceVerdict
    segments: list[SegmentGrade] = Field(description="Empty for an uncited sentence.")


class OutputGrades(BaseModel):
    """Every prose sentence of one output, graded in text order."""

    grader: str = Field(description="`offline` or the judge's model.")
    sentences: list[SentenceGrade]


class Synthesis(BaseModel):
    """A collection's written synthesis, expert or plain-language, every claim cited."""

    collection: str
    audience: Literal["expert", "plain"]
    engine: str
    pattern: SynthesisPattern = Field(
        description="How the writer fit the evidence in its context: all at once (`stuff`), "
        "one summary per paper then their combination (`map_reduce`), a tree of cluster "
        "summaries (`hierarchical`), or one summary refined paper by paper (`refine`)."
    )
    title: str
    text: str = Field(description="Markdown, citing as `[paper_id:page]`.")
    citations: list[Citation]
    papers: list[str] = Field(description="The collection's papers, each to be cited.")
    appended: list[str] = Field(
        default_factory=list,
        description="Papers the writer left uncited that the text cites only through the "
        '"Also in this collection" sentences appended after it (the coverage check counts '
        "them apart from the writer's own).",
    )
    left_out: list[LeftOutPaper] = Field(
        default_factory=list,
        description="The collection's papers the text does not cover, with why: those without "
        "answers (`RelationshipAnalysis.left_out`) and those of `papers` with nothing to cite "
        "(the coverage check names them and warns).",
    )
    grades: OutputGrades | None = Field(
        default=None,
        description="The faithfulness check's grade of each sentence, for the page to mark "
        "the unsupported ones (None until graded).",
    )
    not_run: StepNotRun | None = Field(
        default=None,
        description="For the plain-language summary, optional: why it is empty, when its model "
        "work failed.",
    )


class CollectionOutputs(BaseModel):
    """The files written for people in `LITPIPE_HOME/outputs/<collection>/`."""

    collection: str
    files: dict[str, str] = Field(description="Name (`synthesis.md`, ...) to path.")


# Query-focused summaries (MAIS)
#
# One request is a paper and a query. Diagnostic questions are written once; then each iteration
# is a summary, the diagnostic questions answered from it alone, and the judge's verdict on those
# answers against the paper. Every iteration is kept, so convergence can be reported over runs.

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


# Related work (LitLLM)
#
# A request is a table of reference abstracts and a research idea. The abstracts are searched
# (BM25 and dense, fused, diversified by MMR), each candidate is debated against the idea
# (arguments for and against, quotes, a probability), and the top-k go to a writer whose section
# cites them as `[id]`, `id` being the table's own id column.


class Reference(BaseModel):
    """One row of a reference table, cited as `[id]`."""

    id: str = Field(description="The table's `id` column, exactly as it is cited: `[id]`.")
    title: str
    abstract: str


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


# Nightly digest
#
# One digest per UTC day: the papers the catalog first registered that day, each in brief, and
# how their insights relate to those of the papers their collections held before that day.


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
