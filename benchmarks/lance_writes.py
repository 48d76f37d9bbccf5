"""LanceDB writes at scale: the time of one small write (one paper's 30 chunks) into a table of
100k chunks, with the old scheme against the new one, measured in the same run.

- old: the write, then `repair` as it ran after every write on object storage (and at every
  process's first open of a table): the whole `chunk_id` column read, with row ids, and checked
  for duplicates. Reproduced here as it was (`old_repair_scan`), after a write through a store
  with the local lock, whose write is the same as an unlocked one's.
- new: `ChunkStore(lock_writes=False).embed_paper`, the object-storage path: chunk_id the table's
  declared primary key (a concurrent duplicate rejected at commit and retried), then a check of
  the batch's own 30 chunk_ids only (`chunk_id IN (...)`).

Two states of the table: "fresh", as filled (a few large commits, no scalar index yet), and
"maintained", after `ChunkStore.maintain` (the nightly `vector_maintenance`: compacted, scalar
indexes on chunk_id, paper_id and content_sha256, which make the write's own lookups index
lookups). The vector index is left out (`--index` builds it too): writes do not read it.
Writes alternate old and new, `--writes` of each, after a warm-up; each writes a new paper.
Also timed: a process's first open of the table (old: with the scan; new: the key's check).

Usage: python benchmarks/lance_writes.py [--rows 100000] [--writes 20] [--index]
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
from lancedb.table import Table
from numpy.typing import NDArray

from litpipe.retrieval.store import ChunkStore, table_name
from litpipe.schemas import Chunk, PaperChunks, sha256_text

DIMENSION = 384
CHUNKS_PER_PAPER = 30
EMBEDDER_ID = "bench-384"


class RandomEncoder:
    """Unit vectors drawn at random: what a write costs does not depend on their values."""

    embedder_id = EMBEDDER_ID

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        vectors = self.rng.standard_normal((len(texts), DIMENSION)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def make_paper(paper_id: str) -> PaperChunks:
    chunks, offset = [], 0
    for index in range(CHUNKS_PER_PAPER):
        text = f"{paper_id} chunk {index}: " + " ".join(
            f"w{(index * 7919 + word) % 5000}" for word in range(120)
        )
        chunks.append(
            Chunk(
                chunk_id=f"{paper_id}:{index:04d}",
                paper_id=paper_id,
                index=index,
                section="Results",
                page_start=1,
                page_end=1,
                char_start=offset,
                char_end=offset + len(text),
                text=text,
                n_tokens=120,
                content_sha256=sha256_text(text),
            )
        )
        offset += len(text) + 1
    return PaperChunks(
        paper_id=paper_id, tokenizer=EMBEDDER_ID, max_tokens=256, overlap_tokens=0, chunks=chunks
    )


def old_repair_scan(table: Table) -> int:
    """What `repair` did after every write: the whole chunk_id column, with row ids, checked for
    duplicates; the rows it read."""
    rows = table.search().with_row_id(True).select(["chunk_id"]).limit(None).to_arrow()
    if pc.count_distinct(rows.column("chunk_id")).as_py() != rows.num_rows:
        raise AssertionError("the benchmark's table holds duplicates")
    return rows.num_rows


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(1000 * statistics.median(ordered), 2),
        "p95_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
        "mean_ms": round(1000 * statistics.fmean(ordered), 2),
    }


def measure_writes(folder: Path, writes: int, tag: str) -> dict[str, object]:
    """`writes` old and `writes` new writes of new papers, alternating, after one of each."""
    locked = ChunkStore(folder, vector_index_min_rows=None)
    unlocked = ChunkStore(folder, vector_index_min_rows=None, lock_writes=False)
    encoder = RandomEncoder(seed=1)
    old: list[float] = []
    new: list[float] = []
    old_rows_read: list[int] = []
    new_rows_read: list[int] = []
    for number in range(writes + 1):
        started = time.perf_counter()
        locked.embed_paper(make_paper(f"{tag}-old-{number}"), encoder)
        table = locked.open_table(EMBEDDER_ID)
        assert table is not None
        scanned = old_repair_scan(table)
        elapsed_old = time.perf_counter() - started

        before = unlocked.rows_read_for_duplicates
        started = time.perf_counter()
        unlocked.embed_paper(make_paper(f"{tag}-new-{number}"), encoder)
        elapsed_new = time.perf_counter() - started
        if number:  # the first of each is a warm-up
            old.append(elapsed_old)
            new.append(elapsed_new)
            old_rows_read.append(scanned)
            new_rows_read.append(unlocked.rows_read_for_duplicates - before)
    return {
        "old": percentiles(old),
        "new": percentiles(new),
        "ratio_p50": round(statistics.median(old) / statistics.median(new), 2),
        "old_rows_read_per_write": round(statistics.fmean(old_rows_read)),
        "new_rows_read_per_write": round(statistics.fmean(new_rows_read)),
    }


def measure_first_open(folder: Path, repeats: int = 5) -> dict[str, float]:
    """A new process's first open of the table: old, with the scan; new, the key's check."""
    old, new = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        table = ChunkStore(folder, vector_index_min_rows=None)._db.open_table(
            table_name(EMBEDDER_ID)
        )
        old_repair_scan(table)
        old.append(time.perf_counter() - started)
        started = time.perf_counter()
        ChunkStore(folder, vector_index_min_rows=None, lock_writes=False).open_table(EMBEDDER_ID)
        new.append(time.perf_counter() - started)
    return {
        "old_p50_ms": round(1000 * statistics.median(old), 2),
        "new_p50_ms": round(1000 * statistics.median(new), 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument("--index", action="store_true", help="build the vector index as well")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="lance-writes-") as tmp:
        folder = Path(tmp) / "lancedb"
        store = ChunkStore(folder, vector_index_min_rows=None)
        papers = [
            make_paper(f"seed{number:06d}") for number in range(args.rows // CHUNKS_PER_PAPER)
        ]
        started = time.perf_counter()
        store.embed_papers(papers, RandomEncoder(), batch_papers=512)
        fill_s = time.perf_counter() - started
        rows = store.count_rows(EMBEDDER_ID)
        print(
            f"table: {rows} rows of {DIMENSION}-d vectors, filled in {fill_s:.1f} s "
            f"({os.cpu_count()} CPUs, lancedb {importlib.metadata.version('lancedb')})"
        )

        states: dict[str, dict[str, object]] = {}
        states["fresh"] = measure_writes(folder, args.writes, "fresh")
        started = time.perf_counter()
        maintained = store.maintain(
            table_name(EMBEDDER_ID),
            timedelta(hours=1),
            vector_index_min_rows=0 if args.index else 10**12,
        )
        assert maintained is not None
        maintain_s = time.perf_counter() - started
        print(
            f"maintenance: {maintain_s:.1f} s, fragments {maintained.fragments_before} -> "
            f"{maintained.fragments_after}"
            + (", vector index built" if maintained.vector_index_built else "")
        )
        states["maintained"] = measure_writes(folder, args.writes, "maintained")
        first_open = measure_first_open(folder)
        final_rows = store.count_rows(EMBEDDER_ID)
        table = store.open_table(EMBEDDER_ID)
        assert table is not None
        duplicates = final_rows - pc.count_distinct(table.to_arrow().column("chunk_id")).as_py()

    print()
    print(
        f"one write of {CHUNKS_PER_PAPER} chunks, ms     p50 old   p50 new   ratio"
        "   rows read old/new"
    )
    for name, state in states.items():
        old, new = state["old"], state["new"]
        assert isinstance(old, dict) and isinstance(new, dict)
        print(
            f"  {name:<32}{old['p50_ms']:>9.1f}{new['p50_ms']:>10.1f}{state['ratio_p50']:>8.2f}x"
            f"   {state['old_rows_read_per_write']}/{state['new_rows_read_per_write']}"
        )
    print(
        f"first open of the table by a process: old {first_open['old_p50_ms']:.1f} ms (scan), "
        f"new {first_open['new_p50_ms']:.1f} ms"
    )
    print(f"duplicates after every write: {duplicates}")
    print(
        json.dumps(
            {
                "benchmark": "lance_writes",
                "rows": rows,
                "chunks_per_write": CHUNKS_PER_PAPER,
                "writes_each": args.writes,
                "fill_s": round(fill_s, 1),
                "maintain_s": round(maintain_s, 1),
                "vector_index": args.index,
                "fresh": states["fresh"],
                "maintained": states["maintained"],
                "first_open": first_open,
                "duplicates": duplicates,
                "dimension": DIMENSION,
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "lancedb": importlib.metadata.version("lancedb"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
