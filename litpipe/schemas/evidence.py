"""Questions and what answers them: a paper's abstract and questions, the evidence retrieved for
each (with where each retriever ranked it), the citations of written text, the answers, and a
collection's comparative questions answered."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from litpipe.schemas.papers import ChunkKind, PaperReference
from litpipe.schemas.reports import StepNotRun


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


class RetrievedChunk(BaseModel):
    """A chunk found by hybrid retrieval, with where it sits in its paper and how each retriever
    ranked it (ranks from 1; None when that retriever did not return it)."""

    chunk_id: str
    paper_id: str
    kind: ChunkKind = Field(default="text", description="Body text, a caption or a table.")
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
