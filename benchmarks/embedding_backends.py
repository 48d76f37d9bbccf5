"""Embedding backends (`ingest.embedder_backend`): speed against bare sentence-transformers, and
retrieval quality on SciFact (issue 18, point 2).

Speed: the chunks of the first `--texts` SciFact abstracts (title and text, chunked as
`litpipe eval retrieval` chunks them) are encoded by each backend's `Embedder.encode` and by a
bare `SentenceTransformer(path).encode(texts, batch_size=32, normalize_embeddings=True)` in the
same process, a group of chunks at a time, the first side rotating (see `ingest.paired`), so a
load that comes and goes on the machine weighs on every side alike; each side's throughput is
the median over `--repeat` rounds, and its ratio is to the bare side's. A backend's models are
built (exported, distilled) and warmed up before the timing. Besides the backends, torch with
batches of 16 and 64 and with one thread are timed (settings, not backends). Each backend's
smallest cosine to the bare vectors is printed too.

Quality: SciFact's test split through `litpipe.evaluation.beir.evaluate_retrieval` (what
`litpipe eval retrieval` runs) once per backend, dense and hybrid nDCG@10, in `--home` (a
temporary folder unless given: with one, a second run embeds nothing). `--no-quality` skips it.

Usage:
  python benchmarks/embedding_backends.py [--corpus ../shared/data/scifact/corpus.jsonl]
      [--texts 384] [--repeat 5] [--backends torch,torch-int8,onnx,model2vec] [--home DIR]
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

# The sibling benchmarks' helpers (this folder is first on sys.path). Importing litpipe switches
# the model hub off (HF_HUB_OFFLINE) unless the caller set it.
from ingest import paired
from pydantic import BaseModel, Field

from litpipe.evaluation.beir import corpus_documents, evaluate_retrieval, load_beir
from litpipe.ingest.chunking import chunk_document
from litpipe.retrieval.embedder import EMBEDDER_BACKENDS, Embedder
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe.workflows.ingest import settings_embedder

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"  # ../shared beside the repo
BARE = "bare sentence-transformers"
# Chunks per timed call: about what one batch of abstracts (a backfill batch) hands the embedder.
GROUP = 64


class BackendFigures(BaseModel):
    side: str
    backend: str | None
    chunks_per_s: float
    throughput_ratio: float
    min_cosine_to_bare: float | None = Field(
        description="None when the vectors' lengths differ (a static model's after PCA)."
    )
    dense_ndcg_at_10: float | None = None
    hybrid_ndcg_at_10: float | None = None


def chunk_texts(corpus: Path, count: int, settings: Settings, embedder: Embedder) -> list[str]:
    """The chunk texts of the corpus's first `count` documents, as the evaluation chunks them."""
    dataset = load_beir(corpus.parent, "test")
    documents = corpus_documents(dataset)[:count]
    return [
        chunk.text
        for document in documents
        for chunk in chunk_document(
            document,
            embedder.tokenizer,
            embedder.max_chunk_tokens,
            settings.ingest.chunk_overlap_tokens,
            embedder.embedder_id,
        ).chunks
    ]


def one_thread(encode: Callable[[list[str]], object]) -> Callable[[list[str]], object]:
    """`encode` with torch on one thread (the default: one per core), restored afterwards."""
    import torch

    def encode_on_one_thread(texts: list[str]) -> object:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return encode(texts)
        finally:
            torch.set_num_threads(threads)

    return encode_on_one_thread


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="SciFact's corpus.jsonl")
    parser.add_argument("--texts", type=int, default=384, help="abstracts whose chunks are timed")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds (medians)")
    parser.add_argument("--backends", default=",".join(EMBEDDER_BACKENDS))
    parser.add_argument("--home", type=Path, help="litpipe home of the quality runs")
    parser.add_argument("--no-quality", action="store_true", help="time only, no nDCG")
    args = parser.parse_args(argv)
    if args.corpus.name != "corpus.jsonl" or not args.corpus.is_file():
        parser.error(f"no SciFact corpus.jsonl at {args.corpus}")
    backends = args.backends.split(",")
    unknown = sorted(set(backends) - set(EMBEDDER_BACKENDS))
    if unknown:
        parser.error(f"unknown backends {unknown}; choose from {', '.join(EMBEDDER_BACKENDS)}")
    with tempfile.TemporaryDirectory(prefix="litpipe-embedding-backends-") as scratch:
        home = args.home or Path(scratch)
        return run(args, backends, home)


def run(args: argparse.Namespace, backends: list[str], home: Path) -> int:
    from sentence_transformers import SentenceTransformer

    settings = Settings(home=home)
    reference = settings_embedder(settings.ingest, settings.paths)
    texts = chunk_texts(args.corpus, args.texts, settings, reference)
    bare_model = SentenceTransformer(str(reference.model_dir), device="cpu")

    def bare(chunk_group: list[str]) -> object:
        return bare_model.encode(
            chunk_group, batch_size=32, normalize_embeddings=True, show_progress_bar=False
        )

    embedders = {
        backend: Embedder(
            settings.ingest.embedder,
            backend=backend,
            batch_size=settings.ingest.embed_batch_size,
            models_dir=settings.paths.models_dir,
        )
        for backend in backends
    }
    sides: dict[str, Callable[[list[str]], object]] = {BARE: bare}
    sides.update({backend: embedder.encode for backend, embedder in embedders.items()})
    if "torch" in embedders:
        for batch_size in (16, 64):
            sides[f"torch, batches of {batch_size}"] = Embedder(
                settings.ingest.embedder, batch_size=batch_size, backend="torch"
            ).encode
        sides["torch, one thread"] = one_thread(embedders["torch"].encode)
    # Built, loaded and warmed up outside the timing; the vectors of every text kept to compare.
    vectors = {name: encode(texts) for name, encode in sides.items()}
    groups = [texts[start : start + GROUP] for start in range(0, len(texts), GROUP)]
    seconds = paired(groups, lambda _round: sides, args.repeat)
    figures = []
    for name in sides:
        if name == BARE:
            continue
        ours, bare_vectors = np.asarray(vectors[name]), np.asarray(vectors[BARE])
        comparable = ours.shape == bare_vectors.shape
        figures.append(
            BackendFigures(
                side=name,
                backend=name if name in embedders else None,
                chunks_per_s=round(len(texts) / seconds[name], 2),
                throughput_ratio=round(seconds[BARE] / seconds[name], 3),
                min_cosine_to_bare=(
                    round(float((ours * bare_vectors).sum(axis=1).min()), 4) if comparable else None
                ),
            )
        )
    print(
        f"{len(texts)} chunks of {args.texts} SciFact abstracts, {args.repeat} rounds; bare "
        f"sentence-transformers {len(texts) / seconds[BARE]:.1f} chunks/s"
    )
    if not args.no_quality:
        for row in figures:
            if row.backend is None:
                continue
            started = time.perf_counter()
            evaluation = evaluate_retrieval(
                settings_groups(Settings(home=home, ingest={"embedder_backend": row.backend})),
                args.corpus.parent,
                "test",
                methods=("dense", "hybrid"),
            )
            scores = {result.method: result.ndcg_at_10 for result in evaluation.results}
            row.dense_ndcg_at_10 = round(scores["dense"], 4)
            row.hybrid_ndcg_at_10 = round(scores["hybrid"], 4)
            print(
                f"  {row.backend}: SciFact test nDCG@10 dense {row.dense_ndcg_at_10:.4f} hybrid "
                f"{row.hybrid_ndcg_at_10:.4f}, in {time.perf_counter() - started:.0f} s "
                f"({evaluation.embedded_chunks} chunks embedded)",
                flush=True,
            )
    for row in figures:
        quality = (
            f", nDCG@10 dense {row.dense_ndcg_at_10:.4f} hybrid {row.hybrid_ndcg_at_10:.4f}"
            if row.dense_ndcg_at_10 is not None and row.hybrid_ndcg_at_10 is not None
            else ""
        )
        print(
            f"{row.side}: {row.throughput_ratio:.2f}x bare ({row.chunks_per_s:.1f} chunks/s), "
            f"min cosine to bare {row.min_cosine_to_bare}{quality}"
        )
    print(
        json.dumps(
            {
                "benchmark": "embedding_backends",
                "corpus": str(args.corpus),
                "abstracts": args.texts,
                "chunks": len(texts),
                "repeat": args.repeat,
                "bare_chunks_per_s": round(len(texts) / seconds[BARE], 2),
                "backends": [row.model_dump() for row in figures],
                "embedder": reference.model_id,
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
