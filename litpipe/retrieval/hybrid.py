"""Hybrid retrieval over one collection: BM25 and dense search fused by Reciprocal Rank Fusion,
then diversified by MMR.

Defaults tuned on SciFact's train split (809 queries; `litpipe eval retrieval`), fusing at chunk
level and scoring each document by its best chunk: BM25 k1 0.9 / b 0.4, RRF k 10 with equal
weights (see bm25.py and fusion.py for the grid). MMR is for the pipeline's evidence, where
near-duplicate chunks waste the context; the evaluation reports hybrid with and without it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, Literal

import numpy as np

from litpipe.hashing import digest
from litpipe.retrieval.bm25 import DEFAULT_B, DEFAULT_K1, BM25Index
from litpipe.retrieval.fusion import DEFAULT_RRF_K, reciprocal_rank_fusion
from litpipe.retrieval.mmr import DEFAULT_MMR_LAMBDA, mmr
from litpipe.retrieval.store import RETRIEVED_CHUNK_COLUMNS, ChunkStore, TextEncoder
from litpipe.schemas import RetrievedChunk

Scope = Literal["all", "own", "others"]
DEFAULT_CANDIDATES = 100
_CHUNK_COLUMNS = [*RETRIEVED_CHUNK_COLUMNS, "title", "content_sha256", "vector"]


class HybridRetriever:
    """BM25 + dense retrieval over the chunks of `collection` embedded with `embedder`, or over
    those of `papers` only.

    The chunks are read once, at construction, with their BM25 index: loaded from `index_dir`
    (or built and saved there if the collection changed since), or built in memory when
    `index_dir` is None, which suits a paper's hundred chunks. Build a new retriever after the
    collection changes.
    """

    def __init__(
        self,
        store: ChunkStore,
        embedder: TextEncoder,
        collection: str,
        index_dir: Path | None,
        rrf_k: int = DEFAULT_RRF_K,
        weights: dict[str, float] | None = None,
        mmr_lambda: float = DEFAULT_MMR_LAMBDA,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        papers: Collection[str] | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.collection = collection
        self.rrf_k = rrf_k
        self.weights = weights
        self.mmr_lambda = mmr_lambda
        self.papers = sorted(papers) if papers is not None else None
        rows = store.collection_rows(
            embedder.embedder_id, collection, _CHUNK_COLUMNS, paper_ids=self.papers
        )
        vectors = rows.column("vector").combine_chunks() if rows.num_rows else None
        self._vectors = (
            vectors.flatten().to_numpy().reshape(rows.num_rows, vectors.type.list_size)
            if vectors is not None
            else np.empty((0, 0), dtype=np.float32)
        )
        # Each chunk's row and vector are found by its chunk_id, never by position: a table
        # that holds a chunk twice (written by racing processes before `ChunkStore.repair`)
        # must not shift every later chunk onto its neighbour's vector. The last row wins.
        self._row_of = {
            chunk_id: index for index, chunk_id in enumerate(rows.column("chunk_id").to_pylist())
        }
        fields = rows.drop_columns(["vector"]).to_pylist()
        self._chunks: dict[str, dict[str, Any]] = {
            chunk_id: fields[index] for chunk_id, index in self._row_of.items()
        }
        self._chunk_ids_of_paper: dict[str, set[str]] = {}
        for chunk_id, row in self._chunks.items():
            self._chunk_ids_of_paper.setdefault(row["paper_id"], set()).add(chunk_id)
        chunk_ids = list(self._chunks)
        texts = [bm25_text(row["title"], row["text"]) for row in self._chunks.values()]
        if index_dir is None:
            self.bm25 = BM25Index(chunk_ids, texts, k1=k1, b=b)
        else:
            self.bm25 = BM25Index.load_or_build(
                Path(index_dir) / _safe(embedder.embedder_id) / _safe(collection),
                chunk_ids,
                [digest(row["title"], row["content_sha256"]) for row in self._chunks.values()],
                texts,
                k1=k1,
                b=b,
            )

    def __len__(self) -> int:
        return len(self._chunks)

    def vectors(self, chunk_ids: list[str]) -> np.ndarray:
        """The stored vectors of `chunk_ids` (chunks of this retriever), one row each."""
        return self._vectors[[self._row_of[chunk_id] for chunk_id in chunk_ids]]

    @property
    def paper_ids(self) -> list[str]:
        """The papers that have chunks here."""
        return sorted(self._chunk_ids_of_paper)

    def bm25_ranking(
        self, query: str, limit: int, scope: Scope = "all", paper_id: str | None = None
    ) -> list[tuple[str, float]]:
        """(chunk id, BM25 score) pairs of the scope, best first."""
        if scope == "all":
            return self.bm25.search(query, limit)
        own = self._chunk_ids_of_paper.get(_required(paper_id, scope), set())
        if scope == "own":
            return self.bm25.search(query, limit, allowed_ids=own)
        return self.bm25.search(query, limit, excluded_ids=own)

    def dense_ranking(
        self,
        query_vector: np.ndarray,
        limit: int,
        scope: Scope = "all",
        paper_id: str | None = None,
    ) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity) pairs of the scope, best first, from LanceDB."""
        where = f"collection = {_sql(self.collection)}"
        if self.papers is not None:
            where += f" AND paper_id IN ({', '.join(_sql(paper) for paper in self.papers)})"
        if scope == "own":
            where += f" AND paper_id = {_sql(_required(paper_id, scope))}"
        elif scope == "others":
            where += f" AND paper_id != {_sql(_required(paper_id, scope))}"
        rows = self.store.dense_search(self.embedder.embedder_id, query_vector, limit, where)
        ranking: dict[str, float] = {}  # a chunk stored twice is ranked once, at its best
        for row in rows:
            if row["chunk_id"] in self._chunks:
                ranking.setdefault(row["chunk_id"], row["score"])
        return list(ranking.items())

    def search(
        self,
        query: str,
        limit: int = 10,
        candidates: int = DEFAULT_CANDIDATES,
        scope: Scope = "all",
        paper_id: str | None = None,
        diversify: bool = True,
    ) -> list[RetrievedChunk]:
        """The `limit` best chunks for `query`: `candidates` from each retriever, fused by RRF,
        the fused top `candidates` diversified by MMR (unless `diversify` is False).

        scope "own" searches only `paper_id`'s chunks, "others" every paper but it, "all" the
        whole collection."""
        if scope != "all":
            _required(paper_id, scope)
        query_vector = np.asarray(self.embedder.encode([query])[0], dtype=np.float32)
        bm25 = self.bm25_ranking(query, candidates, scope, paper_id)
        dense = self.dense_ranking(query_vector, candidates, scope, paper_id)
        fused = fuse(bm25, dense, candidates, self.rrf_k, self.weights)
        order = [chunk_id for chunk_id, _ in fused]
        if diversify:
            order = diversify_fused(query_vector, fused, self.vectors, self.mmr_lambda, limit)
        bm25_at = {chunk_id: (rank, score) for rank, (chunk_id, score) in enumerate(bm25, 1)}
        dense_at = {chunk_id: (rank, score) for rank, (chunk_id, score) in enumerate(dense, 1)}
        fused_at = {chunk_id: (rank, score) for rank, (chunk_id, score) in enumerate(fused, 1)}
        results = []
        for chunk_id in order[:limit]:
            row = self._chunks[chunk_id]
            bm25_rank, bm25_score = bm25_at.get(chunk_id, (None, None))
            dense_rank, dense_score = dense_at.get(chunk_id, (None, None))
            fused_rank, fused_score = fused_at[chunk_id]
            results.append(
                RetrievedChunk(
                    **{name: row[name] for name in RetrievedChunk.model_fields if name in row},
                    bm25_rank=bm25_rank,
                    bm25_score=bm25_score,
                    dense_rank=dense_rank,
                    dense_score=dense_score,
                    fused_rank=fused_rank,
                    fused_score=fused_score,
                )
            )
        return results


def fuse(
    bm25: list[tuple[str, float]],
    dense: list[tuple[str, float]],
    candidates: int,
    rrf_k: int = DEFAULT_RRF_K,
    weights: dict[str, float] | None = None,
) -> list[tuple[str, float]]:
    """The two rankings ((id, score) pairs, best first) fused by RRF: the top `candidates`
    (id, fused score) pairs, best first."""
    return reciprocal_rank_fusion(
        {"bm25": [item for item, _ in bm25], "dense": [item for item, _ in dense]},
        k=rrf_k,
        weights=weights,
    )[:candidates]


def diversify_fused(
    query_vector: np.ndarray,
    fused: list[tuple[str, float]],
    vectors_of: Callable[[list[str]], np.ndarray],
    mmr_lambda: float,
    limit: int,
) -> list[str]:
    """The fused ids reordered by MMR, the fused scores (min-max normalised: all equal count as
    1) as their relevance; `vectors_of` gives the ids' vectors, one row each."""
    order = [item for item, _ in fused]
    if not order:
        return order
    scores = np.array([score for _, score in fused], dtype=np.float64)
    spread = scores.max() - scores.min()
    relevance = (scores - scores.min()) / spread if spread > 0 else np.ones_like(scores)
    return mmr(query_vector, order, vectors_of(order), mmr_lambda, limit, relevance=relevance)


def bm25_text(title: str, text: str) -> str:
    """What BM25 indexes of a chunk: its text, after its paper's title unless the text opens
    with it. A chunk deep in a paper then still matches a query naming the paper's subject
    (SciFact train, BM25 nDCG@10: 0.691 without, 0.694 with; hybrid 0.726 with both)."""
    if not title or text.lstrip().casefold().startswith(title.strip().casefold()):
        return text
    return f"{title}\n{text}"


def _required(paper_id: str | None, scope: Scope) -> str:
    if not paper_id:
        raise ValueError(f"scope {scope!r} needs a paper_id")
    return paper_id


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "collection"


def _sql(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
