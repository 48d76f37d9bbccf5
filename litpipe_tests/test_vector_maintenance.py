"""The vector store's nightly maintenance: what a paper a commit leaves (a fragment and a version
each) compacted and cleaned, duplicates removed, the vector index built there (on object storage,
only there), searches unchanged."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import dagster as dg
import numpy as np
import pytest

from litpipe.defs.assets.vector_maintenance import build_vector_maintenance_assets
from litpipe.defs.resources import LanceDBResource
from litpipe.retrieval import store as store_module
from litpipe.retrieval.store import ChunkStore
from litpipe.workflows.vector_maintenance import vector_maintenance
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.test_store import paper, store_chunks_twice

PAPERS = [
    paper(f"p{number}", [f"Paper {number} finding {i} on kinase {i % 5}." for i in range(20)])
    for number in range(12)
]


def test_vector_maintenance_compacts_cleans_and_indexes_without_changing_searches(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # As on object storage: writers do not build the vector index, however large the table.
    store = ChunkStore(tmp_path / "lancedb", vector_index_min_rows=100, lock_writes=False)
    for one in PAPERS:  # a commit a paper
        store.embed_paper(one, fake_embedder)
    table = store.open_table(fake_embedder.embedder_id)
    assert table is not None and table.index_stats(store_module.VECTOR_INDEX) is None
    query = fake_embedder.encode(["finding 3 on kinase 3"])[0]
    before = store.dense_search(fake_embedder.embedder_id, query, 10, bypass_vector_index=True)
    time.sleep(1.0)

    (done,) = vector_maintenance(store, timedelta(milliseconds=500), vector_index_min_rows=100)
    assert done.rows == 240 and done.duplicates_removed == 0
    assert done.fragments_before >= 12 and done.fragments_after == 1
    assert done.versions_after < done.versions_before
    assert done.vector_index_built
    assert table.index_stats(store_module.VECTOR_INDEX).num_indexed_rows == 240
    indexed = {index.columns[0] for index in table.list_indices()}
    assert {"chunk_id", "paper_id", "vector"} <= indexed
    after = store.dense_search(fake_embedder.embedder_id, query, 10, bypass_vector_index=True)
    assert [row["chunk_id"] for row in after] == [row["chunk_id"] for row in before]
    np.testing.assert_allclose(
        [row["score"] for row in after], [row["score"] for row in before], atol=1e-6
    )

    # Run again with nothing new: nothing rebuilt.
    (again,) = vector_maintenance(store, timedelta(milliseconds=500), vector_index_min_rows=100)
    assert not again.vector_index_built and again.fragments_after == 1


def test_vector_maintenance_removes_duplicates_and_refuses_no_retention(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    db_dir = tmp_path / "lancedb"
    ChunkStore(db_dir).embed_papers(PAPERS[:3], fake_embedder)
    store_chunks_twice(db_dir, fake_embedder.embedder_id, ["p0:0000"], before="p2")
    store = ChunkStore(db_dir)
    with pytest.raises(ValueError, match="retention"):
        vector_maintenance(store, timedelta(0))
    assert [done.rows for done in vector_maintenance(store)] == [60]
    assert vector_maintenance(ChunkStore(tmp_path / "empty")) == []


def test_the_vector_maintenance_asset_reports_what_it_did(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    db_dir = tmp_path / "lancedb"
    store = ChunkStore(db_dir)
    for one in PAPERS[:4]:
        store.embed_paper(one, fake_embedder)
    (asset,) = build_vector_maintenance_assets()
    result = dg.materialize([asset], resources={"lancedb": LanceDBResource(uri=str(db_dir))})
    assert result.success
    (materialization,) = result.asset_materializations_for_node("vector_maintenance")
    metadata = {key: value.value for key, value in materialization.metadata.items()}
    assert metadata["tables"] == 1 and metadata["rows"] == 80 and metadata["fragments"] == 1
    assert store.count_rows(fake_embedder.embedder_id) == 80
