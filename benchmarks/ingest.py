"""Ingestion speed against the simplest baselines, on the same files and texts.

1. Parsing and chunking (`parse_pdf` then `chunk_document`, with the default embedder's tokenizer
   and the settings' defaults) against raw pymupdf text extraction (`page.get_text()` for every
   page). Target: at most 5x the baseline's time.
2. Embedding the chunks, paper by paper as the pipeline does, against a bare
   `SentenceTransformer(path).encode(texts, batch_size=32)` of the same paper's chunk texts:
   `Embedder.encode` alone, and `ChunkStore.embed_paper` into a fresh LanceDB store (so the
   store's cost is counted). Target: at least 0.95x the baseline's throughput. The store's own
   share is also timed alone, replaying the vectors.

Both models are warmed up first. The sides being compared run file by file (or paper by paper),
one right after the other, the first side rotating, so a load that comes and goes on the machine
weighs on every side alike; figures are medians over the rounds.

Usage: python benchmarks/ingest.py [--pdfs DIR] [--repeat N]
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import pymupdf
from numpy.typing import NDArray

# Importing litpipe switches the model hub off (HF_HUB_OFFLINE) unless the caller set it.
from litpipe.ingest.chunking import chunk_document
from litpipe.ingest.pdf import parse_pdf
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.store import ChunkStore
from litpipe.schemas import PaperChunks
from litpipe.settings import DEFAULT_EMBEDDER, IngestSettings

ROOT = Path(__file__).resolve().parents[1]
_Item = TypeVar("_Item")
_Sides = dict[str, Callable[[_Item], object]]


def paired(
    items: Sequence[_Item], sides_of_round: Callable[[int], _Sides], repeat: int
) -> dict[str, float]:
    """Median over `repeat` rounds of each side's total time over `items`."""
    totals: dict[str, list[float]] = {}
    for round_number in range(repeat):
        sides = sides_of_round(round_number)
        names = list(sides)
        spent = dict.fromkeys(names, 0.0)
        for item_number, item in enumerate(items):
            shift = (round_number + item_number) % len(names)
            for name in names[shift:] + names[:shift]:
                started = time.perf_counter()
                sides[name](item)
                spent[name] += time.perf_counter() - started
        for name, seconds in spent.items():
            totals.setdefault(name, []).append(seconds)
    return {name: statistics.median(values) for name, values in totals.items()}


class ReplayEncoder:
    """Returns the vectors an earlier pass computed: what is left of `embed_paper` is the
    store's own work."""

    def __init__(self, embedder_id: str, vectors: dict[str, NDArray[np.float32]]) -> None:
        self.embedder_id = embedder_id
        self._vectors = vectors

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        return np.stack([self._vectors[text] for text in texts])


def raw_pymupdf_text(path: Path) -> None:
    with pymupdf.open(path) as doc:
        for page in doc:
            page.get_text()


def parse_and_chunk(
    path: Path, embedder: Embedder, overlap: int, tables: bool = False
) -> PaperChunks:
    return chunk_document(
        parse_pdf(path, path.stem, tables=tables),
        embedder.tokenizer,
        max_tokens=embedder.max_chunk_tokens,
        overlap_tokens=overlap,
        tokenizer_name=embedder.embedder_id,
    )


def texts_of(paper: PaperChunks) -> list[str]:
    return [chunk.text for chunk in paper.chunks]


def pdf_arguments(doc: str | None, argv: list[str] | None) -> tuple[argparse.Namespace, list[Path]]:
    """A PDF benchmark's command line (`--pdfs`, the bundled biology papers by default;
    `--repeat`), described by the first paragraph of its `doc`, and the PDFs it names."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--pdfs", type=Path, default=ROOT / "corpora" / "biology-cc-by")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    pdfs = sorted(args.pdfs.glob("*.pdf"))
    if not pdfs:
        parser.error(f"no PDF in {args.pdfs}")
    return args, pdfs


def main(argv: list[str] | None = None) -> int:
    args, pdfs = pdf_arguments(__doc__, argv)
    defaults = IngestSettings()
    batch_size = defaults.embed_batch_size
    overlap = defaults.chunk_overlap_tokens
    embedder = Embedder(DEFAULT_EMBEDDER, batch_size=batch_size)
    pages = 0
    for path in pdfs:
        with pymupdf.open(path) as doc:
            pages += doc.page_count
    print(f"{len(pdfs)} PDFs, {pages} pages, from {args.pdfs}; {args.repeat} timed rounds")

    # 1. Parsing and chunking (the first pass warms up, and gives the chunks for part 2).
    papers = [parse_and_chunk(path, embedder, overlap) for path in pdfs]
    for path in pdfs:
        raw_pymupdf_text(path)
    medians = paired(
        pdfs,
        lambda _: {
            "raw": raw_pymupdf_text,
            "parse": lambda path: parse_and_chunk(path, embedder, overlap),
        },
        args.repeat,
    )
    raw_s, parse_s = medians["raw"], medians["parse"]
    chunks = sum(len(paper.chunks) for paper in papers)
    print(
        f"parse+chunk: {pages / parse_s:8.1f} pages/s ({parse_s:.3f} s)   raw pymupdf get_text: "
        f"{pages / raw_s:8.1f} pages/s ({raw_s:.3f} s)   time ratio {parse_s / raw_s:.2f}x "
        f"(target <= 5x); {chunks} chunks of <= {embedder.max_chunk_tokens} tokens"
    )

    # 2. Embedding; each round writes a fresh store.
    from sentence_transformers import SentenceTransformer

    bare = SentenceTransformer(str(embedder.model_dir), device="cpu")
    warm_up = texts_of(papers[0])[: 2 * batch_size]
    bare.encode(warm_up, batch_size=batch_size)
    embedder.encode(warm_up)
    vectors: dict[str, NDArray[np.float32]] = {}

    def encode(paper: PaperChunks) -> None:
        vectors.update(zip(texts_of(paper), embedder.encode(texts_of(paper)), strict=True))

    with tempfile.TemporaryDirectory() as folder:

        def embedding_sides(round_number: int) -> _Sides:
            store = ChunkStore(Path(folder) / f"round-{round_number}")
            return {
                "bare": lambda paper: bare.encode(texts_of(paper), batch_size=batch_size),
                "encode": encode,
                "embed_paper": lambda paper: store.embed_paper(paper, embedder),
            }

        def store_only_side(round_number: int) -> _Sides:
            store = ChunkStore(Path(folder) / f"replay-{round_number}")
            replay = ReplayEncoder(embedder.embedder_id, vectors)
            return {"store": lambda paper: store.embed_paper(paper, replay)}

        medians = paired(papers, embedding_sides, args.repeat)
        store_only_s = paired(papers, store_only_side, args.repeat)["store"]
    bare_s, encode_s, store_s = medians["bare"], medians["encode"], medians["embed_paper"]
    print(
        f"Embedder.encode: {chunks / encode_s:7.1f} chunks/s   bare SentenceTransformer: "
        f"{chunks / bare_s:7.1f} chunks/s   throughput ratio {bare_s / encode_s:.3f} "
        "(target >= 0.95)"
    )
    print(
        f"ChunkStore.embed_paper (fresh store): {chunks / store_s:7.1f} chunks/s   throughput "
        f"ratio {bare_s / store_s:.3f} against the bare encode; the store's own work: "
        f"{store_only_s:.2f} s for {len(papers)} papers"
    )
    print(
        json.dumps(
            {
                "benchmark": "ingest",
                "pdfs": len(pdfs),
                "pages": pages,
                "chunks": chunks,
                "repeat": args.repeat,
                "parse_chunk_pages_per_s": round(pages / parse_s, 2),
                "raw_pymupdf_pages_per_s": round(pages / raw_s, 2),
                "parse_chunk_time_ratio": round(parse_s / raw_s, 3),
                "parse_chunk_target_max_ratio": 5.0,
                "encode_chunks_per_s": round(chunks / encode_s, 2),
                "embed_paper_chunks_per_s": round(chunks / store_s, 2),
                "bare_sentence_transformers_chunks_per_s": round(chunks / bare_s, 2),
                "encode_throughput_ratio": round(bare_s / encode_s, 3),
                "embed_paper_throughput_ratio": round(bare_s / store_s, 3),
                "embed_target_min_ratio": 0.95,
                "store_only_s": round(store_only_s, 3),
                "embedder": embedder.embedder_id,
                "batch_size": batch_size,
                "max_chunk_tokens": embedder.max_chunk_tokens,
                "overlap_tokens": overlap,
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
