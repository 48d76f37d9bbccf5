"""Many processes writing one chunk table without a lock, as they do on object storage: chunk_id
is the table's declared primary key, so a concurrent duplicate is rejected at commit and retried,
and a write checks only its own chunk_ids afterwards, never the whole table. The writers run on a
local folder and on a bucket of moto's S3 server (issue 49: LanceDB's commits through S3's
conditional puts)."""

from __future__ import annotations

import logging
import multiprocessing
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pytest

from litpipe.retrieval.store import ChunkStore, table_name
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.object_store_server import object_store_server
from litpipe_tests.processes import starmap_in_processes
from litpipe_tests.test_store import paper, store_chunks_twice

PAPERS = 6
CHUNKS = 30  # a paper's chunks: one write
WRITERS = 4


def papers_to_embed() -> list:
    return [
        paper(
            f"p{number}",
            [f"Paper {number} finding {i} about kinase {i % 7}." for i in range(CHUNKS)],
        )
        for number in range(PAPERS)
    ]


def _embed_every_paper(db_dir: str, seed: int) -> tuple[int, int]:
    """One writer: every paper, a commit each, in its own order; (rows it read looking for
    duplicates, rows it wrote)."""
    store = ChunkStore(db_dir, lock_writes=False)
    papers = papers_to_embed()
    random.Random(seed).shuffle(papers)
    for one in papers:
        store.embed_paper(one, FakeEmbedder())
    return store.rows_read_for_duplicates, sum(len(one.chunks) for one in papers)


@pytest.fixture(params=["folder", "s3"])
def db_dir(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The table's place: a local folder, or a bucket of moto's S3 server on loopback (its
    endpoint and credentials in the environment, which the writers' processes inherit)."""
    if request.param == "folder":
        yield str(tmp_path / "lancedb")
        return
    with object_store_server() as server:
        for name, value in server.environment().items():
            monkeypatch.setenv(name, value)
        yield f"s3://{server.new_bucket()}/lancedb"


def test_writers_without_a_lock_leave_every_chunk_once_and_never_scan_the_table(
    db_dir: str,
) -> None:
    done = starmap_in_processes(
        _embed_every_paper, [(db_dir, seed) for seed in range(WRITERS)], WRITERS
    )

    store = ChunkStore(db_dir, lock_writes=False)
    chunk_ids = store.chunk_rows(FakeEmbedder.embedder_id, ["chunk_id"]).column("chunk_id")
    expected = sorted(chunk.chunk_id for one in papers_to_embed() for chunk in one.chunks)
    assert sorted(chunk_ids.to_pylist()) == expected  # every chunk, once
    assert store.count_rows(FakeEmbedder.embedder_id) == PAPERS * CHUNKS
    # Each write read back its own 30 rows (once each: no duplicate was ever there), however
    # large the table had grown; a scan per write would have read up to the whole table.
    for rows_read, rows_written in done:
        assert rows_read == rows_written == PAPERS * CHUNKS
    # Opening a table that has its key reads nothing for duplicates.
    assert store.rows_read_for_duplicates == 0


def test_a_lock_cannot_be_asked_of_object_storage() -> None:
    try:
        ChunkStore("memory://litpipe-test", lock_writes=True)
    except ValueError as error:
        assert "no file lock" in str(error)
    else:
        raise AssertionError("lock_writes=True on object storage was accepted")


def test_a_table_written_before_the_key_is_repaired_once_then_keyed(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    db_dir = tmp_path / "lancedb"
    ChunkStore(db_dir).embed_papers(papers_to_embed()[:3], fake_embedder)
    store_chunks_twice(db_dir, fake_embedder.embedder_id, ["p0:0000", "p1:0002"], before="p2")

    first = ChunkStore(db_dir, lock_writes=False)
    assert first.count_rows(fake_embedder.embedder_id) == 3 * CHUNKS
    # The table scanned (with its 2 duplicates; again under the lock, to delete them).
    assert first.rows_read_for_duplicates == 2 * (3 * CHUNKS + 2)
    table = lancedb.connect(str(db_dir)).open_table(table_name(fake_embedder.embedder_id))
    assert table.schema.field("chunk_id").metadata  # the key, declared

    later = ChunkStore(db_dir, lock_writes=False)
    assert later.count_rows(fake_embedder.embedder_id) == 3 * CHUNKS
    assert later.rows_read_for_duplicates == 0


def test_a_table_is_created_with_its_key(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    store = ChunkStore(tmp_path / "lancedb")
    store.embed_paper(papers_to_embed()[0], fake_embedder)
    table = store.open_table(fake_embedder.embedder_id)
    assert table is not None
    key = table.schema.field("chunk_id").metadata
    assert key == {b"lance-schema:unenforced-primary-key:position": b"1"}
    # A plain upsert of a stored chunk updates it.
    before = table.count_rows()
    rows = table.search().where("chunk_id = 'p0:0000'").limit(None).to_arrow()
    table.merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all().execute(
        pa.Table.from_batches(rows.to_batches(), schema=table.schema)
    )
    assert table.count_rows() == before


def _cross_the_index_threshold(db_dir: str, worker: int, barrier: Any) -> tuple[bool, int]:
    """One writer of a locked store: its 200 chunks, then, at the same moment as the others
    (the table has crossed 300 rows by then), the vector index's policy; whether it built it,
    and how many builds it started (each one trains an index: 20 s at 200k rows)."""
    started: list[str] = []

    class Builds(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("building the vector index"):
                started.append(record.getMessage())

    store_log = logging.getLogger("litpipe.retrieval.store")
    store_log.setLevel(logging.INFO)
    store_log.addHandler(Builds())
    store = ChunkStore(Path(db_dir), vector_index_min_rows=None)
    batch = [
        paper(
            f"w{worker}p{number}",
            [f"Writer {worker} paper {number} result {i}." for i in range(20)],
        )
        for number in range(10)
    ]
    store.embed_papers(batch, FakeEmbedder())
    barrier.wait()
    return store.ensure_vector_index(FakeEmbedder.embedder_id, min_rows=300), len(started)


def test_writers_crossing_the_index_threshold_together_build_the_index_once(
    tmp_path: Path,
) -> None:
    db_dir = tmp_path / "lancedb"
    with multiprocessing.get_context("spawn").Manager() as manager:
        barrier = manager.Barrier(3)
        built = starmap_in_processes(
            _cross_the_index_threshold, [(str(db_dir), w, barrier) for w in range(3)], 3
        )
    assert sorted(done for done, _ in built) == [False, False, True]
    assert sum(started for _, started in built) == 1  # the others waited, then found it built
    table = ChunkStore(db_dir).open_table(FakeEmbedder.embedder_id)
    assert table is not None and table.index_stats("vector_idx").num_indexed_rows == 600
