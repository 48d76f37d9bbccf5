"""The `[retrieval]` settings: where a question's evidence is searched, fusion, diversity and
reranking."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from litpipe.settings.base import SettingsGroup

RerankerName = Literal["none", "cross-encoder", "relevance", "debate"]


class RetrievalSettings(SettingsGroup):
    """Retrieval of each question's evidence, and its reranking."""

    evidence_scope: Literal["own", "all", "others"] = Field(
        default="own",
        description="Where a paper's questions look for evidence: its own chunks, the whole "
        "collection, or the other papers.",
    )
    candidates: int = Field(
        default=100, ge=1, description="Chunks each retriever (BM25, dense) returns per question."
    )
    evidence_per_question: int = Field(
        default=3, ge=1, description="Reranked chunks kept as a question's evidence."
    )
    rrf_k: int = Field(default=10, ge=0, description="Reciprocal Rank Fusion's k.")
    mmr_lambda: float = Field(
        default=0.7, ge=0, le=1, description="MMR's trade-off: 1 pure relevance, 0 pure diversity."
    )
    reranker: RerankerName = Field(
        default="none",
        description="Reorders the fused, diversified candidates: a CrossEncoder "
        "(cross_encoder_model), or LLM relevance (1-10) or debate (1-100) scoring.",
    )
    cross_encoder_model: str | None = Field(
        default=None, description="A sentence-transformers CrossEncoder name or local path."
    )
    rerank_candidates: int = Field(
        default=20, ge=1, description="Fused candidates the reranker scores per question."
    )

    @model_validator(mode="after")
    def _cross_encoder_named(self) -> RetrievalSettings:
        if self.reranker == "cross-encoder" and not self.cross_encoder_model:
            raise ValueError(
                "retrieval.reranker 'cross-encoder' needs retrieval.cross_encoder_model "
                "(a name or path)"
            )
        return self
