"""The chunk store: one LanceDB table of chunks and their vectors per embedder.

A vector is keyed on (chunk content hash, embedder): the table of an embedder is searched for the
hashes of a paper's chunks, and only text never embedded by that model is encoded. A paper's rows
are replaced in one commit (upsert by chunk_id, delete what the paper no longer has), so readers
never see half a paper, and a commit that loses a race with another writer is retried.

A table holds one row per chunk_id whatever its writers. `chunk_id` is the table's declared
(unenforced) primary key, and writes are `merge_insert`s on it: Lance then records the keys a
commit inserts, and a commit inserting a key that another commit inserted meanwhile conflicts and
is retried against the new version, where the row is matched and updated, not doubled. Without
the declared key two processes upserting the same new chunks at once would both insert them
(LanceDB's optimistic commits let two inserts through): with 8 processes upserting the same 30
chunks at once, 240 rows without the key; 30 with it, the other 7 merges rejected at commit and
re-run by `merge_insert` itself (its own retries: none reached litpipe's).

In a local store the writers of a table also take turns, under an exclusive file lock next to
the table. Object storage has no such lock (nor has a store made with `lock_writes=False`):
there, each write is followed by a check of the batch's own chunk_ids, which deletes a duplicate
that a writer without the key left: a filtered read returning the batch's rows only, a lookup in
the chunk_id index that the maintenance step keeps (rows written since its last run are
filtered by Lance, not read into litpipe). A table written before the key was declared (by an
earlier version) is repaired once, the first time a store opens it, and the key declared then; a
table with the key is not scanned on opening. `repair` scans a whole table: the maintenance step
runs it once a night (`litpipe.workflows.vector_maintenance`), with compaction and old-version
cleanup (`maintain`).

Dense search is exact (a scan of every vector) until a table has `vector_index_min_rows` rows;
from then on an approximate nearest-neighbour index is kept on the vectors (see
`ensure_vector_index`), with scalar indexes on the columns searches filter by. It is built once,
not by every writer crossing the threshold: in a locked store by the writer holding the table's
index lock (another that crossed the threshold too waits, then finds it built); in an unlocked
one (object storage) by the maintenance step only.
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from litpipe.files import exclusive_lock
from litpipe.retrieval.object_store import ObjectStoreUnreachable
from litpipe.schemas import EmbeddingResult, PaperChunks, RetrievedChunk

if TYPE_CHECKING:
    from lancedb.index import BTree
    from lancedb.query import LanceVectorQueryBuilder
    from lancedb.table import LanceTable, Table

log = logging.getLogger(__name__)

TABLE_PREFIX = "chunks__"
# The table's unenforced primary key, declared in its schema (the field metadata Lance reads):
# a merge_insert on it that races another inserting the same keys conflicts and is retried.
PRIMARY_KEY = "chunk_id"
_PRIMARY_KEY_METADATA = {"lance-schema:unenforced-primary-key:position": "1"}
# chunk_ids per filtered read (`chunk_id IN (...)`).
IDS_PER_READ = 1000
COMMIT_ATTEMPTS = 6
# The vector index: IVF_HNSW_SQ (per IVF partition, an HNSW graph over 8-bit scalar-quantized
# vectors), chosen on benchmarks/retrieval_scale.py's 200k synthetic chunks (384-d, cosine, 2
# cores), where an exact scan takes ~400 ms. Measured there (recall@10 against exact search, p50
# with a collection's prefilter, build time):
#   IVF_HNSW_SQ, 4 graphs, m 16, ef_construction 100, ef 200: 0.975, 12 ms; with refine_factor 2
#     0.992, 13 ms; built in 22 s (1 graph: 0.962)
#   IVF_HNSW_SQ, 4 graphs, m 20, ef_construction 150, ef 200: 0.981, 14 ms; built in 36 s
#   IVF_HNSW_FLAT, 4 graphs, ef_construction 150, ef 200: 0.998, 15 ms; built in 89 s
#   IVF_FLAT, 256 partitions, 20 / 40 probes: 0.94 / 0.97, 14 / 17 ms; built in 15 s; but with
#     447 partitions 0.79 at 40 probes, with 64 0.83 at 12
#   IVF_SQ, 128 partitions, 24 probes, refine_factor 4: 0.95, 18 ms
#   IVF_PQ, 256 partitions of 48 sub-vectors, 40 probes, refine_factor 10: 0.92, 14 ms; built in
#     69 s
# IVF partitions cut this data's neighbourhoods unevenly (recall swings with their number); the
# graphs follow them.
VECTOR_INDEX = "vector_idx"
VECTOR_INDEX_MIN_ROWS = 10_000  # below, an exact scan takes under ~15 ms
HNSW_ROWS_PER_GRAPH = 50_000  # smaller graphs build faster and, at a given ef, recall better
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 100
# Search-time defaults: candidates kept per graph (at least twice the limit), and how many times
# the limit are re-ranked by their exact vectors. Re-ranking is not optional: IVF_HNSW_SQ reports
# twice the cosine distance, from quantized vectors, where an exact scan reports the distance.
HNSW_EF = 200
REFINE_FACTOR = 2
# The index is re-trained when the rows it does not cover (scanned exactly by every search)
# reach this many, or this share of those it covers: re-training on 10% growth keeps the total
# build work proportional to the table's final size.
VECTOR_UNINDEXED_ROWS = 2000
VECTOR_UNINDEXED_SHARE = 0.1
# Prefilters are SQL over these columns: indexed, they cost a lookup instead of a scan.
# (`HybridRetriever` selects a collection's papers by paper_id, and reads its hits by chunk_id;
# a write looks up its papers' rows by paper_id, its vectors by content_sha256 and, unlocked,
# its own rows by chunk_id, the key its merge joins on.)
SCALAR_INDEXES = ("paper_id", "chunk_id", "content_sha256")
_T = TypeVar("_T")


class TableLock(Enum):
    """A table's locks in a locked store, each the ending of its lock file's name."""

    # Held by each write: one commit at a time, and a batch's ids checked under it.
    WRITE = ".lock"
    # Held while the vector index is built: one process builds it, and one that waited
    # re-checks the policy, finding it built.
    INDEX = ".index.lock"


class TextEncoder(Protocol):
    """What the store needs of an embedder (`litpipe.retrieval.embedder.Embedder` is one)."""

    @property
    def embedder_id(self) -> str: ...

    def encode(self, texts: list[str]) -> NDArray[np.float32]: ...


def table_name(embedder_id: str) -> str:
    """The LanceDB table of an embedder's chunks."""
    return TABLE_PREFIX + re.sub(r"[^A-Za-z0-9_.-]", "_", embedder_id)


def chunk_schema(dimension: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field(PRIMARY_KEY, pa.string(), nullable=False, metadata=_PRIMARY_KEY_METADATA),
            pa.field("paper_id", pa.string(), nullable=False),
            pa.field("index", pa.int32(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("section", pa.string(), nullable=False),
            pa.field("page_start", pa.int32(), nullable=False),
            pa.field("page_end", pa.int32(), nullable=False),
            pa.field("char_start", pa.int32(), nullable=False),
            pa.field("char_end", pa.int32(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("title", pa.string(), nullable=False),
            pa.field("n_tokens", pa.int32(), nullable=False),
            pa.field("content_sha256", pa.string(), nullable=False),
            pa.field("embedder_id", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimension), nullable=False),
        ]
    )


# Row fields besides the vector, in the schema's order; a stored row with the same values is not
# rewritten.
_ROW_FIELDS = tuple(name for name in chunk_schema(1).names if name != "vector")
# The columns a `RetrievedChunk` is read from: the chunk, where it sits in its paper, its text.
RETRIEVED_CHUNK_COLUMNS = [name for name in RetrievedChunk.model_fields if name in _ROW_FIELDS]


@dataclass
class Maintenance:
    """What `ChunkStore.maintain` did to a table."""

    table: str
    rows: int
    fragments_before: int
    fragments_after: int
    versions_before: int
    versions_after: int
    duplicates_removed: int
    vector_index_built: bool


class ChunkStore:
    """The chunk tables in `db_dir` (a folder, or an object-store URI such as s3://bucket/path);
    `vector_index_min_rows` is the size from which `embed_papers` maintains a table's vector
    index (None: never, `ensure_vector_index` builds it on demand). `lock_writes`: whether the
    writers of a table take turns under a local file lock (default: in a folder, not on object
    storage, which has no such lock; False makes a local store write as on object storage).

    `rows_read_for_duplicates` counts the rows this store read looking for duplicate chunk_ids:
    a whole table by `repair`, a batch's own rows after an unlocked write."""

    def __init__(
        self,
        db_dir: Path | str,
        vector_index_min_rows: int | None = VECTOR_INDEX_MIN_ROWS,
        *,
        lock_writes: bool | None = None,
    ) -> None:
        if isinstance(db_dir, str) and "://" in db_dir:
            # Object storage: no folder to create, and Path() would fold `s3://` into `s3:/`.
            # LanceDB reads the store's credentials from the environment (AWS_*, GOOGLE_*, AZURE_*).
            self.db_dir: Path | str = db_dir
        else:
            self.db_dir = Path(db_dir)
            self.db_dir.mkdir(parents=True, exist_ok=True)
        local = isinstance(self.db_dir, Path)
        if lock_writes and not local:
            raise ValueError(f"{self.db_dir}: object storage has no file lock (lock_writes)")
        self.lock_writes = local if lock_writes is None else lock_writes
        self.vector_index_min_rows = vector_index_min_rows
        self.rows_read_for_duplicates = 0
        # Imported here, not with the module: importing lancedb takes 1-2 s (its namespace
        # client builds hundreds of validators), which the processes that only read the
        # home's other stores (the nightly digest, `litpipe diff`) should not pay.
        import lancedb

        # Several processes write the same tables: every read checks for their commits.
        try:
            self._db = lancedb.connect(str(self.db_dir), read_consistency_interval=timedelta(0))
        except (ValueError, OSError, RuntimeError) as error:
            if local:
                raise
            raise ObjectStoreUnreachable(str(self.db_dir), error) from error
        self._opened: set[str] = set()  # the tables this store migrated (`open_table`)

    table_name = staticmethod(table_name)

    def table_names(self) -> list[str]:
        names: list[str] = []
        page_token = None
        while True:
            response = self._db.list_tables(page_token=page_token)
            names.extend(response.tables)
            page_token = response.page_token
            if not page_token:
                return sorted(name for name in names if name.startswith(TABLE_PREFIX))

    def open_table(self, embedder_id: str) -> Table | None:
        """The embedder's table, or None before anything was embedded with it; the first time
        this store opens it, migrated: see `_drop_collection` and `_declare_primary_key`."""
        return self._open(table_name(embedder_id))

    def _open(self, name: str) -> Table | None:
        if name not in self.table_names():
            return None
        table = self._db.open_table(name)
        if name not in self._opened:
            self._opened.add(name)
            self._drop_collection(table)
            self._declare_primary_key(table)
        return table

    def _declare_primary_key(self, table: Table) -> None:
        """Tables written before chunk_id was declared their primary key may hold duplicates
        that racing writers left: repaired (one scan of the chunk_id column), then the key
        declared, once per table, not once per process. A table with the key (every table
        created since) is left as it is: the check reads its schema only."""
        if _has_primary_key(table):
            return
        self._remove_duplicates(table)

        def declare() -> None:
            if _has_primary_key(table):  # declared by another process meanwhile
                return
            try:
                # A folder or object store's table (`lancedb.connect`) is a LanceTable.
                cast("LanceTable", table).set_unenforced_primary_key(PRIMARY_KEY)
            except ValueError as error:
                if "already set" not in str(error):
                    raise

        try:
            with self._locked(table.name, TableLock.WRITE):
                _with_commit_retries(declare, "declaring the primary key")
        except (OSError, RuntimeError, ValueError) as error:
            # Writes stay safe without it: locked, or followed by the check of their ids.
            log.warning("%s: primary key not declared: %s", table.name, error)
            return
        log.info("%s: %s declared the primary key", table.name, PRIMARY_KEY)

    def _drop_collection(self, table: Table) -> None:
        """Tables written before a paper could belong to several collections carried each
        chunk's one collection in a column. Membership is the catalog's now: the column (and
        its index) is dropped in place, the vectors kept, nothing embedded again."""
        if "collection" not in table.schema.names:
            return

        def drop() -> None:
            # Checked again on each attempt: on object storage, where there is no lock, another
            # process may have dropped it meanwhile.
            if "collection" in table.schema.names:
                table.drop_columns(["collection"])

        with self._locked(table.name, TableLock.WRITE):
            _with_commit_retries(drop, "dropping the collection column")
        log.info("%s: collection column dropped (membership is the catalog's)", table.name)

    def repair(self, embedder_id: str) -> int:
        """Keep one row per chunk_id in the embedder's table (the last written); the number of
        rows deleted."""
        name = table_name(embedder_id)
        if name not in self.table_names():
            return 0
        return self._remove_duplicates(self._db.open_table(name))

    def _remove_duplicates(self, table: Table, chunk_ids: list[str] | None = None) -> int:
        """Delete all but the last written row of each chunk_id of `chunk_ids` (None: of the
        whole table, a scan of its chunk_id column); the number of rows deleted."""
        # Looked for without the lock, which is taken only to delete.
        if not self._duplicate_row_ids(table, chunk_ids):
            return 0
        with self._locked(table.name, TableLock.WRITE):
            duplicates = self._duplicate_row_ids(table, chunk_ids)
            if duplicates:
                _with_commit_retries(
                    lambda: table.delete(f"_rowid IN ({', '.join(map(str, duplicates))})"),
                    "deleting duplicate rows",
                )
                log.warning(
                    "%s: deleted %d duplicate rows (one row per chunk_id kept)",
                    table.name,
                    len(duplicates),
                )
        return len(duplicates)

    def _duplicate_row_ids(self, table: Table, chunk_ids: list[str] | None) -> list[int]:
        """The row ids of every row but the last written (the highest row id) of each chunk_id
        of `chunk_ids` (None: of the table), read by `chunk_id IN (...)` filters."""
        if chunk_ids is None:
            rows = table.search().with_row_id(True).select(["chunk_id"]).limit(None).to_arrow()
        else:
            unique = sorted(set(chunk_ids))
            rows = (
                pa.concat_tables(
                    _select(
                        table,
                        _in("chunk_id", unique[start : start + IDS_PER_READ]),
                        ["chunk_id"],
                        row_ids=True,
                    )
                    for start in range(0, len(unique), IDS_PER_READ)
                )
                if unique
                else _NO_ROWS
            )
        self.rows_read_for_duplicates += rows.num_rows
        return _duplicates_of(rows)

    @contextmanager
    def _locked(self, name: str, lock: TableLock) -> Iterator[None]:
        """Hold one of the table's locks: an exclusive `flock` on a file beside the table, which
        the system releases when its process dies. Not re-entrant (a second lock file
        description of the same process would wait for the first): take it once per write."""
        if not self.lock_writes:
            # No lock (object storage): `_embed_batch_once` checks the batch's ids instead.
            yield
            return
        assert isinstance(self.db_dir, Path)
        with exclusive_lock(self.db_dir / f"{name}{lock.value}"):
            yield

    def embed_paper(self, chunks: PaperChunks, embedder: TextEncoder) -> EmbeddingResult:
        """Store the paper's chunks with their vectors, embedding only text the embedder's table
        does not hold yet, and drop the paper's rows that its chunks no longer produce."""
        (result,) = self.embed_papers([chunks], embedder)
        return result

    def count_rows(self, embedder_id: str) -> int:
        table = self.open_table(embedder_id)
        return table.count_rows() if table is not None else 0

    def paper_chunk_ids(self, embedder_id: str, paper_id: str) -> list[str]:
        table = self.open_table(embedder_id)
        if table is None:
            return []
        rows = _select(table, f"paper_id = {_sql(paper_id)}", ["chunk_id"])
        return sorted(rows.column("chunk_id").to_pylist())

    def embed_papers(
        self, papers: list[PaperChunks], embedder: TextEncoder, batch_papers: int = 512
    ) -> list[EmbeddingResult]:
        """`embed_paper` for many papers at once: one `encode` call and one commit per batch of
        papers (a 5,000-document corpus in a dozen commits, not 5,000), the vector index brought
        up to date once at the end (in a locked store: in an unlocked one, object storage,
        the maintenance step keeps it). A batch that was committed stays stored if a
        later one fails, so an interrupted run resumes where it stopped."""
        results: list[EmbeddingResult] = []
        table = None
        for start in range(0, len(papers), batch_papers):
            batch = papers[start : start + batch_papers]
            computed: dict[str, NDArray[np.float32]] = {}
            outcome = _with_commit_retries(
                partial(self._embed_batch_once, batch, embedder, computed),
                f"storing the chunks of {len(batch)} papers",
            )
            results.extend(outcome[0])
            table = outcome[1] or table
        if table is not None and self.vector_index_min_rows is not None and self.lock_writes:
            with self._locked(table.name, TableLock.INDEX):
                _refresh_vector_index(table, self.vector_index_min_rows)
        return results

    def ensure_vector_index(self, embedder_id: str, min_rows: int = VECTOR_INDEX_MIN_ROWS) -> bool:
        """Bring the embedder's vector index up to date; True when it was (re)built.

        The policy: no index below `min_rows` rows (an exact scan is fast there, and the graphs
        need data to train on); at `min_rows`, an index is built; once built, it is rebuilt when
        the rows it does not cover reach VECTOR_UNINDEXED_ROWS and VECTOR_UNINDEXED_SHARE of
        those it does, or when a compaction (`optimize`) added rows to it as a separate part.
        Until then searches scan the rows outside it exactly, so results are never incomplete.
        Deleted or updated rows need nothing: the index skips rows that are gone."""
        table = self.open_table(embedder_id)
        if table is None:
            return False
        with self._locked(table.name, TableLock.INDEX):
            return _with_commit_retries(
                lambda: _vector_index_step(table, min_rows), "building the vector index"
            )

    def maintain(
        self,
        name: str,
        cleanup_older_than: timedelta,
        vector_index_min_rows: int = VECTOR_INDEX_MIN_ROWS,
    ) -> Maintenance | None:
        """Keep the table `name` (one of `table_names`) cheap to read and write (None: there is
        no such table): the scan for
        duplicates (`repair`, one a night instead of one per write), the scalar indexes that
        make a batch's `chunk_id IN (...)` check a lookup, `optimize` (small fragments
        compacted, new rows added to the indexes, versions older than `cleanup_older_than`
        and their files removed), then the vector index's policy (`ensure_vector_index`)."""
        table = self._open(name)
        if table is None:
            return None
        fragments_before = _fragments(table)
        versions_before = len(table.list_versions())
        duplicates = self._remove_duplicates(table)
        indexed = {tuple(index.columns) for index in table.list_indices()}
        for column in SCALAR_INDEXES:
            if (column,) not in indexed:
                _with_commit_retries(
                    partial(table.create_index, column, config=_scalar_index(), replace=True),
                    f"indexing {column}",
                )
        _with_commit_retries(
            partial(table.optimize, cleanup_older_than=cleanup_older_than),
            "optimizing the table",
        )
        with self._locked(name, TableLock.INDEX):
            built = _with_commit_retries(
                lambda: _vector_index_step(table, vector_index_min_rows),
                "building the vector index",
            )
        return Maintenance(
            table=table.name,
            rows=table.count_rows(),
            fragments_before=fragments_before,
            fragments_after=_fragments(table),
            versions_before=versions_before,
            versions_after=len(table.list_versions()),
            duplicates_removed=duplicates,
            vector_index_built=built,
        )

    def dense_search(
        self,
        embedder_id: str,
        vector: NDArray[np.float32],
        limit: int,
        where: str | None = None,
        *,
        ef: int | None = None,
        refine_factor: int = REFINE_FACTOR,
        bypass_vector_index: bool = False,
    ) -> list[dict[str, Any]]:
        """The `limit` chunks nearest to `vector` by cosine, best first, each with its `score`
        (the cosine similarity); `where` (SQL over the row fields) filters before the search,
        so a filter never leaves fewer than `limit` results when that many match.

        With a vector index the search is approximate: `ef` candidates per graph (default the
        larger of HNSW_EF and twice `limit`), the best `refine_factor` times `limit` of them
        re-ranked by their exact vectors (at least 1: the index's own distances are neither
        cosines nor comparable with those of the rows it does not cover, which are scanned).
        `bypass_vector_index` scans every vector instead: exact, and slow on large tables."""
        if refine_factor < 1:
            raise ValueError(f"refine_factor must be at least 1, not {refine_factor}")
        table = self.open_table(embedder_id)
        if table is None or limit < 1:
            return []
        columns = [name for name in _ROW_FIELDS if name != "embedder_id"]
        # lancedb types the abstract Table's search as the generic builder; a vector searched
        # in a LanceTable gets the vector query builder.
        vector_query = cast("LanceVectorQueryBuilder", table.search(np.asarray(vector, np.float32)))
        query = vector_query.distance_type("cosine")
        if bypass_vector_index:
            query = query.bypass_vector_index()
        else:
            # HNSW needs ef >= limit; both knobs are ignored by an exact scan.
            query = query.ef(ef if ef is not None else max(HNSW_EF, 2 * limit))
            query = query.refine_factor(refine_factor)
        if where:
            query = query.where(where, prefilter=True)
        rows = query.select([*columns, "_distance"]).limit(limit).to_list()
        return [
            {**{name: row[name] for name in columns}, "score": 1.0 - float(row["_distance"])}
            for row in rows
        ]

    def chunk_rows(
        self,
        embedder_id: str,
        columns: list[str],
        paper_ids: list[str] | None = None,
        chunk_ids: list[str] | None = None,
    ) -> pa.Table:
        """The given columns of the chunks of `paper_ids` (a collection's papers, or one paper),
        or of those of them in `chunk_ids` (empty when there is none); None: every paper's,
        every chunk's."""
        table = self.open_table(embedder_id)
        if table is None or paper_ids == [] or chunk_ids == []:
            return pa.table({name: [] for name in columns})
        where = " AND ".join(
            f"{column} IN ({', '.join(map(_sql, values))})"
            for column, values in (("paper_id", paper_ids), ("chunk_id", chunk_ids))
            if values is not None
        )
        if not where:
            return table.search().select(columns).limit(None).to_arrow()
        return _select(table, where, columns)

    def _embed_batch_once(
        self,
        papers: list[PaperChunks],
        embedder: TextEncoder,
        computed: dict[str, NDArray[np.float32]],
    ) -> tuple[list[EmbeddingResult], Table | None]:
        """One attempt at storing a batch of papers in one commit; `computed` keeps vectors
        encoded by an attempt whose commit lost a race."""
        name = table_name(embedder.embedder_id)
        table = self.open_table(embedder.embedder_id)
        all_chunks = [chunk for paper in papers for chunk in paper.chunks]
        hashes = sorted({chunk.content_sha256 for chunk in all_chunks})
        stored: dict[str, NDArray[np.float32]] = {}
        if table is not None:
            for start in range(0, len(hashes), 1000):
                stored.update(_stored_vectors(table, hashes[start : start + 1000]))
        missing = [digest for digest in hashes if digest not in stored and digest not in computed]
        if missing:
            text_of = {chunk.content_sha256: chunk.text for chunk in all_chunks}
            vectors = embedder.encode([text_of[digest] for digest in missing])
            computed.update(zip(missing, np.asarray(vectors, dtype=np.float32), strict=True))
        vectors_by_hash = {**stored, **computed}
        results = []
        for paper in papers:
            embedded = sum(chunk.content_sha256 not in stored for chunk in paper.chunks)
            results.append(
                EmbeddingResult(
                    paper_id=paper.paper_id,
                    embedder_id=embedder.embedder_id,
                    table=name,
                    chunks=len(paper.chunks),
                    embedded=embedded,
                    reused=len(paper.chunks) - embedded,
                )
            )
        if not all_chunks and table is None:
            return results, None
        rows = _rows(papers, embedder.embedder_id, vectors_by_hash)
        # What is stored is read and rewritten under the table's lock (encoding stays outside
        # it): another writer's rows for these chunks are then seen, and updated, not doubled.
        with self._locked(name, TableLock.WRITE):
            if table is None:  # created by this writer, or by another while it encoded
                # The schema declares the primary key: a table is never without it.
                table = self._db.create_table(name, schema=rows.schema, exist_ok=True)
            self._replace_papers(table, papers, rows, results)
        if not self.lock_writes and all_chunks:
            # No lock: a writer without the key (an earlier version) may have inserted these
            # chunks too. Only the batch's own rows are read.
            self._remove_duplicates(table, [chunk.chunk_id for chunk in all_chunks])
        return results, table

    def _replace_papers(
        self,
        table: Table,
        papers: list[PaperChunks],
        rows: pa.Table,
        results: list[EmbeddingResult],
    ) -> None:
        """Upsert the papers' `rows` by chunk_id and delete the papers' other rows, in one
        commit; counts the deleted rows of each paper in `results`."""
        if "title" not in table.schema.names:
            # Tables written before chunks carried their paper's title: add it, empty; each
            # paper's rows get theirs when next written (no text is embedded again).
            table.add_columns({"title": "''"})
        if "kind" not in table.schema.names:
            # Tables written before captions and tables were chunks of their own: every row
            # was body text; each paper's rows are written again with its new chunks.
            table.add_columns({"kind": "'text'"})
        paper_ids = sorted({paper.paper_id for paper in papers})
        previous = _select(
            table,
            f"paper_id IN ({', '.join(_sql(paper_id) for paper_id in paper_ids)})",
            list(_ROW_FIELDS),
        )
        stored_rows = {row["chunk_id"]: row for row in previous.to_pylist()}
        new_rows = rows.select(list(_ROW_FIELDS)).to_pylist()
        changed = [stored_rows.get(row["chunk_id"]) != row for row in new_rows]
        kept = set(rows.column("chunk_id").to_pylist())
        stale = sorted(chunk_id for chunk_id in stored_rows if chunk_id not in kept)
        removed_by_paper = {row["chunk_id"]: row["paper_id"] for row in previous.to_pylist()}
        for result in results:
            result.removed = sum(
                removed_by_paper[chunk_id] == result.paper_id for chunk_id in stale
            )
        stale_filter = f"chunk_id IN ({', '.join(_sql(chunk_id) for chunk_id in stale)})"
        if any(changed):
            upsert = (
                table.merge_insert("chunk_id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
            )
            if stale:
                upsert = upsert.when_not_matched_by_source_delete(stale_filter)
            upsert.execute(rows.filter(pa.array(changed)))
        elif stale:
            table.delete(stale_filter)


def _has_primary_key(table: Table) -> bool:
    metadata = table.schema.field(PRIMARY_KEY).metadata or {}
    return any(key.decode() in _PRIMARY_KEY_METADATA for key in metadata)


def _fragments(table: Table) -> int:
    stats: Any = table.stats()  # a dict, though typed as a class
    return int(stats["fragment_stats"]["num_fragments"])


def _duplicates_of(rows: pa.Table) -> list[int]:
    """Of `rows` (chunk_id, _rowid), the row ids of every row but the last written (the highest
    row id) of each chunk_id."""
    if pc.count_distinct(rows.column("chunk_id")).as_py() == rows.num_rows:
        return []
    chunk_ids = rows.column("chunk_id").to_pylist()
    kept: dict[str, int] = {}
    row_ids = rows.column("_rowid").to_pylist()
    for chunk_id, row_id in zip(chunk_ids, row_ids, strict=True):
        kept[chunk_id] = max(row_id, kept.get(chunk_id, row_id))
    return sorted(
        row_id
        for chunk_id, row_id in zip(chunk_ids, row_ids, strict=True)
        if kept[chunk_id] != row_id
    )


def _stored_vectors(table: Table, hashes: list[str]) -> dict[str, NDArray[np.float32]]:
    if not hashes:
        return {}
    found = _select(
        table,
        f"content_sha256 IN ({', '.join(_sql(digest) for digest in hashes)})",
        ["content_sha256", "vector"],
    )
    if found.num_rows == 0:
        return {}
    vectors = found.column("vector").combine_chunks()
    matrix = vectors.flatten().to_numpy().reshape(found.num_rows, vectors.type.list_size)
    return dict(zip(found.column("content_sha256").to_pylist(), matrix, strict=True))


def _rows(
    papers: list[PaperChunks], embedder_id: str, vectors_by_hash: dict[str, NDArray[np.float32]]
) -> pa.Table:
    dimension = len(next(iter(vectors_by_hash.values()))) if vectors_by_hash else 1
    columns: dict[str, list[Any]] = {name: [] for name in _ROW_FIELDS}
    for paper in papers:
        of_paper = {"title": paper.title, "embedder_id": embedder_id}
        for chunk in paper.chunks:
            for name in _ROW_FIELDS:
                columns[name].append(of_paper[name] if name in of_paper else getattr(chunk, name))
    all_chunks = [chunk for paper in papers for chunk in paper.chunks]
    flat = np.concatenate(
        [vectors_by_hash[chunk.content_sha256] for chunk in all_chunks]
        or [np.empty(0, dtype=np.float32)]
    ).astype(np.float32, copy=False)
    schema = chunk_schema(dimension)
    arrays = [pa.array(columns[name], type=schema.field(name).type) for name in _ROW_FIELDS]
    arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(flat), dimension))
    return pa.Table.from_arrays(arrays, schema=schema)


def _select(table: Table, where: str, columns: list[str], row_ids: bool = False) -> pa.Table:
    return table.search().where(where).with_row_id(row_ids).select(columns).limit(None).to_arrow()


def _in(column: str, values: list[str]) -> str:
    return f"{column} IN ({', '.join(map(_sql, values))})"


_NO_ROWS = pa.table({"chunk_id": pa.array([], pa.string()), "_rowid": pa.array([], pa.uint64())})


def _refresh_vector_index(table: Table, min_rows: int) -> None:
    try:
        _with_commit_retries(
            lambda: _vector_index_step(table, min_rows), "updating the vector index"
        )
    except (OSError, RuntimeError, ValueError) as error:
        # Rows outside the index are scanned, so results stay complete.
        log.warning("vector index of %s not updated: %s", table.name, error)


def _vector_index_step(table: Table, min_rows: int) -> bool:
    """`ChunkStore.ensure_vector_index`'s policy, on the table's latest version; checked again
    on each attempt (the table reads its latest version), so a writer that lost a race to
    another's rebuild does not rebuild."""
    stats = table.index_stats(VECTOR_INDEX)
    if stats is None:
        if table.count_rows() < max(min_rows, 1):
            return False
    elif (
        stats.num_unindexed_rows
        < max(VECTOR_UNINDEXED_ROWS, VECTOR_UNINDEXED_SHARE * stats.num_indexed_rows)
        and (stats.num_indices or 1) <= 1
    ):
        return False
    rows = table.count_rows()
    graphs = max(1, round(rows / HNSW_ROWS_PER_GRAPH))
    log.info("building the vector index of %s over %d rows", table.name, rows)
    started = time.perf_counter()
    from lancedb.index import HnswSq

    table.create_index(
        "vector",
        config=HnswSq(
            distance_type="cosine",
            num_partitions=graphs,
            m=HNSW_M,
            ef_construction=HNSW_EF_CONSTRUCTION,
        ),
        name=VECTOR_INDEX,
        replace=True,
    )
    for column in SCALAR_INDEXES:
        table.create_index(column, config=_scalar_index(), replace=True)
    log.info(
        "vector index of %s built over %d rows (%d graphs) in %.1fs",
        table.name,
        rows,
        graphs,
        time.perf_counter() - started,
    )
    return True


def _with_commit_retries(operation: Callable[[], _T], what: str) -> _T:
    """Run `operation`, again (after a random pause) when its commit conflicted with another
    writer's; LanceDB commits optimistically."""
    attempt = 1
    while True:
        try:
            return operation()
        except (OSError, RuntimeError, ValueError) as error:
            if attempt >= COMMIT_ATTEMPTS or not _is_commit_conflict(error):
                raise
        pause = random.uniform(0.05, 0.2) * 2**attempt
        log.info("%s: commit conflict (attempt %d), retrying in %.2fs", what, attempt, pause)
        time.sleep(pause)
        attempt += 1


def _is_commit_conflict(error: Exception) -> bool:
    message = str(error).lower()
    return any(
        sign in message
        for sign in ("commit conflict", "conflicting", "concurrent", "contention", "retryable")
    )


def _sql(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _scalar_index() -> BTree:
    """The index of a `SCALAR_INDEXES` column: a B-tree (its ids are nearly all distinct)."""
    from lancedb.index import BTree

    return BTree()
