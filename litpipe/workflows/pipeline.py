"""The main chain without Dagster: a collection's papers to its expert synthesis and its plain
summary, in one process, by the same functions the assets call, stage by stage in the graph's
order.

    from litpipe.ingest.sources import discover
    from litpipe.settings import Settings
    from litpipe.settings.groups import settings_groups
    from litpipe.workflows import pipeline

    settings = Settings(home=Path("lit-home"))  # offline; set llm.model for a model
    result = pipeline.run(discover(Path("papers/")), settings_groups(settings))
    print(result.synthesis.text)

Per paper: its document (`paper_document`: a PDF parsed, or an abstract table's row), chunks
(`paper_chunks`), vectors in the embedder's LanceDB table under the home
(`chunk_embeddings`), abstract, questions, evidence and answers. Then for the collection:
comparative questions (`cross_paper_questions`, over the collection's BM25 index, which
`corpus_index` builds), the relationship analysis with its follow-up questions, the expert
synthesis and the plain summary. A paper that cannot be read, or whose model stages fail (a
model error), is left out, named with why, as the graph leaves out a paper whose run failed; an
optional collection step that the model fails is recorded as not run (`optional_steps`).

What the graph adds and this does not: the catalog and its partitions, artifacts and data
versions (every call here runs again), the grades and checks of the syntheses (the evaluation
layer sits above the workflows) and the files of `collection_outputs`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from litpipe.agents.asker import Asker
from litpipe.agents.base import ModelClient
from litpipe.agents.paper_abstract import paper_abstract_from
from litpipe.agents.paper_questions import paper_questions_from
from litpipe.ingest.sources import Discovery, unique_papers
from litpipe.llm import model_client
from litpipe.llm.errors import LLMError
from litpipe.llm.usage import UsageLedger
from litpipe.retrieval.evidence import gather_evidence
from litpipe.retrieval.hybrid import HybridRetriever
from litpipe.retrieval.store import ChunkStore
from litpipe.schemas import (
    CitationGraph,
    CrossPaperQuestions,
    EmbeddingResult,
    IngestError,
    LeftOutPaper,
    PaperAbstract,
    PaperAnswers,
    PaperChunks,
    PaperDocument,
    PaperEvidence,
    PaperQuestions,
    RelationshipAnalysis,
    Synthesis,
)
from litpipe.settings.groups import SettingsGroups
from litpipe.workflows.citation_graph import citation_graph, cited_relationships
from litpipe.workflows.cross_paper_questions import cross_paper
from litpipe.workflows.ingest import chunk_paper, read_document, settings_embedder
from litpipe.workflows.optional_steps import error_reason
from litpipe.workflows.paper_answers import answer_paper
from litpipe.workflows.paper_references import paper_references
from litpipe.workflows.plain_summary import plain_summary
from litpipe.workflows.relationship_analysis import analyse, follow_up_answerer
from litpipe.workflows.reranking import settings_reranker
from litpipe.workflows.synthesis import write_synthesis

if TYPE_CHECKING:
    pass

# The usage ledger of a run without Dagster, under the home's usage/.
USAGE_SCOPE = "pipeline"


class PaperResult(BaseModel):
    """One paper's outputs, stage by stage."""

    document: PaperDocument
    chunks: PaperChunks
    embeddings: EmbeddingResult
    abstract: PaperAbstract
    questions: PaperQuestions
    evidence: PaperEvidence
    answers: PaperAnswers


class PipelineResult(BaseModel):
    """The collection's outputs: each paper's (in the collection's order, by paper id), the
    papers left out with why, and the collection stages'."""

    collection: str
    papers: list[PaperResult]
    left_out: list[LeftOutPaper] = Field(default_factory=list)
    cross_paper_questions: CrossPaperQuestions
    citation_graph: CitationGraph
    relationship_analysis: RelationshipAnalysis
    synthesis: Synthesis
    plain_summary: Synthesis


def run(
    discovery: Discovery, groups: SettingsGroups, client: ModelClient | None = None
) -> PipelineResult:
    """The main chain over the papers of `discovery` (one collection's), offline or with the
    model the `llm` group routes each agent to: through `client` when given (a caller's, recording
    its usage), else one of its own."""
    sources = sorted(unique_papers(iter(discovery.sources)), key=lambda s: s.paper_id)
    collection = discovery.collection
    # Every agent without a route of its own takes the default one, `route("")`'s.
    asker = Asker(groups["llm"], client)
    if client is None:
        # For the routes the asker resolved, which it asks by.
        asker.client = model_client(
            groups["llm"],
            groups["paths"],
            [asker.route(agent) for agent in ["", *groups["llm"].agents]],
            UsageLedger(groups["paths"].usage_dir / f"{USAGE_SCOPE}.jsonl"),
        )
    embedder = settings_embedder(groups["ingest"], groups["paths"])
    store = ChunkStore(groups["paths"].lancedb_dir)

    documents: dict[str, PaperDocument] = {}
    left_out: list[LeftOutPaper] = []
    for source in sources:
        try:
            documents[source.paper_id] = read_document(source, groups["ingest"])
        except IngestError as error:
            left_out.append(
                LeftOutPaper(paper_id=source.paper_id, reason=f"{source.path}: {error}")
            )
    chunks = {
        paper_id: chunk_paper(
            document, embedder, groups["ingest"].chunk_tokens, groups["ingest"].chunk_overlap_tokens
        )
        for paper_id, document in documents.items()
    }
    embedded = {
        result.paper_id: result for result in store.embed_papers(list(chunks.values()), embedder)
    }

    def retriever(paper_id: str | None = None) -> HybridRetriever:
        """Over one paper (its BM25 index in memory), or over the collection (its index saved
        under `groups["paths"].bm25_dir`, as `corpus_index` saves it)."""
        return HybridRetriever(
            store,
            embedder,
            collection,
            None if paper_id else groups["paths"].bm25_dir,
            rrf_k=groups["retrieval"].rrf_k,
            mmr_lambda=groups["retrieval"].mmr_lambda,
            papers=[paper_id] if paper_id else list(chunks),
        )

    reranker = settings_reranker(groups["retrieval"], groups["ingest"], asker)

    def built(paper_id: str, document: PaperDocument) -> PaperResult:
        """The paper's model stages, from its abstract to its answers."""
        abstract = paper_abstract_from(document, asker)
        asked = paper_questions_from(
            abstract, asker, per_style=groups["synthesis"].questions_per_style
        )
        found = gather_evidence(
            asked,
            retriever(paper_id if groups["retrieval"].evidence_scope == "own" else None),
            reranker,
            scope=groups["retrieval"].evidence_scope,
            candidates=groups["retrieval"].candidates,
            rerank_candidates=groups["retrieval"].rerank_candidates,
            keep=groups["retrieval"].evidence_per_question,
        )
        return PaperResult(
            document=document,
            chunks=chunks[paper_id],
            embeddings=embedded[paper_id],
            abstract=abstract,
            questions=asked,
            evidence=found,
            answers=answer_paper(found, groups["synthesis"], asker),
        )

    results: dict[str, PaperResult] = {}
    for paper_id, document in documents.items():
        try:
            results[paper_id] = built(paper_id, document)
        except LLMError as error:  # as the graph leaves out a paper whose own run failed
            left_out.append(
                LeftOutPaper(paper_id=paper_id, reason=f"its own run failed: {error_reason(error)}")
            )
    abstracts = {paper_id: result.abstract for paper_id, result in results.items()}
    answers = {paper_id: result.answers for paper_id, result in results.items()}

    comparative = cross_paper(
        collection,
        list(abstracts.values()),
        retriever(),
        reranker,
        groups["retrieval"],
        groups["synthesis"],
        asker,
    )
    graph = citation_graph(
        collection,
        {paper_id: paper_references(document) for paper_id, document in documents.items()},
    )
    analysis = analyse(
        collection,
        answers,
        comparative,
        abstracts,
        follow_up_answerer(retriever, reranker, groups["retrieval"], groups["synthesis"], asker),
        groups["synthesis"],
        asker,
        embedder,
        cited_relationships(graph.among(answers), chunks),
    )
    analysis.left_out = left_out
    titles = {paper_id: abstract.title for paper_id, abstract in abstracts.items()}
    synthesis = write_synthesis(
        analysis,
        answers,
        comparative,
        titles,
        groups["synthesis"],
        groups["ingest"],
        groups["paths"],
        asker,
    )
    plain = plain_summary(analysis, synthesis, titles, asker)
    return PipelineResult(
        collection=collection,
        papers=list(results.values()),
        left_out=left_out,
        cross_paper_questions=comparative,
        citation_graph=graph,
        relationship_analysis=analysis,
        synthesis=synthesis,
        plain_summary=plain,
    )
