"""From what the user points at (a folder of PDFs, an abstract table, corpus roots) to the
`PaperSource` records the catalog registers. Bad rows and unreadable files become
`FailedPaper`s here or when parsed; they never stop the other papers."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from litpipe.ingest.ids import file_sha256, pdf_paper_id, slug
from litpipe.ingest.tables import read_table
from litpipe.schemas import FailedPaper, PaperSource

TABLE_SUFFIXES = (".csv", ".jsonl")
ACCEPTED = "expected a folder of PDFs or a .csv/.jsonl table (columns id, title, abstract)"


class Discovery(BaseModel):
    collection: str
    sources: list[PaperSource]
    failed: list[FailedPaper]
    notes: list[str] = Field(
        default_factory=list,
        description="One line each: what a reference manager's reader left aside or worked "
        "around (entries without a PDF or an abstract, a PDF gone so the abstract stands in).",
    )


def collection_name(source: Path) -> str:
    """A folder's name, or a table's stem: the collection a source becomes by default."""
    return slug(source.stem if source.is_file() else source.resolve().name)


def is_table(path: Path) -> bool:
    return path.suffix.lower() in TABLE_SUFFIXES


def is_pdf(path: Path) -> bool:
    return path.suffix.lower() == ".pdf"


def pdf_source(path: Path) -> PaperSource:
    # Hashed block by block: a PDF over `ingest.max_pdf_bytes` is refused when parsed, and its bytes
    # never all in memory at once.
    return PaperSource(
        paper_id=pdf_paper_id(path),
        kind="pdf",
        path=str(path.resolve()),
        content_sha256=file_sha256(path),
        size_bytes=path.stat().st_size,
    )


def discover(source: Path, collection: str | None = None) -> Discovery:
    """Every paper of a folder of PDFs (searched recursively) or of an abstract table.

    Raises ValueError, with a one-line reason, for a source there is nothing to run on (the
    CLI's usage error): neither a folder nor a table, a folder without a PDF, a table that
    fails as a whole (missing columns, empty, unreadable).
    """
    if not source.exists():
        raise ValueError(f"{source}: no such file or folder")
    name = slug(collection) if collection else collection_name(source)
    if source.is_file():
        if not is_table(source):
            raise ValueError(f"{source}: {ACCEPTED}")
        found = discover_file(source, name)
        whole_file = [failure for failure in found.failed if failure.row is None]
        if not found.sources and whole_file:
            raise ValueError(f"{source}: {whole_file[0].reason}")
        return found
    pdfs = sorted(p for p in source.rglob("*") if p.is_file() and is_pdf(p))
    if not pdfs:
        raise ValueError(f"{source}: no .pdf file in this folder or below it; {ACCEPTED}")
    return Discovery(collection=name, sources=unique_papers(pdf_source(p) for p in pdfs), failed=[])


def discover_file(path: Path, collection: str) -> Discovery:
    """The papers of one file: a table's rows, or the PDF itself."""
    if is_table(path):
        sources, failed = read_table(path, collection)
        return Discovery(collection=collection, sources=sources, failed=failed)
    return Discovery(collection=collection, sources=[pdf_source(path)], failed=[])


def unique_papers(sources: Iterator[PaperSource]) -> list[PaperSource]:
    """The first file of each paper: a second copy of the same paper is the same partition."""
    by_id: dict[str, PaperSource] = {}
    for source in sources:
        by_id.setdefault(source.paper_id, source)
    return list(by_id.values())


def corpus_files(roots: Sequence[Path]) -> Iterator[tuple[Path, str]]:
    """(file, collection) for every PDF and table under the corpus roots, in a stable order.

    A PDF belongs to the collection named after its top folder under the root (or after the root
    itself when it lies directly in it); a table is a collection of its own.
    """
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if not path.is_file():
                continue
            if is_table(path):
                yield path, collection_name(path)
            elif is_pdf(path):
                top = path.relative_to(root).parts[0]
                yield path, slug(root.resolve().name if top == path.name else top)
