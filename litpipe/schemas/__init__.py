"""Pydantic models that flow between litpipe's stages, one module per kind of output:

- `papers`: a paper's source, parsed document, chunks and embeddings; the papers that failed;
- `evidence`: abstracts, questions, retrieved evidence, citations and answers;
- `relationships`: the relationship analysis: insights, typed relationships, follow-ups;
- `synthesis`: the written syntheses and the files written for people;
- `grades`: the grades of a written output's sentences;
- `query_summary`: query-focused summaries (MAIS) and their convergence;
- `collection_answer`: a question answered from a whole collection;
- `related_work`: related-work sections (LitLLM);
- `digest`: the nightly digest;
- `references`: a paper's reference list as records, and its citation contexts;
- `reports`: what runs and steps report: left-out papers, steps not run, checks, usage.

Import them from here (`from litpipe.schemas import Answer`): the modules are how the models are
kept, not how they are named.
"""

from __future__ import annotations

from litpipe.schemas.changes import (
    ClaimEnd,
    DiffSentence,
    RelationshipChange,
    SupportChange,
    SynthesisDiff,
)
from litpipe.schemas.collection_answer import (
    MAX_QUESTION_CHARS,
    NOT_ANSWERED,
    CollectionAnswer,
    CollectionAnswerRequest,
)
from litpipe.schemas.digest import (
    Digest,
    DigestCollection,
    DigestPaper,
    NightlyBudgetSpent,
    PaperArrival,
)
from litpipe.schemas.evidence import (
    Answer,
    AnswerMode,
    Citation,
    CorpusIndex,
    CrossPaperQuestions,
    PaperAbstract,
    PaperAnswers,
    PaperEvidence,
    PaperQuestions,
    Question,
    QuestionEvidence,
    QuestionStyle,
    RetrievedChunk,
    StoredChunk,
)
from litpipe.schemas.grades import (
    OutputGrades,
    SegmentGrade,
    SentenceGrade,
    SentenceVerdict,
    Verdict,
)
from litpipe.schemas.history import HistoryEntry
from litpipe.schemas.papers import (
    Chunk,
    EmbeddingResult,
    FailedPaper,
    IngestError,
    PaperChunks,
    PaperDocument,
    PaperFailure,
    PaperReference,
    PaperSource,
    Section,
    family_name,
    pdf_content_sha256,
    sha256_text,
)
from litpipe.schemas.query_summary import (
    AtomicContentUnit,
    ConvergenceReport,
    DiagnosticQuestion,
    IterationAccuracy,
    JudgeVerdict,
    QAPair,
    QuerySummary,
    QuerySummaryRequest,
    QuerySummaryStatus,
    SummaryIteration,
    SummaryRoute,
)
from litpipe.schemas.references import (
    CITATION_INTENT_LABELS,
    CitationContext,
    CitationContexts,
    CitationIntent,
    CitationIntentLabel,
    CitationMatch,
    CitationMatches,
    CitingSentence,
    CollectionPaper,
    MatchRule,
    OftenCited,
    ReferenceRecord,
    UnresolvedMarker,
)
from litpipe.schemas.related_work import (
    DebateVerdict,
    Reference,
    RelatedWork,
    RelatedWorkRequest,
    RetrievedReference,
    ScoredReference,
)
from litpipe.schemas.relationships import (
    RELATIONSHIP_TYPES,
    FollowUp,
    Insight,
    Relationship,
    RelationshipAnalysis,
    RelationshipType,
)
from litpipe.schemas.reports import (
    OPTIONAL_STEP_NAMES,
    CheckReport,
    LeftOutPaper,
    LLMUsage,
    OptionalStep,
    RunReport,
    StepNotRun,
    SynthesisReport,
)
from litpipe.schemas.synthesis import CollectionOutputs, Synthesis, SynthesisPattern

__all__ = [
    "CITATION_INTENT_LABELS",
    "MAX_QUESTION_CHARS",
    "NOT_ANSWERED",
    "OPTIONAL_STEP_NAMES",
    "RELATIONSHIP_TYPES",
    "Answer",
    "AnswerMode",
    "AtomicContentUnit",
    "CheckReport",
    "Chunk",
    "Citation",
    "CitationContext",
    "CitationContexts",
    "CitationIntent",
    "CitationIntentLabel",
    "CitationMatch",
    "CitationMatches",
    "CitingSentence",
    "ClaimEnd",
    "CollectionAnswer",
    "CollectionAnswerRequest",
    "CollectionOutputs",
    "CollectionPaper",
    "ConvergenceReport",
    "CorpusIndex",
    "CrossPaperQuestions",
    "DebateVerdict",
    "DiagnosticQuestion",
    "DiffSentence",
    "Digest",
    "DigestCollection",
    "DigestPaper",
    "EmbeddingResult",
    "FailedPaper",
    "FollowUp",
    "HistoryEntry",
    "IngestError",
    "Insight",
    "IterationAccuracy",
    "JudgeVerdict",
    "LLMUsage",
    "LeftOutPaper",
    "MatchRule",
    "NightlyBudgetSpent",
    "OftenCited",
    "OptionalStep",
    "OutputGrades",
    "PaperAbstract",
    "PaperAnswers",
    "PaperArrival",
    "PaperChunks",
    "PaperDocument",
    "PaperEvidence",
    "PaperFailure",
    "PaperQuestions",
    "PaperReference",
    "PaperSource",
    "QAPair",
    "QuerySummary",
    "QuerySummaryRequest",
    "QuerySummaryStatus",
    "Question",
    "QuestionEvidence",
    "QuestionStyle",
    "Reference",
    "ReferenceRecord",
    "RelatedWork",
    "RelatedWorkRequest",
    "Relationship",
    "RelationshipAnalysis",
    "RelationshipChange",
    "RelationshipType",
    "RetrievedChunk",
    "RetrievedReference",
    "RunReport",
    "ScoredReference",
    "Section",
    "SegmentGrade",
    "SentenceGrade",
    "SentenceVerdict",
    "StepNotRun",
    "StoredChunk",
    "SummaryIteration",
    "SummaryRoute",
    "SupportChange",
    "Synthesis",
    "SynthesisDiff",
    "SynthesisPattern",
    "SynthesisReport",
    "UnresolvedMarker",
    "Verdict",
    "family_name",
    "pdf_content_sha256",
    "sha256_text",
]
