"""A collection's papers as the references of a related-work request
(`litpipe related-work --collection C`), without Dagster.

    catalog = collection_catalog(paths.catalog_path, "biology-cc-by")
    pool = read_pool(catalog, "biology-cc-by", artifacts, chunk_store, embedder.embedder_id)
    retriever = HybridRetriever(chunk_store, embedder, pool.collection, index_dir, papers=...)
    table = pool_references(pool, request, retriever, related_work, retrieval)
    related = run_related_work(table, request, ...)  # litpipe.workflows.related_work

The pool is what `litpipe run` ingested of C's papers (retracted ones left out): each paper's
title and abstract (the `paper_abstract` artifact) and, for a paper with a full text (a PDF),
its chunk closest to the idea among the collection's hybrid-retrieval hits, cut to whole
sentences within its share of the writer's context. A paper is cited by its paper id, so the
section can cite only papers of C. The pool's fingerprint hashes every paper's id, title,
abstract and chunk contents: a paper added to C, retracted from it or ingested again changes
it, and with it the request's partition key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, Field

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog
from litpipe.hashing import digest
from litpipe.retrieval.hybrid import HybridRetriever
from litpipe.retrieval.store import ChunkStore
from litpipe.schemas import PaperAbstract, Reference, RelatedWorkRequest
from litpipe.settings import RelatedWorkSettings, RetrievalSettings
from litpipe.text import estimate_tokens, sentences
from litpipe.workflows.related_work import ReferenceTable, RelatedWorkInputError

# Collections named in an "unknown collection" message, at most.
_KNOWN_SHOWN = 10
# The passages' share of the writer's context: the rest holds the instructions, the idea, the
# abstracts, the debate's arguments and the reply.
_PASSAGE_SHARE = 4


class CollectionPool(BaseModel):
    """What `litpipe run` ingested of a collection's papers, for a related-work request."""

    collection: str
    abstracts: list[PaperAbstract] = Field(description="The ingested papers, by paper id.")
    full_text: list[str] = Field(description="The ids of those with a full text (a PDF).")
    not_ingested: list[str] = Field(
        default_factory=list,
        description="Papers of the collection whose abstract or chunks are not stored.",
    )
    fingerprint: str = Field(
        description="Hash of every ingested paper's id, title, abstract and chunk contents."
    )


def collection_catalog(catalog_path: Path, collection: str) -> Catalog:
    """The catalog that holds the collection; `RelatedWorkInputError` when there is none, or
    it does not hold it. Writes nothing (not even the home)."""
    if not catalog_path.is_file():
        raise RelatedWorkInputError(
            f"unknown collection {collection!r}: no paper is registered under "
            f"{catalog_path.parent}; run `litpipe run SOURCE --collection {collection}` first"
        )
    catalog = Catalog(catalog_path)
    known = catalog.collections()
    if collection not in known:
        listed = ", ".join(known[:_KNOWN_SHOWN]) + (", ..." if len(known) > _KNOWN_SHOWN else "")
        raise RelatedWorkInputError(
            f"unknown collection {collection!r} (known collections: {listed or 'none'})"
        )
    return catalog


def read_pool(
    catalog: Catalog,
    collection: str,
    artifacts: ArtifactStore,
    chunk_store: ChunkStore,
    embedder_id: str,
) -> CollectionPool:
    """The ingested papers of a collection of the catalog (`collection_catalog`);
    `RelatedWorkInputError` for one with no ingested paper."""
    members = catalog.papers(collection)
    rows = chunk_store.chunk_rows(
        embedder_id, ["paper_id", "chunk_id", "content_sha256"], paper_ids=members
    ).to_pylist()
    chunk_hashes: dict[str, list[str]] = {}
    for row in sorted(rows, key=lambda row: row["chunk_id"]):
        chunk_hashes.setdefault(row["paper_id"], []).append(row["content_sha256"])
    ingested = [
        paper_id
        for paper_id in members
        if paper_id in chunk_hashes and artifacts.exists(["paper_abstract"], paper_id)
    ]
    if not ingested:
        raise RelatedWorkInputError(
            f"collection {collection!r} has no ingested paper ({len(members)} registered, "
            f"none with its abstract and chunks stored); run `litpipe run SOURCE --collection "
            f"{collection}` first"
        )
    abstracts = [artifacts.read(["paper_abstract"], p, PaperAbstract) for p in ingested]
    abstracts_of = set(ingested)
    full_text = [p for p in ingested if catalog.source(p).kind == "pdf"]
    return CollectionPool(
        collection=collection,
        abstracts=abstracts,
        full_text=full_text,
        not_ingested=[p for p in members if p not in abstracts_of],
        fingerprint=digest(
            *(
                digest(a.paper_id, a.title, a.abstract, str(a.paper_id in full_text))
                + digest(*chunk_hashes[a.paper_id])
                for a in abstracts
            )
        ),
    )


def passage_tokens(related_work: RelatedWorkSettings, top_k: int) -> int:
    """The most tokens one reference's passage may take: the passages of the top-k together
    take at most a quarter of the writer's context."""
    return related_work.context_tokens // (_PASSAGE_SHARE * top_k)


def leading_sentences(text: str, tokens: int) -> str:
    """The text's first whole sentences that fit in `tokens`; empty when the first does not."""
    kept: list[str] = []
    for span in sentences(text):
        sentence = " ".join(span.text.split())
        if estimate_tokens(" ".join([*kept, sentence])) > tokens:
            break
        kept.append(sentence)
    return " ".join(kept)


def best_passages(
    idea: str, pool: CollectionPool, retriever: HybridRetriever, retrieval: RetrievalSettings
) -> dict[str, str]:
    """Each full-text paper's chunk that ranks best for the idea among the collection's
    `retrieval.candidates` fused hits (one search: BM25 and dense, fused by RRF, not
    diversified, since each paper keeps one chunk); a paper with none among them has none."""
    wanted = set(pool.full_text)
    best: dict[str, str] = {}
    found = retriever.search(
        idea, limit=retrieval.candidates, candidates=retrieval.candidates, diversify=False
    )
    for chunk in found:
        if chunk.paper_id in wanted:
            best.setdefault(chunk.paper_id, chunk.text)
    return best


def pool_references(
    pool: CollectionPool,
    request: RelatedWorkRequest,
    retriever: HybridRetriever,
    related_work: RelatedWorkSettings,
    retrieval: RetrievalSettings,
) -> ReferenceTable:
    """The pool as a reference table: one reference per paper, cited by its paper id, with its
    best passage for the request's idea where it has a full text."""
    budget = passage_tokens(related_work, request.top_k)
    found = best_passages(request.idea, pool, retriever, retrieval) if pool.full_text else {}
    return pool_table(
        pool, {paper_id: leading_sentences(text, budget) for paper_id, text in found.items()}
    )


def pool_table(pool: CollectionPool, passages: Mapping[str, str]) -> ReferenceTable:
    """The pool as a reference table, each paper with its passage in `passages`, if any."""
    references = [
        Reference(
            id=abstract.paper_id,
            title=" ".join(abstract.title.split()),
            abstract=abstract.abstract.strip(),
            passage=passages.get(abstract.paper_id, ""),
        )
        for abstract in pool.abstracts
    ]
    return ReferenceTable(
        path=Path(pool.collection),
        references=references,
        skipped=[f"paper {paper_id}: not ingested" for paper_id in pool.not_ingested],
        collection=pool.collection,
    )
