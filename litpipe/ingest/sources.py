"""From what the user points at (a folder of PDFs, an abstract table, corpus roots) to the
`PaperSource` records the catalog registers. Bad rows and unreadable files become
`FailedPaper`s here or when parsed; they never stop the other papers."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from litpipe.ingest.ids import pdf_paper_id, slug
from litpipe.ingest.tables import read_table
from litpipe.schemas import FailedPaper, PaperSource

TABLE_SUFFIXES = (".csv", ".jsonl")


class Discovery(BaseModel):
    collection: str
    sources: list[PaperSource]
    failed: list[FailedPaper]


def collection_name(source: Path) -> str:
    """A folder's name, or a table's stem: the collection a source becomes by default."""
    return slug(source.stem if source.is_file() else source.resolve().name)


def is_table(path: Path) -> bool:
    return path.suffix.lower() in TABLE_SUFFIXES


def is_pdf(path: Path) -> bool:
    return path.suffix.lower() == ".pdf"


def pdf_source(path: Path, collection: str) -> PaperSource:
    data = path.read_bytes()
    return PaperSource(
        paper_id=pdf_paper_id(path),
        collection=collection,
        kind="pdf",
        path=str(path.resolve()),
        content_sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
    )


def discover(source: Path, collection: str | None = None) -> Discovery:
    """Every paper of a folder of PDFs (searched recursively) or of an abstract table.

    Raises ValueError for a source that is neither (the CLI's usage error).
    """
    if not source.exists():
        raise ValueError(f"{source}: no such file or folder")
    name = slug(collection) if collection else collection_name(source)
    if source.is_file():
        if not is_table(source):
            raise ValueError(f"{source}: expected a folder of PDFs or a .csv/.jsonl table")
        return discover_file(source, name)
    pdfs = sorted(p for p in source.rglob("*") if p.is_file() and is_pdf(p))
    return Discovery(
        collection=name, sources=unique_papers(pdf_source(p, name) for p in pdfs), failed=[]
    )


def discover_file(path: Path, collection: str) -> Discovery:
    """The papers of one file: a table's rows, or the PDF itself."""
    if is_table(path):
        sources, failed = read_table(path, collection)
        return Discovery(collection=collection, sources=sources, failed=failed)
    return Discovery(collection=collection, sources=[pdf_source(path, collection)], failed=[])


def unique_papers(sources: Iterator[PaperSource]) -> list[PaperSource]:
    """The first file of each paper: a second copy of the same paper is the same partition."""
    by_id: dict[str, PaperSource] = {}
    for source in sources:
        by_id.setdefault(source.paper_id, source)
    return list(by_id.values())


def corpus_files(roots: list[Path]) -> Iterator[tuple[Path, str]]:
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
