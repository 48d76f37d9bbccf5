"""A paper's ingestion: its source (a PDF or an abstract table's row) parsed into a document,
then cut into section-aware chunks sized in the embedder's tokens. The `paper_document` and
`paper_chunks` assets run these, and so does `litpipe.workflows.pipeline`."""

from __future__ import annotations

from pathlib import Path

from litpipe.ingest.chunking import chunk_document
from litpipe.ingest.pdf import PdfLimits, parse_pdf
from litpipe.ingest.tables import document_from_row, with_bibliography
from litpipe.retrieval.embedder import Embedder
from litpipe.schemas import PaperChunks, PaperDocument, PaperSource
from litpipe.settings import HomePaths, IngestSettings


def settings_embedder(ingest: IngestSettings, paths: HomePaths) -> Embedder:
    """The embedder `ingest` configures, its built models under the home: the group unpacked
    here, so that retrieval's `Embedder` takes only what it uses."""
    return Embedder(
        ingest.embedder,
        device=ingest.embed_device,
        batch_size=ingest.embed_batch_size,
        backend=ingest.embedder_backend,
        models_dir=paths.models_dir,
    )


def read_document(source: PaperSource, ingest: IngestSettings) -> PaperDocument:
    """`paper_document`: title, authors, abstract and sections of the PDF, or of the table's
    row; a reference manager's metadata of the PDF (`source.fields`) wins over what its first
    page yields. Raises `IngestError` for a paper that cannot be read: the user's input, not a
    fault."""
    if source.kind == "pdf":
        document = parse_pdf(
            Path(source.path),
            source.paper_id,
            PdfLimits(max_bytes=ingest.max_pdf_bytes, max_pages=ingest.max_pdf_pages),
            tables=ingest.pdf_tables,
        )
        return with_bibliography(document, source.fields) if source.fields else document
    return document_from_row(source)


def chunk_paper(
    document: PaperDocument, embedder: Embedder, max_tokens: int | None, overlap_tokens: int
) -> PaperChunks:
    """`paper_chunks`: chunks of at most `max_tokens` of the embedder's tokens, and never more
    than the embedder takes (its whole window when `max_tokens` is None)."""
    limit = embedder.max_chunk_tokens
    return chunk_document(
        document,
        embedder.tokenizer,
        max_tokens=limit if max_tokens is None else min(max_tokens, limit),
        overlap_tokens=overlap_tokens,
        tokenizer_name=embedder.embedder_id,
    )
