"""Hybrid retrieval over a collection in the chunk store: fusion, provenance, scope filters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from litpipe.retrieval.bm25 import BM25Index
from litpipe.retrieval.hybrid import (
    HybridRetriever,
    bm25_text,
    diversify_fused,
    fuse,
    paper_retrievers,
)
from litpipe.retrieval.mmr import DEFAULT_MMR_LAMBDA
from litpipe.retrieval.store import ChunkStore
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.test_store import paper, store_chunks_twice

PAPERS = {
    "p1": [
        "Aspirin lowers the risk of myocardial infarction in adults.",
        "Aspirin inhibits platelet aggregation through cyclooxygenase.",
    ],
    "p2": [
        "IL-6 signalling drives inflammation in rheumatoid arthritis.",
        "Tocilizumab blocks the IL-6 receptor in arthritis patients.",
    ],
    "p3": [
        "Deep learning predicts protein structure from sequence.",
        "Aspirin use and platelet counts in a cohort of adults.",
    ],
}

# The collection "bio": the catalog's list of its papers (x1, in the same table, is not one).
BIO = sorted(PAPERS)


@pytest.fixture
def store(tmp_path: Path, fake_embedder: FakeEmbedder) -> ChunkStore:
    store = ChunkStore(tmp_path / "lancedb")
    papers = [paper(paper_id, texts) for paper_id, texts in PAPERS.items()]
    papers.append(paper("x1", ["Aspirin in another collection."]))
    results = store.embed_papers(papers, fake_embedder, batch_papers=2)
    assert [result.embedded for result in results] == [2, 2, 2, 1]
    # Two batches, two encode calls: not one per paper.
    assert len(fake_embedder.encode_calls) == 2
    return store


def test_embed_papers_reuses_stored_vectors(store: ChunkStore, fake_embedder: FakeEmbedder) -> None:
    papers = [paper(paper_id, texts) for paper_id, texts in PAPERS.items()]
    papers[0] = paper("p1", [PAPERS["p1"][0]])
    results = store.embed_papers(papers, fake_embedder)
    assert [result.embedded for result in results] == [0, 0, 0]
    assert results[0].removed == 1
    assert store.paper_chunk_ids(fake_embedder.embedder_id, "p1") == ["p1:0000"]
    assert len(fake_embedder.encode_calls) == 2


def test_search_fuses_both_retrievers_with_provenance(
    store: ChunkStore, fake_embedder: FakeEmbedder, tmp_path: Path
) -> None:
    retriever = HybridRetriever(store, fake_embedder, "bio", tmp_path / "bm25", papers=BIO)
    assert len(retriever) == 6
    results = retriever.search("aspirin platelet aggregation", limit=3, diversify=False)
    assert results[0].chunk_id == "p1:0001"
    top = results[0]
    assert (top.paper_id, top.section, top.char_start) == (
        "p1",
        "Results",
        len(PAPERS["p1"][0]) + 1,
    )
    assert top.text == PAPERS["p1"][1]
    assert top.bm25_rank == 1 and top.dense_rank is not None and top.fused_rank == 1
    assert [result.fused_rank for result in results] == [1, 2, 3]
    # A paper the collection does not hold (x1 is in the table, not in `BIO`) is never found.
    everything = retriever.search("aspirin", limit=10, candidates=10)
    assert all(result.paper_id != "x1" for result in everything)
    assert len({result.chunk_id for result in everything}) == len(everything)


def test_every_chunk_keeps_its_own_vector_in_a_table_holding_chunks_twice(
    tmp_path: Path, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_dir = tmp_path / "lancedb"
    papers = [paper(paper_id, texts) for paper_id, texts in PAPERS.items()]
    ChunkStore(db_dir).embed_papers(papers, fake_embedder)
    store_chunks_twice(db_dir, fake_embedder.embedder_id, ["p1:0000"], before="p3")
    # Even a table not repaired yet (another process may hold it) pairs chunks and vectors
    # by chunk_id.
    monkeypatch.setattr(ChunkStore, "_remove_duplicates", lambda self, table: 0)

    retriever = HybridRetriever(ChunkStore(db_dir), fake_embedder, "bio", tmp_path / "bm25")
    chunk_ids = [chunk.chunk_id for p in papers for chunk in p.chunks]
    assert len(retriever) == len(chunk_ids) == 6
    np.testing.assert_allclose(
        retriever.vectors(chunk_ids),
        fake_embedder.encode([chunk.text for p in papers for chunk in p.chunks]),
        atol=1e-6,
    )
    dense = retriever.dense_ranking(fake_embedder.encode([PAPERS["p1"][0]])[0], limit=10)
    assert len(dense) == len({chunk_id for chunk_id, _ in dense}) == 6


def test_scope_filters(store: ChunkStore, fake_embedder: FakeEmbedder, tmp_path: Path) -> None:
    retriever = HybridRetriever(store, fake_embedder, "bio", tmp_path / "bm25", papers=BIO)
    own = retriever.search("aspirin adults", limit=10, scope="own", paper_id="p3")
    assert {result.paper_id for result in own} == {"p3"}
    others = retriever.search("aspirin adults", limit=10, scope="others", paper_id="p1")
    assert others and "p1" not in {result.paper_id for result in others}
    everyone = retriever.search("aspirin adults", limit=10, scope="all")
    assert {"p1", "p3"} <= {result.paper_id for result in everyone}
    with pytest.raises(ValueError):
        retriever.search("aspirin", scope="own")


def test_bm25_index_is_reused_by_a_new_retriever(
    store: ChunkStore, fake_embedder: FakeEmbedder, tmp_path: Path
) -> None:
    assert HybridRetriever(store, fake_embedder, "bio", tmp_path / "bm25", papers=BIO).bm25.built
    assert not HybridRetriever(
        store, fake_embedder, "bio", tmp_path / "bm25", papers=BIO
    ).bm25.built
    store.embed_papers([paper("p3", ["Protein folding with deep learning."])], fake_embedder)
    assert HybridRetriever(store, fake_embedder, "bio", tmp_path / "bm25", papers=BIO).bm25.built


def test_a_later_chunk_matches_its_papers_title_by_bm25(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    store = ChunkStore(tmp_path / "lancedb")
    titled = paper("t1", ["Background on the cohort.", "Doses were given weekly."])
    titled.title = "Tocilizumab in giant cell arteritis"
    other = paper(
        "t2",
        [
            "Weekly doses of methotrexate were given.",
            "Protein folding predicted from sequence.",
            "Yeast proteomes across fermentation.",
            "Mutation rates in hypomethylated genes.",
        ],
    )
    store.embed_papers([titled, other], fake_embedder)
    retriever = HybridRetriever(store, fake_embedder, "bio", None)
    ranked = [chunk_id for chunk_id, _ in retriever.bm25_ranking("tocilizumab weekly doses", 5)]
    # The chunk with the doses beats the other paper's by its title; the title alone finds the
    # first chunk, whose text never names the drug.
    assert ranked[0] == "t1:0001" and "t1:0000" in ranked
    assert bm25_text("A title", "A title opens this chunk.") == "A title opens this chunk."
    assert bm25_text("A title", "Later text.") == "A title\nLater text."
    assert bm25_text("", "Later text.") == "Later text."


def test_a_table_written_before_titles_gets_them_when_papers_are_written_again(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    store = ChunkStore(tmp_path / "lancedb")
    titled = paper("t1", ["Doses were given weekly."])
    titled.title = "Tocilizumab in giant cell arteritis"
    store.embed_papers([titled], fake_embedder)
    store.open_table(fake_embedder.embedder_id).drop_columns(["title"])

    (result,) = store.embed_papers([titled], fake_embedder)
    assert result.embedded == 0
    rows = store.chunk_rows(fake_embedder.embedder_id, ["chunk_id", "title"])
    assert rows.to_pylist() == [{"chunk_id": "t1:0000", "title": titled.title}]


def test_search_reads_only_its_candidates_rows_and_ranks_as_an_in_memory_search(
    tmp_path: Path, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory stays bounded: a retriever whose BM25 index is saved reads no chunk's text or
    vector to start, and a search reads those of its candidates only; its results are those of
    BM25 and exact cosine over every chunk held in memory, fused and diversified alike."""
    words = [
        "aspirin",
        "platelet",
        "arthritis",
        "tocilizumab",
        "protein",
        "sequence",
        "cohort",
        "dose",
        "yeast",
        "gene",
    ]
    texts = {
        f"q{number}": [
            f"{words[number % 10]} {words[(number * 3 + index) % 10]} study {number} part {index}"
            for index in range(3)
        ]
        for number in range(20)
    }
    store = ChunkStore(tmp_path / "lancedb")
    store.embed_papers([paper(p, chunk_texts) for p, chunk_texts in texts.items()], fake_embedder)
    # The collection is every paper of the table: searched without a filter naming each.
    HybridRetriever(
        store, fake_embedder, "q", tmp_path / "bm25", papers=sorted(texts)
    )  # saves BM25

    reads: list[tuple[list[str], int]] = []
    chunk_rows = ChunkStore.chunk_rows

    def recorded(self: ChunkStore, *args: object, **kwargs: object) -> object:
        rows = chunk_rows(self, *args, **kwargs)  # type: ignore[arg-type]
        reads.append((rows.column_names, rows.num_rows))
        return rows

    monkeypatch.setattr(ChunkStore, "chunk_rows", recorded)
    retriever = HybridRetriever(store, fake_embedder, "q", tmp_path / "bm25", papers=sorted(texts))
    assert not retriever.bm25.built and len(retriever) == 60
    assert all("text" not in columns and "vector" not in columns for columns, _ in reads)

    chunks = [chunk for p, chunk_texts in texts.items() for chunk in paper(p, chunk_texts).chunks]
    chunk_ids = [chunk.chunk_id for chunk in chunks]
    vectors = fake_embedder.encode([chunk.text for chunk in chunks])
    by_id = dict(zip(chunk_ids, vectors, strict=True))
    in_memory_bm25 = BM25Index(chunk_ids, [bm25_text("", chunk.text) for chunk in chunks])
    for query in ["aspirin platelet study", "yeast gene part 2", "cohort dose"]:
        reads.clear()
        found = retriever.search(query, limit=5, candidates=8)
        assert all(rows <= 8 for columns, rows in reads if "vector" in columns or "text" in columns)
        query_vector = fake_embedder.encode([query])[0]
        cosine = vectors @ query_vector
        dense = [(chunk_ids[i], float(cosine[i])) for i in np.argsort(-cosine, kind="stable")[:8]]
        fused = fuse(in_memory_bm25.search(query, 8), dense, 8)
        expected = diversify_fused(
            query_vector,
            fused,
            lambda ids: np.stack([by_id[i] for i in ids]),
            DEFAULT_MMR_LAMBDA,
            5,
        )
        assert [chunk.chunk_id for chunk in found] == expected
        assert [chunk.text for chunk in found] == [
            chunks[chunk_ids.index(i)].text for i in expected
        ]


def test_a_batchs_paper_retrievers_read_once_and_find_what_a_papers_own_retriever_finds(
    store: ChunkStore, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """question_evidence's scope "own" over a batch: each paper's retriever searches its chunks
    in memory, after one read of the batch's rows; the results, scores and provenance are those
    of the retriever that reads LanceDB for that paper alone."""
    reads: list[int] = []
    chunk_rows = ChunkStore.chunk_rows

    def recorded(self: ChunkStore, *args: object, **kwargs: object) -> object:
        reads.append(1)
        return chunk_rows(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ChunkStore, "chunk_rows", recorded)
    held = paper_retrievers(store, fake_embedder, ["p1", "p2", "p3", "x1", "absent"])
    assert len(reads) == 1
    for query in ["aspirin platelet adults", "IL-6 arthritis receptor", "protein sequence"]:
        for paper_id in ["p1", "p2", "p3"]:
            alone = HybridRetriever(store, fake_embedder, "bio", None, papers=[paper_id])
            expected = alone.search(query, limit=2, candidates=10, scope="own", paper_id=paper_id)
            reads.clear()
            found = held[paper_id].search(
                query, limit=2, candidates=10, scope="own", paper_id=paper_id
            )
            assert [chunk.chunk_id for chunk in found] == [c.chunk_id for c in expected]
            for got, want in zip(found, expected, strict=True):
                assert got.dense_score == pytest.approx(want.dense_score, abs=1e-5)
                assert got.model_dump(exclude={"dense_score", "fused_score"}) == want.model_dump(
                    exclude={"dense_score", "fused_score"}
                )
            assert reads == []
    # A paper's own retriever is the same whatever collections hold it; one without chunks
    # finds nothing.
    assert [c.paper_id for c in held["x1"].search("aspirin", scope="own", paper_id="x1")] == ["x1"]
    assert held["absent"].search("aspirin", scope="own", paper_id="absent") == []
