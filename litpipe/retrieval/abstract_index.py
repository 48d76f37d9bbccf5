"""In-memory hybrid search over a table of abstracts (a related-work reference table, a
question's snippets): BM25 and dense search fused by Reciprocal Rank Fusion and diversified by
MMR, as `HybridRetriever` does over a collection's chunks in LanceDB."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from litpipe.files import replacing
from litpipe.hashing import digest
from litpipe.ingest.chunking import TokenCounter, chunk_document
from litpipe.retrieval.bm25 import BM25Index
from litpipe.retrieval.fusion import DEFAULT_RRF_K, reciprocal_rank_fusion
from litpipe.retrieval.hybrid import bm25_text, diversify_fused, fuse
from litpipe.retrieval.mmr import DEFAULT_MMR_LAMBDA
from litpipe.schemas import PaperDocument, Reference, RetrievedReference


class AbstractEncoder(Protocol):
    """What the in-memory search needs of an embedder (`Embedder` is one): vectors, and the
    tokenizer and window that size the text it sees whole."""

    @property
    def embedder_id(self) -> str: ...

    @property
    def max_chunk_tokens(self) -> int: ...

    @property
    def tokenizer(self) -> TokenCounter: ...

    def encode(self, texts: list[str]) -> NDArray[np.float32]: ...


def cached_vectors(
    texts: list[str], embedder: AbstractEncoder, vectors_dir: Path | None
) -> NDArray[np.float32]:
    """The texts' vectors, kept in `vectors_dir` under a hash of the embedder and the texts: a
    table asked about again (another idea) is not embedded again (MiniLM on two CPU cores takes
    some 40 s for 600 abstracts)."""
    if vectors_dir is None:
        return np.asarray(embedder.encode(texts), dtype=np.float32)
    path = Path(vectors_dir) / f"{digest(embedder.embedder_id, *texts)}.npy"
    if path.is_file():
        stored = np.load(path)
        if stored.shape[0] == len(texts):
            return stored
    vectors = np.asarray(embedder.encode(texts), dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written aside, then renamed: another process never loads half a file.
    with replacing(path) as handle:
        np.save(handle, vectors)
    return vectors


class AbstractIndex:
    """BM25 and dense search over a table's abstracts, fused and diversified, in memory: each
    abstract read whole, in windows of the embedder's `chunk_tokens` (overlapping by
    `overlap_tokens`), and scored as its best window."""

    def __init__(
        self,
        references: list[Reference],
        embedder: AbstractEncoder,
        *,
        chunk_tokens: int | None,
        overlap_tokens: int,
        rrf_k: int = DEFAULT_RRF_K,
        mmr_lambda: float = DEFAULT_MMR_LAMBDA,
        vectors_dir: Path | None = None,
    ) -> None:
        self.references = list(references)
        self.embedder = embedder
        self.rrf_k = rrf_k
        self.mmr_lambda = mmr_lambda
        ids = [reference.id for reference in self.references]
        self.bm25 = BM25Index(ids, [bm25_text(r.title, r.abstract) for r in self.references])
        max_tokens = min(chunk_tokens or embedder.max_chunk_tokens, embedder.max_chunk_tokens)
        windows: list[str] = []
        starts: list[int] = []
        for position, reference in enumerate(self.references):
            document = PaperDocument.single_section(
                heading="Abstract",
                text=f"{reference.title}\n\n{reference.abstract}",
                paper_id=f"r{position}",
                source_path="",
                title=reference.title,
            )
            chunks = chunk_document(
                document,
                embedder.tokenizer,
                max_tokens,
                overlap_tokens,
                embedder.embedder_id,
            ).chunks
            starts.append(len(windows))
            windows += [chunk.text for chunk in chunks] or [document.text]
        self._starts = np.asarray(starts, dtype=np.int64)
        self._windows = cached_vectors(windows, embedder, vectors_dir)
        # A reference's vector for MMR's redundancy: the direction of its windows together.
        sums = np.add.reduceat(self._windows, self._starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        self._vectors = sums / np.where(norms == 0, 1.0, norms)
        self._position = {reference_id: i for i, reference_id in enumerate(ids)}

    def __len__(self) -> int:
        return len(self.references)

    def _reference_vectors(self, reference_ids: list[str]) -> np.ndarray:
        return self._vectors[[self._position[i] for i in reference_ids]]

    def _fused(
        self, query: str, query_vector: NDArray[np.float32], candidates: int
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]], list[tuple[str, float]]]:
        """The BM25 and dense rankings of one query, and their RRF fusion, `candidates` each."""
        bm25 = self.bm25.search(query, candidates)
        # A reference scores as its best window.
        scores = np.maximum.reduceat(self._windows @ query_vector, self._starts)
        dense_order = np.argsort(-scores, kind="stable")[:candidates]
        dense = [(self.references[i].id, float(scores[i])) for i in dense_order]
        return bm25, dense, fuse(bm25, dense, candidates, self.rrf_k)

    def search(
        self, idea: str, limit: int, candidates: int, queries: Sequence[str] = ()
    ) -> list[RetrievedReference]:
        """The `limit` best references for `idea`: `candidates` from each retriever, fused by
        RRF, the fused top `candidates` diversified by MMR (as `HybridRetriever.search`).

        Each of `queries` (written from the idea) is searched the same way, and the fused
        rankings of the idea and of the queries are fused again by RRF, each counting alike;
        MMR then weighs relevance to the idea. The BM25 and dense ranks recorded are the
        idea's, the fused score the final one."""
        candidates = max(candidates, limit)
        vectors = np.asarray(self.embedder.encode([idea, *queries]), dtype=np.float32)
        bm25, dense, fused = self._fused(idea, vectors[0], candidates)
        if queries:
            rankings = {"idea": [reference_id for reference_id, _ in fused]}
            for number, (query, vector) in enumerate(zip(queries, vectors[1:], strict=True), 1):
                rankings[f"query {number}"] = [
                    i for i, _ in self._fused(query, vector, candidates)[2]
                ]
            fused = reciprocal_rank_fusion(rankings, self.rrf_k)[:candidates]
        order = diversify_fused(vectors[0], fused, self._reference_vectors, self.mmr_lambda, limit)
        bm25_at = {reference_id: rank for rank, (reference_id, _) in enumerate(bm25, 1)}
        dense_at = {reference_id: rank for rank, (reference_id, _) in enumerate(dense, 1)}
        fused_at = dict(fused)
        return [
            RetrievedReference(
                reference=self.references[self._position[reference_id]],
                retrieval_rank=rank,
                bm25_rank=bm25_at.get(reference_id),
                dense_rank=dense_at.get(reference_id),
                fused_score=fused_at[reference_id],
            )
            for rank, reference_id in enumerate(order[:limit], 1)
        ]
