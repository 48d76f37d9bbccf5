"""Retrieval evaluation on a BEIR-format dataset (corpus.jsonl, queries.jsonl, qrels/<split>.tsv).

The corpus becomes a litpipe collection like any other (`beir-<dataset>`): each document a
one-section PaperDocument of its title and text, chunked with the embedder's tokenizer and
embedded into LITPIPE_HOME's LanceDB, so a second evaluation embeds nothing. A document's score
for a query is its best chunk's (max-pooling), so its rank is that of its first chunk in a ranking.

The reranked methods (`hybrid+<reranker>`) rerank the top `retrieval.rerank_candidates` chunks of
the hybrid (fused) ranking and keep the rest of it below them, so their recall@100 compares with
hybrid's. The LLM rerankers run on the offline engine unless a model is configured.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, Field

from litpipe.evaluation.ranking import ndcg_at_k, recall_at_k
from litpipe.ingest.chunking import chunk_document
from litpipe.retrieval.store import ChunkStore
from litpipe.schemas import PaperChunks, PaperDocument
from litpipe.settings import RerankerName
from litpipe.settings.groups import SettingsGroups
from litpipe.workflows.ingest import settings_embedder

if TYPE_CHECKING:
    from litpipe.retrieval.embedder import Embedder
    from litpipe.retrieval.hybrid import HybridRetriever
    from litpipe.retrieval.rerank import Reranker

METHODS = ("bm25", "dense", "hybrid", "hybrid-mmr")
# Each reranked method, and the `reranker` setting it evaluates.
RERANKED_METHODS: dict[str, RerankerName] = {
    "hybrid+relevance": "relevance",
    "hybrid+debate": "debate",
    "hybrid+cross-encoder": "cross-encoder",
}
DEFAULT_METHODS = ("bm25", "dense", "hybrid")
# Documents ranked per query: recall@100 needs a hundred.
RANKED_DOCUMENTS = 100
# Chunks each retriever returns per query, enough for a hundred distinct documents when a
# document has several chunks (SciFact: 1.9 chunks per document with MiniLM's 256 tokens).
CHUNK_CANDIDATES = 300


class BeirDataset(BaseModel):
    name: str
    corpus: dict[str, tuple[str, str]] = Field(description="Document id to (title, text).")
    queries: dict[str, str] = Field(description="The split's queries that have judgements.")
    qrels: dict[str, dict[str, int]] = Field(description="Query id to document id to grade.")


class MethodResult(BaseModel):
    method: str
    queries: int
    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    latency_p50_ms: float
    latency_p95_ms: float
    rerank_fallbacks: int = Field(
        default=0, description="Queries whose reranker failed and kept the fused order."
    )


class RetrievalEvaluation(BaseModel):
    dataset: str
    split: str
    collection: str
    embedder_id: str
    documents: int
    chunks: int
    embedded_chunks: int = Field(description="Chunks embedded by this run (0 once cached).")
    parameters: dict[str, float | int]
    rerankers: dict[str, str] = Field(
        default_factory=dict, description="Each reranked method's reranker version."
    )
    results: list[MethodResult]


def load_beir(folder: Path, split: str) -> BeirDataset:
    """The corpus, and the queries of `split` with their relevance judgements."""
    corpus: dict[str, tuple[str, str]] = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                record = json.loads(line)
                corpus[str(record["_id"])] = (record.get("title") or "", record.get("text") or "")
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / f"{split}.tsv").open(encoding="utf-8", newline="") as table:
        rows = csv.reader(table, delimiter="\t")
        next(rows, None)  # header: query-id, corpus-id, score
        for row in rows:
            if len(row) >= 3 and int(row[2]) > 0:
                qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    queries: dict[str, str] = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                record = json.loads(line)
                if str(record["_id"]) in qrels:
                    queries[str(record["_id"])] = record["text"]
    return BeirDataset(name=folder.name, corpus=corpus, queries=queries, qrels=qrels)


def corpus_documents(dataset: BeirDataset) -> list[PaperDocument]:
    """Each document as a one-section paper whose text is its title and its text."""
    documents = []
    for doc_id, (title, body) in dataset.corpus.items():
        text = f"{title}\n\n{body}".strip() if title else body
        documents.append(
            PaperDocument.single_section(
                heading="Abstract",
                text=text,
                paper_id=doc_id,
                source_path=f"beir:{dataset.name}/{doc_id}",
                title=title,
                abstract=body,
            )
        )
    return documents


def index_corpus(
    dataset: BeirDataset, store: ChunkStore, embedder: Embedder, groups: SettingsGroups
) -> tuple[str, list[PaperChunks], int]:
    """Chunk and embed the corpus as collection `beir-<name>`; returns the collection, its
    chunks and how many chunks had to be embedded (none when the store already holds them)."""
    collection = f"beir-{dataset.name}"
    max_tokens = min(
        groups["ingest"].chunk_tokens or embedder.max_chunk_tokens, embedder.max_chunk_tokens
    )
    papers = [
        chunk_document(
            document,
            embedder.tokenizer,
            max_tokens,
            groups["ingest"].chunk_overlap_tokens,
            embedder.embedder_id,
        )
        for document in corpus_documents(dataset)
    ]
    results = store.embed_papers(papers, embedder)
    return collection, papers, sum(result.embedded for result in results)


def evaluate_retrieval(
    groups: SettingsGroups,
    dataset_dir: Path,
    split: str,
    methods: tuple[str, ...] = DEFAULT_METHODS,
    max_queries: int | None = None,
    embedder: Embedder | None = None,
) -> RetrievalEvaluation:
    """Index the dataset's corpus (or find it indexed) and score each method on the split."""
    from litpipe.retrieval.hybrid import HybridRetriever

    unknown = [method for method in methods if method not in (*METHODS, *RERANKED_METHODS)]
    if unknown:
        raise ValueError(
            f"unknown methods {unknown}; choose from {', '.join([*METHODS, *RERANKED_METHODS])}"
        )
    # Before anything is indexed: a reranker that cannot run fails the evaluation at once.
    rerankers = {
        method: _reranker(RERANKED_METHODS[method], groups)
        for method in methods
        if method in RERANKED_METHODS
    }
    dataset = load_beir(Path(dataset_dir), split)
    if embedder is None:
        embedder = settings_embedder(groups["ingest"], groups["paths"])
    store = ChunkStore(groups["paths"].lancedb_dir)
    collection, papers, embedded = index_corpus(dataset, store, embedder, groups)
    retriever = HybridRetriever(
        store,
        embedder,
        collection,
        groups["paths"].home / "bm25",
        papers=[paper.paper_id for paper in papers],
    )
    query_ids = sorted(dataset.queries)[:max_queries]
    results = [
        _evaluate_method(
            method,
            _chunk_ranker(
                method, retriever, embedder, rerankers, groups["retrieval"].rerank_candidates
            ),
            dataset,
            query_ids,
        )
        for method in methods
    ]
    return RetrievalEvaluation(
        dataset=dataset.name,
        split=split,
        collection=collection,
        embedder_id=embedder.embedder_id,
        documents=len(papers),
        chunks=sum(len(paper.chunks) for paper in papers),
        embedded_chunks=embedded,
        parameters={
            "rrf_k": retriever.rrf_k,
            "bm25_weight": (retriever.weights or {}).get("bm25", 1.0),
            "dense_weight": (retriever.weights or {}).get("dense", 1.0),
            "bm25_k1": retriever.bm25.k1,
            "bm25_b": retriever.bm25.b,
            "mmr_lambda": retriever.mmr_lambda,
            "chunk_candidates": CHUNK_CANDIDATES,
            "rerank_candidates": groups["retrieval"].rerank_candidates,
        },
        rerankers={method: reranker.version for method, reranker in rerankers.items()},
        results=results,
    )


def format_table(evaluation: RetrievalEvaluation) -> str:
    width = max([12, *(len(result.method) for result in evaluation.results)])
    lines = [
        f"{evaluation.dataset} {evaluation.split}: {evaluation.results[0].queries} queries, "
        f"{evaluation.documents} documents, {evaluation.chunks} chunks "
        f"({evaluation.embedded_chunks} embedded now), {evaluation.embedder_id}"
        if evaluation.results
        else f"{evaluation.dataset} {evaluation.split}: no method run",
        f"{'method':<{width}} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'p50 ms':>8} {'p95 ms':>8}",
    ]
    for result in evaluation.results:
        lines.append(
            f"{result.method:<{width}} {result.ndcg_at_10:>8.4f} {result.recall_at_10:>7.4f} "
            f"{result.recall_at_100:>7.4f} {result.latency_p50_ms:>8.1f} "
            f"{result.latency_p95_ms:>8.1f}"
        )
    if evaluation.rerankers:
        lines.append(
            f"reranked: the top {evaluation.parameters['rerank_candidates']} hybrid chunks, by "
            + ", ".join(evaluation.rerankers.values())
        )
    lines += [
        f"{result.method}: the reranker failed on {result.rerank_fallbacks} queries, which kept "
        "the hybrid order (see the warnings)"
        for result in evaluation.results
        if result.rerank_fallbacks
    ]
    return "\n".join(lines)


def _reranker(kind: RerankerName, groups: SettingsGroups) -> Reranker:
    """The reranker a reranked method evaluates, its model loaded (a load is not a query's)."""
    from litpipe.agents.question_evidence.rerankers import AGENT_RERANKERS, reranker_for
    from litpipe.evaluation.runner import evaluation_asker
    from litpipe.retrieval.rerank import CrossEncoderReranker

    if kind == "cross-encoder" and not groups["retrieval"].cross_encoder_model:
        raise ValueError(
            "method hybrid+cross-encoder needs a CrossEncoder: --cross-encoder NAME_OR_PATH"
        )
    asker = evaluation_asker(
        groups["llm"], groups["paths"], [kind] if kind in AGENT_RERANKERS else []
    )
    reranker = reranker_for(
        kind,
        asker,
        groups["retrieval"].cross_encoder_model,
        device=groups["ingest"].embed_device,
        batch_size=groups["ingest"].embed_batch_size,
    )
    if isinstance(reranker, CrossEncoderReranker):
        # A model that cannot load fails the evaluation, rather than its figures.
        reranker.load()
    return reranker


@dataclass
class _RerankedHybrid:
    """Hybrid's ranking with its top `candidates` chunks reranked, counting the queries whose
    reranker failed (and so kept the hybrid order)."""

    retriever: HybridRetriever
    reranker: Reranker
    candidates: int
    fallbacks: int = 0

    def __call__(self, query: str) -> list[str]:
        fused = self.retriever.search(
            query, limit=CHUNK_CANDIDATES, candidates=CHUNK_CANDIDATES, diversify=False
        )
        head = self.reranker.rerank(query, fused[: self.candidates])
        if head and all(chunk.rerank_score is None for chunk in head):
            self.fallbacks += 1
        return [chunk.chunk_id for chunk in [*head, *fused[self.candidates :]]]


def _evaluate_method(
    method: str,
    rank_chunks: Callable[[str], list[str]],
    dataset: BeirDataset,
    query_ids: list[str],
) -> MethodResult:
    ndcg, recall_10, recall_100, latencies = [], [], [], []
    for query_id in query_ids:
        started = time.perf_counter()
        chunk_ids = rank_chunks(dataset.queries[query_id])
        latencies.append((time.perf_counter() - started) * 1000)
        documents = _documents_by_best_chunk(chunk_ids)
        qrels = dataset.qrels[query_id]
        ndcg.append(ndcg_at_k(documents, qrels, 10))
        recall_10.append(recall_at_k(documents, qrels, 10))
        recall_100.append(recall_at_k(documents, qrels, RANKED_DOCUMENTS))
    return MethodResult(
        method=method,
        queries=len(query_ids),
        ndcg_at_10=float(np.mean(ndcg)) if ndcg else 0.0,
        recall_at_10=float(np.mean(recall_10)) if recall_10 else 0.0,
        recall_at_100=float(np.mean(recall_100)) if recall_100 else 0.0,
        latency_p50_ms=float(np.percentile(latencies, 50)) if latencies else 0.0,
        latency_p95_ms=float(np.percentile(latencies, 95)) if latencies else 0.0,
        rerank_fallbacks=rank_chunks.fallbacks if isinstance(rank_chunks, _RerankedHybrid) else 0,
    )


def _chunk_ranker(
    method: str,
    retriever: HybridRetriever,
    embedder: Embedder,
    rerankers: dict[str, Reranker],
    rerank_candidates: int,
) -> Callable[[str], list[str]]:
    """The method as a function from a query to chunk ids, best first (query encoding included,
    so latencies compare what a caller waits for)."""
    if method in rerankers:
        return _RerankedHybrid(retriever, rerankers[method], rerank_candidates)
    if method == "bm25":
        return lambda query: [c for c, _ in retriever.bm25_ranking(query, CHUNK_CANDIDATES)]
    if method == "dense":
        return lambda query: [
            c for c, _ in retriever.dense_ranking(embedder.encode([query])[0], CHUNK_CANDIDATES)
        ]
    diversify = method == "hybrid-mmr"
    return lambda query: [
        chunk.chunk_id
        for chunk in retriever.search(
            query, limit=CHUNK_CANDIDATES, candidates=CHUNK_CANDIDATES, diversify=diversify
        )
    ]


def _documents_by_best_chunk(chunk_ids: list[str]) -> list[str]:
    """Document ids in the order of their first (best) chunk: max-pooling of chunk scores."""
    documents = dict.fromkeys(chunk_id.rsplit(":", 1)[0] for chunk_id in chunk_ids)
    return list(documents)[:RANKED_DOCUMENTS]
