"""Each question's evidence: hybrid candidates, diversified by MMR, reordered by a reranker, the
best few kept (X-Sum's "retrieve ~100, rerank, keep the top 3")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from litpipe.schemas import PaperEvidence, PaperQuestions, QuestionEvidence

if TYPE_CHECKING:
    from litpipe.retrieval.hybrid import HybridRetriever, Scope
    from litpipe.retrieval.rerank import Reranker


def gather_evidence(
    questions: PaperQuestions,
    retriever: HybridRetriever,
    reranker: Reranker,
    scope: Scope,
    candidates: int,
    rerank_candidates: int,
    keep: int,
) -> PaperEvidence:
    """For every question of the paper: `candidates` chunks from each retriever, fused, the
    first `rerank_candidates` of them in MMR order given to the reranker, its best `keep` kept.
    For scope "own", `retriever` may hold only the paper's chunks."""
    found = []
    for question in questions.questions:
        shortlist = retriever.search(
            question.text,
            limit=max(rerank_candidates, keep),
            candidates=candidates,
            scope=scope,
            paper_id=questions.paper_id,
        )
        reranked = reranker.rerank(question.text, shortlist)
        found.append(
            QuestionEvidence(
                question=question,
                chunks=reranked[:keep],
                reranked=any(chunk.rerank_score is not None for chunk in reranked),
            )
        )
    return PaperEvidence(
        paper_id=questions.paper_id,
        scope=scope,
        reranker=reranker.version,
        questions=found,
    )
