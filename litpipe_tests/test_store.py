"""The LanceDB chunk store: embed once per (content, embedder), upsert by chunk id, find by text."""

from __future__ import annotations

import re
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from lancedb.index import Bitmap
from lancedb.query import LanceVectorQueryBuilder

from litpipe.retrieval import store as store_module
from litpipe.retrieval.store import ChunkStore, table_name
from litpipe.schemas import Chunk, PaperChunks, sha256_text
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.processes import starmap_in_processes


def paper(paper_id: str, texts: list[str]) -> PaperChunks:
    chunks, offset = [], 0
    for index, text in enumerate(texts):
        chunks.append(
            Chunk(
                chunk_id=f"{paper_id}:{index:04d}",
                paper_id=paper_id,
                index=index,
                section="Results",
                page_start=1 + index // 3,
                page_end=1 + index // 3,
                char_start=offset,
                char_end=offset + len(text),
                text=text,
                n_tokens=len(text.split()),
                content_sha256=sha256_text(text),
            )
        )
        offset += len(text) + 1
    return PaperChunks(
        paper_id=paper_id,
        tokenizer="fake-hash-32",
        max_tokens=64,
        overlap_tokens=0,
        chunks=chunks,
    )


TEXTS = [
    f"Chunk {number} describes how protein {number} binds its receptor." for number in range(8)
]


@pytest.fixture
def store(tmp_path: Path) -> ChunkStore:
    return ChunkStore(tmp_path / "lancedb")


def test_embedding_a_paper_stores_one_row_per_chunk(
    store: ChunkStore, fake_embedder: FakeEmbedder
) -> None:
    result = store.embed_paper(paper("p1", TEXTS), fake_embedder)
    assert (result.chunks, result.embedded, result.reused, result.removed) == (8, 8, 0, 0)
    assert result.table == table_name("fake-hash-32") == "chunks__fake-hash-32"
    assert len(fake_embedder.encode_calls) == 1  # one batch for the paper
    assert store.count_rows("fake-hash-32") == 8
    assert store.paper_chunk_ids("fake-hash-32", "p1") == [f"p1:{i:04d}" for i in range(8)]
    assert store.table_names() == ["chunks__fake-hash-32"]


def test_stored_rows_keep_the_chunk_and_its_vector(
    store: ChunkStore, fake_embedder: FakeEmbedder
) -> None:
    chunks = paper("p1", TEXTS)
    store.embed_paper(chunks, fake_embedder)
    table = store.open_table("fake-hash-32")
    assert table is not None
    rows = table.search().where("chunk_id = 'p1:0004'").limit(None).to_list()
    assert len(rows) == 1
    row, chunk = rows[0], chunks.chunks[4]
    for field in ("paper_id", "section", "page_start", "char_start", "text"):
        assert row[field] == getattr(chunk, field)
    assert row["embedder_id"] == "fake-hash-32"
    assert np.allclose(row["vector"], fake_embedder.encode([chunk.text])[0])


def test_re_embedding_the_same_chunks_embeds_nothing_and_adds_no_row(
    store: ChunkStore, fake_embedder: FakeEmbedder
) -> None:
    store.embed_paper(paper("p1", TEXTS), fake_embedder)
    table = store.open_table("fake-hash-32")
    assert table is not None
    version = table.version
    again = store.embed_paper(paper("p1", TEXTS), fake_embedder)
    assert (again.embedded, again.reused, again.removed) == (0, 8, 0)
    assert store.count_rows("fake-hash-32") == 8
    assert fake_embedder.embedded_texts == 8
    table.checkout_latest()
    assert table.version == version  # nothing was written


def test_a_changed_chunk_is_the_only_one_embedded(
    store: ChunkStore, fake_embedder: FakeEmbedder
) -> None:
    store.embed_paper(paper("p1", TEXTS), fake_embedder)
    changed = [*TEXTS[:3], "A rewritten third chunk about kinase inhibitors.", *TEXTS[4:]]
    result = store.embed_paper(paper("p1", changed), fake_embedder)
    assert (result.embedded, result.reused, result.removed) == (1, 7, 0)
    assert fake_embedder.encode_calls[-1] == ["A rewritten third chunk about kinase inhibitors."]
    assert store.count_rows("fake-hash-32") == 8
    table = store.open_table("fake-hash-32")
    assert table is not None
    third = table.search().where("chunk_id = 'p1:0003'").select(["text"]).to_list()
    assert [row["text"] for row in third] == ["A rewritten third chunk about kinase inhibitors."]


def test_chunks_a_paper_no_longer_has_are_deleted(
    store: ChunkStore, fake_embedder: FakeEmbedder
) -> None:
    store.embed_paper(paper("p1", TEXTS), fake_embedder)
    store.embed_paper(paper("p2", TEXTS[:2]), fake_embedder)
    result = store.embed_paper(paper("p1", TEXTS[:5]), fake_embedder)
    assert (result.chunks, result.embedded, result.removed) == (5, 0, 3)
    assert store.paper_chunk_ids("fake-hash-32", "p1") == [f"p1:{i:04d}" for i in range(5)]
    assert store.paper_chunk_ids("fake-hash-32", "p2") == ["p2:0000", "p2:0001"]
    emptied = store.embed_paper(paper("p2", []), fake_embedder)
    assert emptied.removed == 2 and store.paper_chunk_ids("fake-hash-32", "p2") == []
    assert store.count_rows("fake-hash-32") == 5


def test_identical_text_in_another_paper_reuses_the_stored_vector(
    store: ChunkStore, fake_embedder: FakeEmbedder
) -> None:
    store.embed_paper(paper("p1", TEXTS), fake_embedder)
    shared = [TEXTS[2], "Only the second paper has this sentence.", TEXTS[5]]
    result = store.embed_paper(paper("p2", shared), fake_embedder)
    assert (result.embedded, result.reused) == (1, 2)
    assert fake_embedder.encode_calls[-1] == ["Only the second paper has this sentence."]
    assert store.count_rows("fake-hash-32") == 11


def test_text_repeated_within_a_paper_is_embedded_once(
    store: ChunkStore, fake_embedder: FakeEmbedder
) -> None:
    result = store.embed_paper(paper("p1", ["Same words.", "Same words.", "Other."]), fake_embedder)
    assert result.embedded == 3 and result.chunks == 3
    assert len(fake_embedder.encode_calls) == 1
    assert sorted(fake_embedder.encode_calls[0]) == ["Other.", "Same words."]


def test_each_embedder_has_its_own_table(store: ChunkStore, fake_embedder: FakeEmbedder) -> None:
    other = FakeEmbedder()
    other.embedder_id = "other/model v2"
    store.embed_paper(paper("p1", TEXTS), fake_embedder)
    result = store.embed_paper(paper("p1", TEXTS), other)
    assert result.embedded == 8  # vectors of another model are never reused
    assert re.fullmatch(r"chunks__[A-Za-z0-9_.-]+", result.table)
    assert store.table_names() == sorted(["chunks__fake-hash-32", result.table])
    assert store.count_rows("no-such-embedder") == 0


def _embed_papers_in_a_process(db_dir: str, worker: int) -> int:
    store = ChunkStore(Path(db_dir))
    for number in range(4):
        texts = [f"Worker {worker} paper {number} chunk {i}." for i in range(6)]
        store.embed_paper(paper(f"w{worker}p{number}", texts), FakeEmbedder())
    return worker


def test_concurrent_writers_to_one_table_all_succeed(tmp_path: Path) -> None:
    db_dir = tmp_path / "lancedb"
    done = starmap_in_processes(_embed_papers_in_a_process, [(str(db_dir), w) for w in range(3)], 3)
    assert sorted(done) == [0, 1, 2]
    assert ChunkStore(db_dir).count_rows("fake-hash-32") == 3 * 4 * 6


def store_chunks_twice(db_dir: Path, embedder_id: str, chunk_ids: list[str], before: str) -> None:
    """Leave the table as racing writers of earlier versions did, before chunk_id was its
    declared primary key: `chunk_ids` stored twice, the duplicates written before the rows of
    paper `before` (so that they sit between other chunks' rows)."""
    db = lancedb.connect(str(db_dir))
    rows = db.open_table(table_name(embedder_id)).to_arrow()
    unkeyed = pa.schema([field.remove_metadata() for field in rows.schema])
    db.drop_table(table_name(embedder_id))
    table = db.create_table(table_name(embedder_id), data=rows.cast(unkeyed))
    assert not table.schema.field("chunk_id").metadata
    ids = ", ".join(f"'{chunk_id}'" for chunk_id in chunk_ids)
    duplicates = table.search().where(f"chunk_id IN ({ids})").limit(None).to_arrow()
    later = table.search().where(f"paper_id = '{before}'").limit(None).to_arrow()
    table.delete(f"paper_id = '{before}'")
    table.add(duplicates)
    table.add(later)
    assert table.count_rows() == len(set(table.to_arrow().column("chunk_id").to_pylist())) + len(
        chunk_ids
    )


def test_duplicate_rows_are_repaired_when_a_store_opens_the_table(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    db_dir = tmp_path / "lancedb"
    papers = [
        paper(f"p{number}", [f"{text} Paper {number}." for text in TEXTS[:3]])
        for number in range(3)
    ]
    ChunkStore(db_dir).embed_papers(papers, fake_embedder)
    store_chunks_twice(db_dir, "fake-hash-32", ["p0:0000", "p1:0002"], before="p2")

    store = ChunkStore(db_dir)
    assert store.count_rows("fake-hash-32") == 9
    table = store.open_table("fake-hash-32")
    assert table is not None
    rows = table.to_arrow()
    assert sorted(rows.column("chunk_id").to_pylist()) == sorted(
        chunk.chunk_id for p in papers for chunk in p.chunks
    )
    text_of = {chunk.chunk_id: chunk.text for p in papers for chunk in p.chunks}
    np.testing.assert_allclose(
        np.stack(rows.column("vector").to_numpy(zero_copy_only=False)),
        fake_embedder.encode(
            [text_of[chunk_id] for chunk_id in rows.column("chunk_id").to_pylist()]
        ),
        atol=1e-6,
    )
    assert store.repair("fake-hash-32") == 0


def test_a_commit_conflict_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module.time, "sleep", lambda _: None)
    attempts = []

    def conflicting() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError("Commit conflict for version 7: a concurrent writer committed")
        return "done"

    def invalid() -> str:
        attempts.append(1)
        raise ValueError("bad filter")

    assert store_module._with_commit_retries(conflicting, "test") == "done"
    assert len(attempts) == 3
    with pytest.raises(ValueError, match="bad filter"):
        store_module._with_commit_retries(invalid, "test")
    assert len(attempts) == 4  # other errors are not retried


class ClusteredEncoder:
    """Vectors drawn once per text, around one of a few dozen centres (as real embeddings
    cluster by topic), so that nearest neighbours mean something."""

    embedder_id = "clustered-64"

    def __init__(self, texts: list[str], seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        centres = rng.standard_normal((40, 64))
        points = centres[rng.integers(0, 40, len(texts))] + 0.6 * rng.standard_normal(
            (len(texts), 64)
        )
        points /= np.linalg.norm(points, axis=1, keepdims=True)
        self.vectors = dict(zip(texts, points.astype(np.float32), strict=True))

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[text] for text in texts])


def _clustered_papers(papers: int, chunks: int, prefix: str = "q") -> list[PaperChunks]:
    return [
        paper(f"{prefix}{number}", [f"{prefix}{number} chunk {i}" for i in range(chunks)])
        for number in range(papers)
    ]


def _ids(rows: list[dict]) -> list[str]:
    return [row["chunk_id"] for row in rows]


@pytest.fixture
def clustered(tmp_path: Path) -> tuple[ChunkStore, ClusteredEncoder, list[PaperChunks]]:
    """3,000 chunks (30 papers of 100) in a store that leaves indexing to the test."""
    papers = _clustered_papers(30, 100)
    extra = _clustered_papers(2, 50, prefix="late")
    encoder = ClusteredEncoder([c.text for p in [*papers, *extra] for c in p.chunks])
    store = ChunkStore(tmp_path / "lancedb", vector_index_min_rows=None)
    store.embed_papers(papers, encoder)
    return store, encoder, extra


def test_the_vector_index_is_built_from_min_rows_and_searches_use_it(
    clustered: tuple[ChunkStore, ClusteredEncoder, list[PaperChunks]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, encoder, _ = clustered
    eid = encoder.embedder_id
    table = store.open_table(eid)
    assert table is not None and table.index_stats(store_module.VECTOR_INDEX) is None
    assert not store.ensure_vector_index(eid, min_rows=5000)  # too few rows: exact search
    assert store.ensure_vector_index(eid, min_rows=2000)
    stats = table.index_stats(store_module.VECTOR_INDEX)
    assert stats.index_type == "IVF_HNSW_SQ" and stats.num_indexed_rows == 3000
    assert not store.ensure_vector_index(eid, min_rows=2000)  # up to date: not rebuilt

    # The plan LanceDB runs for each of the store's queries: the index's, unless bypassed.
    plans: list[str] = []
    run_query = LanceVectorQueryBuilder.to_list

    def recording_plans(query: LanceVectorQueryBuilder) -> list[dict]:
        plans.append(query.explain_plan())
        return run_query(query)

    monkeypatch.setattr(LanceVectorQueryBuilder, "to_list", recording_plans)
    rng = np.random.default_rng(1)
    queries = rng.standard_normal((20, 64)).astype(np.float32)
    recalls = []
    for query in queries:
        exact = store.dense_search(eid, query, 10, bypass_vector_index=True)
        approximate = store.dense_search(eid, query, 10)
        recalls.append(len(set(_ids(exact)) & set(_ids(approximate))) / 10)
        # Re-ranked by the exact vectors, the scores are exact cosines.
        exact_score = {row["chunk_id"]: row["score"] for row in exact}
        for row in approximate:
            if row["chunk_id"] in exact_score:
                assert row["score"] == pytest.approx(exact_score[row["chunk_id"]], abs=1e-5)
    assert np.mean(recalls) >= 0.9
    assert "ANNSubIndex: name=vector_idx" in plans[-1] and "ANNSubIndex" not in plans[0]
    with pytest.raises(ValueError, match="refine_factor"):
        store.dense_search(eid, queries[0], 10, refine_factor=0)


def test_a_prefilter_by_paper_keeps_working_with_the_index(
    clustered: tuple[ChunkStore, ClusteredEncoder, list[PaperChunks]],
) -> None:
    store, encoder, _ = clustered
    eid = encoder.embedder_id
    assert store.ensure_vector_index(eid, min_rows=1000)
    query = encoder.vectors["q7 chunk 3"]
    own = store.dense_search(eid, query, 150, where="paper_id IN ('q6', 'q7') AND paper_id = 'q7'")
    assert len(own) == 100 and {row["paper_id"] for row in own} == {"q7"}
    assert own[0]["chunk_id"] == "q7:0003" and own[0]["score"] == pytest.approx(1.0, abs=1e-5)
    others = store.dense_search(eid, query, 20, where="paper_id != 'q7'")
    assert len(others) == 20 and "q7" not in {row["paper_id"] for row in others}


def test_rows_added_after_the_index_are_found_then_indexed(
    clustered: tuple[ChunkStore, ClusteredEncoder, list[PaperChunks]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, encoder, extra = clustered
    eid = encoder.embedder_id
    assert store.ensure_vector_index(eid, min_rows=1000)
    store.embed_papers(extra[:1], encoder)  # not maintained by this store: left unindexed
    table = store.open_table(eid)
    assert table is not None
    assert table.index_stats(store_module.VECTOR_INDEX).num_unindexed_rows == 50
    hit = store.dense_search(eid, encoder.vectors["late0 chunk 9"], 1)
    assert _ids(hit) == ["late0:0009"]  # scanned exactly meanwhile
    assert not store.ensure_vector_index(eid, min_rows=1000)  # 50 rows: not worth a rebuild

    # A store that maintains the index rebuilds it once enough rows wait outside it.
    monkeypatch.setattr(store_module, "VECTOR_UNINDEXED_ROWS", 80)
    monkeypatch.setattr(store_module, "VECTOR_UNINDEXED_SHARE", 0.02)
    maintaining = ChunkStore(store.db_dir, vector_index_min_rows=1000)
    maintaining.embed_papers(extra[1:], encoder)
    stats = table.index_stats(store_module.VECTOR_INDEX)
    assert (stats.num_indexed_rows, stats.num_unindexed_rows) == (3100, 0)
    assert _ids(maintaining.dense_search(eid, encoder.vectors["late1 chunk 4"], 1)) == [
        "late1:0004"
    ]


def test_a_table_with_the_old_collection_column_is_migrated_in_place(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    """Tables written when a paper belonged to one collection carried it in a column (with an
    index). Opened now, the column is dropped, the vectors kept: nothing is embedded again."""
    db_dir = tmp_path / "lancedb"
    ChunkStore(db_dir).embed_paper(paper("p1", TEXTS), fake_embedder)
    old = lancedb.connect(str(db_dir)).open_table(table_name(fake_embedder.embedder_id))
    old.add_columns({"collection": "'bio'"})
    old.create_index("collection", config=Bitmap())
    calls = len(fake_embedder.encode_calls)

    store = ChunkStore(db_dir)
    table = store.open_table(fake_embedder.embedder_id)
    assert table is not None and "collection" not in table.schema.names
    assert all(index.columns != ["collection"] for index in table.list_indices())
    assert store.embed_paper(paper("p1", TEXTS), fake_embedder).embedded == 0
    assert len(fake_embedder.encode_calls) == calls
    assert store.count_rows(fake_embedder.embedder_id) == len(TEXTS)
