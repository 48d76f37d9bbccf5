"""Peak memory of hybrid retrieval over one collection: the retriever of a given commit (by
default the last one whose `HybridRetriever` loaded every chunk, vectors and texts included,
into Python lists) against the working tree's, which reads rows from LanceDB for its hits only.

For each size, one collection of synthetic chunks (384-d random unit vectors, 150 random words
each, 10 chunks a paper) is stored once, its BM25 index built and saved as `corpus_index` saves
it. Then each side runs in its own fresh process: open the store, build the retriever over the
collection (its BM25 index loaded), run `--queries` hybrid searches (100 candidates from each
retriever, RRF, MMR, 10 results: the defaults). Each process reports its resident memory before
the retriever (imports and store opened), its peak (`VmHWM`) and the retriever's share of it,
and the chunk ids it found, which must be the same on both sides (exact dense search: no vector
index at these sizes).

Usage: python benchmarks/retrieval_memory.py [--sizes 5000,20000] [--queries N] [--before REV]
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import lancedb
import numpy as np

from litpipe.retrieval.hybrid import HybridRetriever
from litpipe.retrieval.store import ChunkStore, table_name
from litpipe.schemas import Chunk, PaperChunks, sha256_text

ROOT = Path(__file__).resolve().parents[1]
# The last commit whose retriever read every chunk's vector and text at construction.
BEFORE = "c6f94aa"
DIMENSION = 384
CHUNKS_PER_PAPER = 10
CHUNK_WORDS = 150
VOCABULARY = 20_000
COLLECTION = "bench"
EMBEDDER_ID = "synthetic-384"

# Run in a fresh process per side: argv = folder of the retriever's and the store's modules at
# the revision compared with (or "" for the working tree's), lancedb folder, bm25 folder,
# queries file.
_SIDE = r"""
import importlib.util, json, sys
import numpy as np

def rss_kib(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))

def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

source, db_dir, bm25_dir, queries_file = sys.argv[1:5]
if source:
    # The store of that revision too: it reads the table as that retriever expects it.
    ChunkStore = load("litpipe.retrieval.store", source + "/store.py").ChunkStore
    module = load("hybrid_side", source + "/hybrid.py")
else:
    from litpipe.retrieval.store import ChunkStore
    import litpipe.retrieval.hybrid as module
queries = json.loads(open(queries_file).read())

class Encoder:
    embedder_id = "synthetic-384"
    def encode(self, texts):
        return np.stack([np.asarray(queries[text], dtype=np.float32) for text in texts])

store = ChunkStore(db_dir, vector_index_min_rows=None)
store.open_table(Encoder.embedder_id)
before = rss_kib("VmRSS")
retriever = module.HybridRetriever(store, Encoder(), "bench", bm25_dir)
found = [[chunk.chunk_id for chunk in retriever.search(text)] for text in queries]
peak = rss_kib("VmHWM")
print(json.dumps({"before_kib": before, "peak_kib": peak, "found": found}))
"""


def synthetic_papers(chunks: int, rng: np.random.Generator) -> tuple[list[PaperChunks], dict]:
    """The papers of `chunks` synthetic chunks, and each chunk text's vector."""
    vocabulary = np.array([f"w{index}" for index in range(VOCABULARY)])
    vectors = rng.standard_normal((chunks, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    by_text: dict[str, np.ndarray] = {}
    papers = []
    for start in range(0, chunks, CHUNKS_PER_PAPER):
        paper_id = f"p{start // CHUNKS_PER_PAPER:06d}"
        paper_chunks = []
        for index in range(min(CHUNKS_PER_PAPER, chunks - start)):
            text = " ".join(rng.choice(vocabulary, CHUNK_WORDS))
            by_text[text] = vectors[start + index]
            paper_chunks.append(
                Chunk(
                    chunk_id=f"{paper_id}:{index:04d}",
                    paper_id=paper_id,
                    index=index,
                    section="Body",
                    page_start=1,
                    page_end=1,
                    char_start=0,
                    char_end=len(text),
                    text=text,
                    n_tokens=CHUNK_WORDS,
                    content_sha256=sha256_text(text),
                )
            )
        papers.append(
            PaperChunks(
                paper_id=paper_id,
                title=f"Paper {paper_id}",
                tokenizer="words",
                max_tokens=256,
                overlap_tokens=0,
                chunks=paper_chunks,
            )
        )
    return papers, by_text


class LookupEncoder:
    embedder_id = EMBEDDER_ID

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[text] for text in texts])


def run_side(source: str, folder: Path, queries_file: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    paths = [str(folder / "lancedb"), str(folder / "bm25"), str(queries_file)]
    completed = subprocess.run(
        [sys.executable, "-c", _SIDE, source, *paths],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    measured = json.loads(completed.stdout.strip().splitlines()[-1])
    return {
        "rss_before_retriever_mib": round(measured["before_kib"] / 1024, 1),
        "peak_rss_mib": round(measured["peak_kib"] / 1024, 1),
        "retriever_peak_mib": round((measured["peak_kib"] - measured["before_kib"]) / 1024, 1),
        "found": measured["found"],
    }


def measure_size(chunks: int, queries: int, before_source: Path, folder: Path) -> dict:
    rng = np.random.default_rng(chunks)
    papers, vectors = synthetic_papers(chunks, rng)
    texts = list(vectors)
    # A query: the first ten words of a chunk, its vector that chunk's with a little noise.
    query_vectors = {}
    for chosen in rng.choice(len(texts), queries, replace=False):
        noise = rng.standard_normal(DIMENSION).astype(np.float32) * 0.05
        query_text = " ".join(texts[chosen].split()[:10])
        query_vectors[query_text] = (vectors[texts[chosen]] + noise).tolist()
    store = ChunkStore(folder / "lancedb", vector_index_min_rows=None)
    store.embed_papers(papers, LookupEncoder(vectors))
    del papers, vectors, texts
    # The saved BM25 index both sides load, as `corpus_index` leaves it.
    HybridRetriever(store, LookupEncoder({}), COLLECTION, folder / "bm25")
    # The table as that revision wrote it, with each chunk's collection: the working tree's
    # store, opened after it, drops the column again (its migration).
    table = lancedb.connect(str(folder / "lancedb")).open_table(table_name(EMBEDDER_ID))
    table.add_columns({"collection": f"'{COLLECTION}'"})
    queries_file = folder / "queries.json"
    queries_file.write_text(json.dumps(query_vectors))
    before = run_side(str(before_source), folder, queries_file)
    after = run_side("", folder, queries_file)
    same = before.pop("found") == after.pop("found")
    return {"chunks": chunks, "before": before, "after": after, "same_results": same}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="5000,20000", help="chunk counts, comma-separated")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--before", default=BEFORE, help="the git revision to compare with")
    args = parser.parse_args(argv)
    sizes = sorted(int(size) for size in args.sizes.split(","))
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        before_source = Path(scratch) / "before"
        before_source.mkdir()
        for module in ("hybrid", "store"):
            (before_source / f"{module}.py").write_text(
                subprocess.run(
                    ["git", "show", f"{args.before}:litpipe/retrieval/{module}.py"],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
        for chunks in sizes:
            folder = Path(scratch) / str(chunks)
            result = measure_size(chunks, args.queries, before_source, folder)
            results.append(result)
            print(
                f"{chunks:>6} chunks: peak RSS {result['before']['peak_rss_mib']:.0f} MiB before "
                f"({args.before}; retriever {result['before']['retriever_peak_mib']:.0f} MiB), "
                f"{result['after']['peak_rss_mib']:.0f} MiB after (retriever "
                f"{result['after']['retriever_peak_mib']:.0f} MiB); same results: "
                f"{result['same_results']}",
                flush=True,
            )
    print(
        json.dumps(
            {
                "benchmark": "retrieval_memory",
                "before": args.before,
                "queries": args.queries,
                "sizes": results,
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
