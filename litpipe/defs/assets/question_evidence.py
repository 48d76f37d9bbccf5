"""Per-paper evidence: for each of the paper's questions, its best chunks with provenance."""

import dagster as dg

from litpipe.agents.question_evidence.rerankers import AGENT_RERANKERS
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.paper_batches import PaperBuild
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.steps import (
    SEARCH,
    PaperBatch,
    all_partitions,
    paper_asset,
    paper_batch,
)
from litpipe.defs.versions import RERANKER, RETRIEVAL_SETTINGS, CodeVersion
from litpipe.hashing import digest
from litpipe.retrieval import bm25, evidence, fusion, hybrid, mmr, rerank, text
from litpipe.retrieval.evidence import gather_evidence
from litpipe.retrieval.hybrid import HybridRetriever
from litpipe.schemas import PaperEvidence, PaperQuestions
from litpipe.settings import (
    HomePaths,
    IngestSettings,
    LLMSettings,
    OperationsSettings,
    RetrievalSettings,
)
from litpipe.workflows.reranking import settings_reranker

# The passages found: the retrieval code, the embedder, the retrieval settings (those of
# `RetrievalResource`) and the reranker.
CODE = CodeVersion(
    versions=(RERANKER,),
    modules=(bm25, evidence, fusion, hybrid, mmr, rerank, text),
    output=PaperEvidence,
    settings=("retrieval.evidence_scope", *RETRIEVAL_SETTINGS),
    embedder=True,
)


def question_evidence_step(retrieval: RetrievalSettings) -> ModelStep:
    """Only an LLM reranker makes this step call a model."""
    reranker = retrieval.reranker
    agents = (reranker,) if reranker in AGENT_RERANKERS else ()
    return ModelStep(agents=agents, code=CODE)


def build_question_evidence_assets(
    retrieval: RetrievalSettings,
    ingest: IngestSettings,
    llm: LLMSettings,
    operations: OperationsSettings,
    paths: HomePaths,
) -> list[dg.AssetsDefinition]:
    deps = [dg.AssetDep("paper_questions"), dg.AssetDep("chunk_embeddings")]
    if retrieval.evidence_scope != "own":
        # Evidence from other papers changes with the collection, whose index this reads.
        deps += all_partitions("corpus_index")

    @paper_asset(
        question_evidence_step(retrieval),
        {
            "retrieval": retrieval,
            "ingest": ingest,
            "llm": llm,
            "operations": operations,
            "paths": paths,
        },
        resources=SEARCH,
        group_name="question_evidence",
        deps=deps,
        description="For each question of the paper: candidates from BM25 and dense search, "
        "fused by Reciprocal Rank Fusion, diversified by MMR, reranked; the best few kept with "
        "each retriever's rank and score and their place in the paper (section, pages, offsets).",
    )
    def question_evidence(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        step = question_evidence_step(retrieval)
        with paper_batch(context, step) as papers:
            search, chunk_store = papers.resources.retrieval, papers.resources.lancedb.store()
            # Every question of the batch encoded by one call; each search then looks its
            # vector up.
            model = papers.resources.embedder.cached()
            questions = {
                paper_id: papers.store.read(["paper_questions"], paper_id, PaperQuestions)
                for paper_id in context.partition_keys
                if papers.store.exists(["paper_questions"], paper_id)
            }
            model.encode_ahead(q.text for asked in questions.values() for q in asked.questions)
            # For scope "own", each paper has its own retriever, over its chunks: those of the
            # whole batch are read in one query. Otherwise a paper searches the papers it shares
            # a collection with, and one retriever serves every paper of the batch held by the
            # same collections.
            own_retrievers: dict[str, HybridRetriever] = {}
            shared: dict[tuple[str, ...], HybridRetriever] = {}
            held_by = papers.catalog.collections_of(list(context.partition_keys))

            def retriever(paper_id: str) -> HybridRetriever:
                if search.scope == "own":
                    if not own_retrievers:
                        own_retrievers.update(
                            search.paper_retrievers(
                                chunk_store, model, list(context.partition_keys)
                            )
                        )
                    return own_retrievers[paper_id]
                names = tuple(held_by.get(paper_id, []))
                if names not in shared:
                    members = sorted({p for name in names for p in papers.catalog.papers(name)})
                    shared[names] = search.retriever(chunk_store, model, "+".join(names), members)
                return shared[names]

            reranker = settings_reranker(retrieval, ingest, papers.step.asker())

            def evidence_of(papers: PaperBatch, paper_id: str) -> PaperBuild[PaperEvidence]:
                found = gather_evidence(
                    # A paper without questions fails alone: its read says which file is missing.
                    questions[paper_id]
                    if paper_id in questions
                    else papers.store.read(["paper_questions"], paper_id, PaperQuestions),
                    retriever(paper_id),
                    reranker,
                    scope=search.scope,
                    candidates=search.candidates,
                    rerank_candidates=search.rerank_candidates,
                    keep=search.keep,
                )
                not_reranked = sum(not item.reranked for item in found.questions)
                if reranker.name != "none" and not_reranked:
                    context.log.warning(
                        f"{paper_id}: {not_reranked} of {len(found.questions)} questions kept "
                        f"the fused order: the {reranker.name} reranker failed on them (see the "
                        "warnings above)"
                    )
                return papers.paper(
                    found,
                    {
                        "questions": len(found.questions),
                        "chunks": sum(len(item.chunks) for item in found.questions),
                        "scope": found.scope,
                        "reranker": reranker.name,
                        "not_reranked": not_reranked,
                        "preview": markdown_metadata(_preview(found)),
                    },
                    answered_version(found),
                )

            return papers.build(evidence_of)

    return [question_evidence]


# How each retriever and the reranker scored a passage: answering never reads these.
_SCORES = {
    "bm25_rank",
    "bm25_score",
    "dense_rank",
    "dense_score",
    "fused_rank",
    "fused_score",
    "rerank_score",
    "rerank_reason",
}


def answered_version(found: PaperEvidence) -> dg.DataVersion:
    """The data version of what the answers are written from: the questions and, in order,
    their passages (text and place). Scores and ranks are left out, so evidence found again,
    by another embedder or reranker, in the same order leaves `paper_answers` fresh: it is not
    rerun, and keeps the scores of the retrieval that found its passages first."""
    passages = found.model_dump_json(
        exclude={
            "reranker": True,
            "questions": {"__all__": {"reranked": True, "chunks": {"__all__": _SCORES}}},
        }
    )
    return dg.DataVersion(digest(passages))


def _preview(found: PaperEvidence) -> str:
    lines = []
    for item in found.questions:
        lines.append(f"- **{item.question.text}**")
        for chunk in item.chunks:
            pages = (
                f"p. {chunk.page_start}"
                if chunk.page_start == chunk.page_end
                else f"pp. {chunk.page_start}-{chunk.page_end}"
            )
            excerpt = " ".join(chunk.text.split())[:160]
            lines.append(f"  - `{chunk.chunk_id}` ({chunk.section}, {pages}): {excerpt}…")
    return "\n".join(lines)
