"""Hybrid retrieval over one collection's papers: BM25 and dense search fused by Reciprocal
Rank Fusion, then diversified by MMR.

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
import pyarrow as pa
import pyarrow.compute as pc

from litpipe.hashing import digest
from litpipe.retrieval.bm25 import DEFAULT_B, DEFAULT_K1, BM25Index
from litpipe.retrieval.fusion import DEFAULT_RRF_K, reciprocal_rank_fusion
from litpipe.retrieval.mmr import DEFAULT_MMR_LAMBDA, mmr
from litpipe.retrieval.store import RETRIEVED_CHUNK_COLUMNS, ChunkStore, TextEncoder
from litpipe.schemas import RetrievedChunk

Scope = Literal["all", "own", "others"]
DEFAULT_CANDIDATES = 100
# What construction reads of every chunk: enough to find its saved BM25 index and each paper's
# chunks, never the texts or vectors (a 20,000-chunk collection's vectors alone are 30 MB).
_LISTING_COLUMNS = ["chunk_id", "paper_id", "title", "content_sha256"]
# What a retriever over held rows holds of each chunk: all it reads, and the vector.
_HELD_COLUMNS = list(dict.fromkeys([*_LISTING_COLUMNS, *RETRIEVED_CHUNK_COLUMNS, "text", "vector"]))
# Papers whose rows one query reads (a filter naming thousands of ids is slow to plan).
_PAPERS_PER_READ = 1000


class HybridRetriever:
    """BM25 + dense retrieval over the chunks of `papers` (a collection's, as the catalog lists
    them, or one paper's) embedded with `embedder`; None: over every paper of the embedder's
    table. `collection` names the saved BM25 index.

    Construction lists the chunks' ids and finds their BM25 index: loaded from `index_dir`
    (or built and saved there if the collection changed since, the one time the texts are
    read), or built in memory when `index_dir` is None, which suits a paper's hundred chunks.
    Dense search is LanceDB's, and a search reads the texts and vectors of its candidates only,
    so memory does not grow with the collection's texts and vectors. Build a new retriever after
    the collection changes.

    `held`, the rows of `papers` (every field and the vector) read already, makes it search them
    in memory, exactly, without reading LanceDB: a step over a hundred papers reads their chunks
    in one query (`paper_retrievers`) instead of a dozen filtered scans of the table per paper.
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
        held: pa.Table | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.collection = collection
        self.rrf_k = rrf_k
        self.weights = weights
        self.mmr_lambda = mmr_lambda
        self.papers = sorted(papers) if papers is not None else None
        self._held = _HeldRows(held) if held is not None else None
        listing = self._rows(_LISTING_COLUMNS).to_pydict()
        # Papers that are all the table holds (a home of one collection) are searched without
        # a filter naming each of them: thousands of ids cost a dense search ~2x.
        self._papers_where = (
            f"paper_id IN ({', '.join(map(_sql, self.papers))})"
            if self.papers is not None
            and held is None
            and store.count_rows(embedder.embedder_id) != len(listing["chunk_id"])
            else None
        )
        # A table that holds a chunk twice (written by racing processes before
        # `ChunkStore.repair`) lists it once, at its first place, with its last row's fields.
        last_row = {chunk_id: row for row, chunk_id in enumerate(listing["chunk_id"])}
        chunk_ids = list(last_row)
        self._chunk_ids_of_paper: dict[str, set[str]] = {}
        for chunk_id, row in last_row.items():
            self._chunk_ids_of_paper.setdefault(listing["paper_id"][row], set()).add(chunk_id)
        if index_dir is None:
            self.bm25 = BM25Index(chunk_ids, self._bm25_texts(chunk_ids), k1=k1, b=b)
            return
        directory = Path(index_dir) / _safe(embedder.embedder_id) / _safe(collection)
        hashes = [
            digest(listing["title"][row], listing["content_sha256"][row])
            for row in last_row.values()
        ]
        del listing, last_row
        saved = BM25Index.load(directory, chunk_ids, hashes, k1=k1, b=b)
        self.bm25 = saved or BM25Index.load_or_build(
            directory, chunk_ids, hashes, self._bm25_texts(chunk_ids), k1=k1, b=b
        )

    def _bm25_texts(self, chunk_ids: list[str]) -> list[str]:
        """What BM25 indexes of each chunk (`bm25_text`), in the order of `chunk_ids`."""
        rows = self._rows(["chunk_id", "title", "text"]).to_pydict()
        text_of = {
            chunk_id: bm25_text(title, text)
            for chunk_id, title, text in zip(
                rows["chunk_id"], rows["title"], rows["text"], strict=True
            )
        }
        return [text_of[chunk_id] for chunk_id in chunk_ids]

    def __len__(self) -> int:
        return len(self.bm25)

    def _rows(self, columns: list[str], chunk_ids: list[str] | None = None) -> pa.Table:
        """The columns of this retriever's chunks, or of its chunks `chunk_ids`."""
        if self._held is not None:
            return self._held.rows(columns, chunk_ids)
        return self.store.chunk_rows(
            self.embedder.embedder_id,
            columns,
            paper_ids=self.papers if chunk_ids is None else None,
            chunk_ids=chunk_ids,
        )

    def _stored(
        self, chunk_ids: list[str], vectors: bool
    ) -> tuple[dict[str, dict[str, Any]], np.ndarray, dict[str, int]]:
        """The stored fields of `chunk_ids` (chunks of this retriever) by chunk id, and, when
        `vectors`, their vectors (a matrix) with each chunk's row in it: read from LanceDB for
        these chunks only. Of a chunk stored twice, the last row."""
        columns = [*RETRIEVED_CHUNK_COLUMNS, *(["vector"] if vectors else [])]
        table = self._rows(columns, list(dict.fromkeys(chunk_ids)))
        row_of = {
            chunk_id: row for row, chunk_id in enumerate(table.column("chunk_id").to_pylist())
        }
        matrix = np.empty((0, 0), dtype=np.float32)
        if vectors and table.num_rows:
            stored = table.column("vector").combine_chunks()
            matrix = stored.flatten().to_numpy().reshape(table.num_rows, stored.type.list_size)
        fields = table.drop_columns(["vector"]).to_pylist() if vectors else table.to_pylist()
        return {chunk_id: fields[row] for chunk_id, row in row_of.items()}, matrix, row_of

    def vectors(self, chunk_ids: list[str]) -> np.ndarray:
        """The stored vectors of `chunk_ids` (chunks of this retriever), one row each."""
        _, matrix, row_of = self._stored(chunk_ids, vectors=True)
        return matrix[[row_of[chunk_id] for chunk_id in chunk_ids]]

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
        """(chunk id, cosine similarity) pairs of the scope, best first, from LanceDB (or the
        held rows)."""
        if self._held is not None:
            own = paper_id if scope != "all" else None
            return self._held.nearest(query_vector, limit, own, keep_own=scope == "own")
        conditions = [self._papers_where] if self._papers_where else []
        if scope == "own":
            conditions.append(f"paper_id = {_sql(_required(paper_id, scope))}")
        elif scope == "others":
            conditions.append(f"paper_id != {_sql(_required(paper_id, scope))}")
        rows = self.store.dense_search(
            self.embedder.embedder_id, query_vector, limit, " AND ".join(conditions) or None
        )
        ranking: dict[str, float] = {}  # a chunk stored twice is ranked once, at its best
        for row in rows:
            if row["chunk_id"] in self.bm25:
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
        # One read of the candidates' rows: MMR needs all their vectors, the results the
        # fields of the first `limit`.
        rows, matrix, row_of = self._stored(order if diversify else order[:limit], diversify)
        if diversify:
            order = diversify_fused(
                query_vector,
                fused,
                lambda chunk_ids: matrix[[row_of[chunk_id] for chunk_id in chunk_ids]],
                self.mmr_lambda,
                limit,
            )
        bm25_at = {chunk_id: (rank, score) for rank, (chunk_id, score) in enumerate(bm25, 1)}
        dense_at = {chunk_id: (rank, score) for rank, (chunk_id, score) in enumerate(dense, 1)}
        fused_at = {chunk_id: (rank, score) for rank, (chunk_id, score) in enumerate(fused, 1)}
        results = []
        for chunk_id in order[:limit]:
            row = rows[chunk_id]
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


def paper_retrievers(
    store: ChunkStore, embedder: TextEncoder, paper_ids: list[str], **options: Any
) -> dict[str, HybridRetriever]:
    """A retriever over each paper's own chunks (scope "own"), searching them in memory: their
    rows read from LanceDB together, in one query per thousand papers. `options` are
    `HybridRetriever`'s (rrf_k, mmr_lambda, ...); each paper's BM25 index is its own."""
    parts = [
        store.chunk_rows(
            embedder.embedder_id,
            _HELD_COLUMNS,
            paper_ids=paper_ids[start : start + _PAPERS_PER_READ],
        )
        for start in range(0, len(paper_ids), _PAPERS_PER_READ)
    ]
    rows = pa.concat_tables(parts) if parts else None
    retrievers: dict[str, HybridRetriever] = {}
    for paper_id in paper_ids:
        held = (
            rows.filter(pc.equal(rows.column("paper_id"), paper_id))
            if rows is not None and rows.num_rows
            else pa.table({name: pa.array([], pa.string()) for name in _HELD_COLUMNS})
        )
        retrievers[paper_id] = HybridRetriever(
            store, embedder, paper_id, None, papers=[paper_id], held=held, **options
        )
    return retrievers


class _HeldRows:
    """Chunk rows in memory, vectors included, searched exactly by cosine."""

    def __init__(self, rows: pa.Table) -> None:
        self.table = rows
        self.chunk_ids = rows.column("chunk_id").to_pylist()
        self.paper_ids = np.array(rows.column("paper_id").to_pylist(), dtype=object)
        if not rows.num_rows:  # a paper without chunks (its column types then unknown)
            self.unit = np.empty((0, 0), dtype=np.float32)
            return
        vectors = rows.column("vector").combine_chunks()
        matrix = vectors.flatten().to_numpy().reshape(rows.num_rows, vectors.type.list_size)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.unit = matrix / np.where(norms == 0, 1.0, norms)

    def rows(self, columns: list[str], chunk_ids: list[str] | None) -> pa.Table:
        table = self.table
        if chunk_ids is not None:
            table = table.filter(
                pc.is_in(table.column("chunk_id"), pa.array(chunk_ids, pa.string()))
            )
        return table.select(columns)

    def nearest(
        self, vector: np.ndarray, limit: int, paper_id: str | None, keep_own: bool
    ) -> list[tuple[str, float]]:
        """(chunk id, cosine) pairs, best first: of `paper_id`'s chunks when `keep_own`, of the
        others' when not, of all when `paper_id` is None."""
        if not self.chunk_ids:
            return []
        norm = float(np.linalg.norm(vector))
        scores = self.unit @ (np.asarray(vector, dtype=np.float32) / (norm or 1.0))
        candidates = np.arange(len(self.chunk_ids))
        if paper_id is not None:
            candidates = candidates[(self.paper_ids == paper_id) == keep_own]
        best = candidates[np.argsort(-scores[candidates], kind="stable")][:limit]
        ranking: dict[str, float] = {}  # a chunk held twice is ranked once, at its best
        for row in best:
            ranking.setdefault(self.chunk_ids[row], float(scores[row]))
        return list(ranking.items())


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
