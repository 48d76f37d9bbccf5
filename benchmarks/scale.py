"""How litpipe's offline pipeline scales with the number of papers (issue 18, point 5).

Pipeline mode (the default): for each size N of `--sizes`, the first N abstracts of SciFact's
corpus.jsonl (`_id`, `title`, `text`) are written as a CSV table (id, title, abstract) and
`litpipe run <table> --home <empty folder>` runs on it in a subprocess, the way a user runs it:
packaged MiniLM, offline defaults. Printed per size:
- wall seconds and seconds per paper (the subprocess's wall time over N);
- seconds per paper for each stage: the step durations (STEP_START to its end) that the Dagster
  instance under the home recorded, summed over every run, over N;
- the Dagster-and-overhead share: 1 - (sum of step time) / wall, what is not any asset's step
  (process start, imports, instance and run bookkeeping between steps);
- peak RSS of the subprocess (`getrusage(RUSAGE_CHILDREN).ru_maxrss`, the largest child so far);
- litpipe's embedding throughput (`Embedder.encode`) against a bare
  `SentenceTransformer(path).encode` on the same chunk texts (read back from the run's LanceDB
  table; the first `--ratio-texts` of them, 1,000 by default, since timing both sides over a
  5,183-paper run's 9,000 chunks would take longer than the run), both warmed up, the first
  side rotating over `--repeat` rounds (medians).

Ingest mode (`--ingest-texts K`): SciFact's abstracts cut into sentences and the sentences
recombined (seeded shuffle) into K texts of abstract length (each as long as a real abstract,
in turn), pushed through the ingest path only, as `litpipe.workflows.pipeline` does: a
document per text, `chunk_paper`, then `ChunkStore.embed_papers` into a fresh LanceDB store.
Printed: texts/s, chunks/s, and where the time goes (chunking, embedding and storing).

Usage:
  python benchmarks/scale.py [--corpus ../shared/data/scifact/corpus.jsonl] [--sizes 500,1000,5183]
  python benchmarks/scale.py --ingest-texts 100000
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

# The sibling benchmarks' helpers (this folder is first on sys.path). Importing litpipe switches
# the model hub off (HF_HUB_OFFLINE, inherited by the subprocess) unless the caller set it.
from concurrency import Abstract, read_abstracts, write_table
from ingest import paired
from pydantic import BaseModel

from litpipe.ingest.ids import table_paper_id
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.store import ChunkStore
from litpipe.runtime.runner import open_instance
from litpipe.schemas import PaperDocument
from litpipe.settings import Settings
from litpipe.text import sentences
from litpipe.workflows.ingest import chunk_paper, settings_embedder

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"  # ../shared beside the repo
LITPIPE = "import sys; from litpipe.cli import main; sys.exit(main())"
COLLECTION = "scale"
INGEST_COLLECTION = "scale-ingest"


class SizeFigures(BaseModel):
    papers: int
    exit_code: int
    wall_s: float
    s_per_paper: float
    stage_s_per_paper: dict[str, float]
    step_s: float
    dagster_overhead_share: float
    runs: int
    chunks: int
    peak_rss_mib: float
    encode_chunks_per_s: float
    bare_chunks_per_s: float
    encode_throughput_ratio: float


class IngestFigures(BaseModel):
    texts: int
    chunks: int
    wall_s: float
    texts_per_s: float
    chunks_per_s: float
    chunk_s: float
    embed_and_store_s: float


def peak_child_rss_mib() -> float:
    """The largest peak RSS of any finished child so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def step_seconds(settings: Settings) -> tuple[dict[str, float], int]:
    """Seconds spent in each step (by step key, summed over every run of the instance), and
    the number of runs."""
    instance = open_instance(settings.llm, settings.paths)
    by_step: dict[str, float] = defaultdict(float)
    records = instance.get_run_records()
    for record in records:
        for stats in instance.get_run_step_stats(record.dagster_run.run_id):
            if stats.start_time is not None and stats.end_time is not None:
                by_step[stats.step_key] += stats.end_time - stats.start_time
    return dict(by_step), len(records)


def embedding_ratio(
    texts: list[str], embedder: Embedder, repeat: int
) -> tuple[float, float, float]:
    """Chunks/s of `Embedder.encode` and of a bare SentenceTransformer on `texts`, and their
    ratio (median seconds over `repeat` rounds, both warmed up first)."""
    from sentence_transformers import SentenceTransformer

    bare = SentenceTransformer(str(embedder.model_dir), device=embedder.device)
    warm_up = texts[: 2 * embedder.batch_size]
    bare.encode(warm_up, batch_size=embedder.batch_size)
    embedder.encode(warm_up)
    medians = paired(
        [texts],
        lambda _: {
            "bare": lambda batch: bare.encode(batch, batch_size=embedder.batch_size),
            "encode": embedder.encode,
        },
        repeat,
    )
    return (
        len(texts) / medians["encode"],
        len(texts) / medians["bare"],
        medians["bare"] / medians["encode"],
    )


def run_size(
    rows: list[Abstract], size: int, repeat: int, ratio_texts: int, embedder: Embedder
) -> SizeFigures:
    with tempfile.TemporaryDirectory(prefix="litpipe-scale-") as folder:
        home = Path(folder) / "home"
        table = write_table(Path(folder) / f"{COLLECTION}.csv", rows[:size])
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        started = time.perf_counter()
        process = subprocess.run(
            [sys.executable, "-c", LITPIPE, "run", str(table), "--home", str(home)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall_s = time.perf_counter() - started
        rss_mib = peak_child_rss_mib()
        if process.returncode != 0:
            print(process.stderr[-3000:], file=sys.stderr)
        settings = Settings(home=home)
        by_step, runs = step_seconds(settings)
        paper_ids = [table_paper_id(COLLECTION, row.id) for row in rows[:size]]
        texts = [
            str(text)
            for text in ChunkStore(settings.paths.lancedb_dir)
            .chunk_rows(embedder.embedder_id, ["text"], paper_ids)
            .column("text")
            .to_pylist()
        ]
        encode_rate, bare_rate, ratio = (
            embedding_ratio(texts[:ratio_texts], embedder, repeat) if texts else (0.0, 0.0, 0.0)
        )
    step_s = sum(by_step.values())
    return SizeFigures(
        papers=size,
        exit_code=process.returncode,
        wall_s=round(wall_s, 2),
        s_per_paper=round(wall_s / size, 4),
        stage_s_per_paper={
            step: round(seconds / size, 4)
            for step, seconds in sorted(by_step.items(), key=lambda item: -item[1])
        },
        step_s=round(step_s, 2),
        dagster_overhead_share=round(1 - step_s / wall_s, 4),
        runs=runs,
        chunks=len(texts),
        peak_rss_mib=round(rss_mib, 1),
        encode_chunks_per_s=round(encode_rate, 2),
        bare_chunks_per_s=round(bare_rate, 2),
        encode_throughput_ratio=round(ratio, 3),
    )


def recombined_texts(rows: list[Abstract], count: int, seed: int = 0) -> list[str]:
    """`count` texts made of the corpus's sentences in a seeded random order, each as long (in
    characters, to the sentence) as one of the real abstracts, taken in turn."""
    pool = [span.text for row in rows for span in sentences(row.abstract)]
    lengths = [len(row.abstract) for row in rows]
    shuffle = random.Random(seed)
    shuffle.shuffle(pool)
    texts: list[str] = []
    next_sentence = 0
    for number in range(count):
        wanted = lengths[number % len(lengths)]
        parts: list[str] = []
        size = 0
        while size < wanted:
            if next_sentence == len(pool):
                shuffle.shuffle(pool)
                next_sentence = 0
            parts.append(pool[next_sentence])
            size += len(pool[next_sentence]) + 1
            next_sentence += 1
        texts.append(" ".join(parts))
    return texts


def run_ingest(rows: list[Abstract], count: int, embedder: Embedder) -> IngestFigures:
    settings = Settings()
    texts = recombined_texts(rows, count)
    # The model loaded and warmed up outside the timing, as a long-running pipeline has it.
    embedder.encode(texts[: 2 * embedder.batch_size])
    with tempfile.TemporaryDirectory(prefix="litpipe-scale-ingest-") as folder:
        store = ChunkStore(Path(folder) / "lancedb")
        started = time.perf_counter()
        papers = [
            chunk_paper(
                PaperDocument.single_section(
                    heading="Abstract",
                    text=text,
                    paper_id=table_paper_id(INGEST_COLLECTION, str(number)),
                    source_path="recombined",
                    title=f"Recombined text {number}",
                    abstract=text,
                ),
                embedder,
                settings.ingest.chunk_tokens,
                settings.ingest.chunk_overlap_tokens,
            )
            for number, text in enumerate(texts)
        ]
        chunked = time.perf_counter()
        store.embed_papers(papers, embedder)
        finished = time.perf_counter()
    chunks = sum(len(paper.chunks) for paper in papers)
    wall_s = finished - started
    return IngestFigures(
        texts=count,
        chunks=chunks,
        wall_s=round(wall_s, 2),
        texts_per_s=round(count / wall_s, 2),
        chunks_per_s=round(chunks / wall_s, 2),
        chunk_s=round(chunked - started, 2),
        embed_and_store_s=round(finished - chunked, 2),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="SciFact's corpus.jsonl")
    parser.add_argument(
        "--sizes", default="500,1000,5183", help="comma-separated paper counts to run"
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the embedding ratio")
    parser.add_argument(
        "--ratio-texts", type=int, default=1000, help="chunk texts the embedding ratio times"
    )
    parser.add_argument(
        "--ingest-texts",
        type=int,
        help="instead of the pipeline: ingest this many recombined abstract-length texts",
    )
    args = parser.parse_args(argv)
    if args.corpus.name != "corpus.jsonl" or not args.corpus.is_file():
        parser.error(f"no SciFact corpus.jsonl at {args.corpus}")
    rows = read_abstracts(args.corpus.parent)
    settings = Settings()
    embedder = settings_embedder(settings.ingest, settings.paths)
    common = {
        "embedder": embedder.embedder_id,
        "batch_size": embedder.batch_size,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    if args.ingest_texts is not None:
        ingested = run_ingest(rows, args.ingest_texts, embedder)
        print(
            f"ingest of {ingested.texts} recombined texts: {ingested.texts_per_s:.1f} texts/s, "
            f"{ingested.chunks_per_s:.1f} chunks/s ({ingested.chunks} chunks, {ingested.wall_s} s: "
            f"chunking {ingested.chunk_s} s, embedding and storing {ingested.embed_and_store_s} s)"
        )
        print(json.dumps({"benchmark": "scale-ingest", **ingested.model_dump(), **common}))
        return 0

    sizes = [int(size) for size in args.sizes.split(",")]
    if max(sizes) > len(rows):
        parser.error(f"{args.corpus} has {len(rows)} abstracts, fewer than {max(sizes)}")
    results: list[SizeFigures] = []
    for size in sizes:
        figures = run_size(rows, size, args.repeat, args.ratio_texts, embedder)
        results.append(figures)
        stages = ", ".join(f"{step} {s:.3f}" for step, s in figures.stage_s_per_paper.items())
        print(
            f"{size} papers (exit {figures.exit_code}): {figures.wall_s} s wall, "
            f"{figures.s_per_paper:.3f} s/paper; Dagster and overhead "
            f"{figures.dagster_overhead_share:.1%} ({figures.runs} runs); peak RSS "
            f"{figures.peak_rss_mib:.0f} MiB; Embedder.encode / bare SentenceTransformer "
            f"{figures.encode_throughput_ratio:.3f} ({figures.encode_chunks_per_s:.1f} vs "
            f"{figures.bare_chunks_per_s:.1f} chunks/s on {min(figures.chunks, args.ratio_texts)} "
            f"of its {figures.chunks} chunks)"
        )
        print(f"  s/paper by stage: {stages}")
    print(
        json.dumps(
            {
                "benchmark": "scale",
                "corpus": str(args.corpus),
                "sizes": [figures.model_dump() for figures in results],
                **common,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
