"""The vector store's maintenance: what keeps its tables cheap to read and write as commits pile
up (one a paper, many a night), and the only place that builds the vector index of a store on
object storage.

Runs without Dagster (`vector_maintenance(store)`); the `vector_maintenance` asset wraps it and
its schedule runs it every night. Every chunk table of the store (one per embedder) is
maintained (`ChunkStore.maintain`): one scan for duplicate chunk_ids (instead of one per write),
the scalar indexes on chunk_id and paper_id (so that a write's check of its own ids is a lookup),
LanceDB's `optimize` (small fragments compacted, new rows added to the indexes, versions older
than the retention and their files deleted), then the vector index's policy.
"""

from __future__ import annotations

from datetime import timedelta

from litpipe.retrieval.store import VECTOR_INDEX_MIN_ROWS, ChunkStore, Maintenance

# Versions (and the files only they use) are kept this long: a reader or writer still on an
# older version (a query, a commit being retried) would fail once its files are gone, and every
# litpipe read checks for the latest version, so a day is ample. LanceDB's default is 7 days.
RETENTION = timedelta(days=1)


def vector_maintenance(
    store: ChunkStore,
    retention: timedelta = RETENTION,
    vector_index_min_rows: int = VECTOR_INDEX_MIN_ROWS,
) -> list[Maintenance]:
    """Maintain every chunk table of `store`; what was done to each, by table name."""
    if retention <= timedelta(0):
        raise ValueError(f"retention must be positive, not {retention}: readers would fail")
    done = []
    for name in store.table_names():
        maintained = store.maintain(name, retention, vector_index_min_rows)
        if maintained is not None:
            done.append(maintained)
    return done
