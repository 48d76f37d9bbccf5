"""Papers from a reference manager (Zotero, BibTeX): what `litpipe.ingest.zotero` and
`litpipe.ingest.bibtex` read, made into the same `Discovery` that `discover` returns.

An entry with a PDF is that PDF, carrying the manager's title, authors, year, venue, DOI and
abstract in `PaperSource.fields` (they win over what the PDF's first page yields when it is
parsed), and hashed with its bytes into its `content_sha256`: an edit of the title in the
manager is a change of the paper, as an edit of its file is. An entry without one enters by its
title and abstract, as a row of an abstract table does. An entry whose PDF is gone enters by
its abstract when it has one, else fails alone with one line naming it and the missing file; an
entry with neither a PDF nor an abstract is left aside, counted in a note.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from litpipe.ingest.ids import doi_paper_id, file_sha256, pdf_paper_id, slug, table_paper_id
from litpipe.ingest.sources import Discovery
from litpipe.ingest.tables import AUTHOR_SEPARATOR, normalized_doi, publication_year
from litpipe.schemas import FailedPaper, PaperSource, pdf_content_sha256, sha256_text
from litpipe.text import counted

# Entries named in a note before the rest are counted.
NAMED_IN_NOTE = 5
# How more than one of a library's entries are called, where not with an `s`.
PLURALS = {"entry": "entries"}


@dataclass
class LibraryEntry:
    """One item of a reference manager, as its reader found it."""

    # Zotero's item key, or the BibTeX cite key.
    key: str
    # How a line names it: `Zotero item ABCD2345 “Title”`, `entry smith2020 (line 12)`.
    name: str
    title: str = ""
    authors: list[str] = field(default_factory=list)
    # As written: `2021`, `2021-03-15 March 15, 2021` (Zotero's stored date), `in press`.
    year: str = ""
    venue: str = ""
    doi: str = ""
    abstract: str = ""
    # Its PDF files, in order of preference: the first one there is the paper.
    pdfs: list[Path] = field(default_factory=list)
    # Why a PDF it names cannot be found other than by a missing file (a path the reader
    # cannot resolve).
    problem: str = ""
    # Whether the manager marks it retracted: empty when not, else why (or only that it is).
    retracted: str = ""
    # The key the user cites it by: the BibTeX entry's key, Better BibTeX's of a Zotero item;
    # empty where the library has none.
    citation_key: str = ""
    # The user's own entry, where it came from their `.bib` (`written_entry`); else empty.
    bibtex: str = ""

    def fields(self) -> dict[str, str]:
        """What the entry says of the paper, as `PaperSource.fields` carries it: only what is
        known; authors joined by `;`."""
        known = {
            "title": " ".join(self.title.split()),
            "authors": f"{AUTHOR_SEPARATOR} ".join(a for a in self.authors if a.strip()),
            "year": str(publication_year(self.year) or ""),
            "venue": " ".join(self.venue.split()),
            "doi": normalized_doi(self.doi),
            "abstract": self.abstract.strip(),
            # Read by the catalog at registration (`source_retraction`); absent when empty, so
            # an entry that is not retracted hashes as before.
            "retracted": " ".join(self.retracted.split()),
        }
        return {name: value for name, value in known.items() if value}

    def fingerprint(self) -> str:
        """What changes when the entry's paper may have: its fields and each of its PDFs'
        size and mtime (or absence), without reading a PDF; a sync compares it with the last
        one it saw, and hashes only the entries whose fingerprint changed."""
        files = []
        for path in self.pdfs:
            try:
                stat = path.stat()
            except OSError:
                files.append([str(path), None])
            else:
                files.append([str(path), f"{stat.st_size}:{stat.st_mtime_ns}"])
        seen = {"fields": self.fields(), "pdfs": files, "problem": self.problem}
        if self.citation_key:  # absent when empty, so an entry without one is seen as before
            seen["key"] = self.citation_key
        return sha256_text(json.dumps(seen, sort_keys=True, ensure_ascii=False))[:16]


def library_discovery(
    entries: Iterable[LibraryEntry],
    collection: str,
    origin: Path,
    what: str,
    *,
    allow_empty: bool = False,
) -> Discovery:
    """The papers of a reference manager's entries in `collection`; `origin` is the database
    or `.bib` file (what an entry without a PDF comes from), `what` how its entries are called
    (`item`, `entry`).

    Raises ValueError, with a one-line reason, when no entry has a PDF or an abstract, unless
    `allow_empty` (a sync's batch of entries, which may hold none).
    """
    sources: dict[str, PaperSource] = {}
    named: dict[str, str] = {}
    failed: list[FailedPaper] = []
    notes: list[str] = []
    aside: list[str] = []
    for entry in entries:
        fields = entry.fields()
        present = [path for path in entry.pdfs if path.is_file()]
        missing = [path for path in entry.pdfs if not path.is_file()]
        gone = f"its PDF {missing[0]} is not there" if missing else entry.problem
        if present:
            source = _pdf_source(present[0], entry, fields)
        elif fields.get("abstract") and fields.get("title"):
            source = _abstract_source(origin, entry, fields)
            if gone:
                notes.append(f"{entry.name}: {gone}; it enters by its abstract")
        elif gone:
            reason = f"{entry.name}: {gone}, and it has no abstract to enter by"
            failed.append(FailedPaper(paper_id=_doi_id(fields), file=str(origin), reason=reason))
            continue
        else:
            aside.append(entry.key)
            continue
        if source.paper_id in sources:
            notes.append(
                f"{entry.name} is the same paper as {named[source.paper_id]} "
                f"({source.paper_id}): taken once"
            )
            continue
        sources[source.paper_id] = source
        named[source.paper_id] = entry.name
    if aside:
        shown = ", ".join(aside[:NAMED_IN_NOTE])
        more = f" and {len(aside) - NAMED_IN_NOTE} more" if len(aside) > NAMED_IN_NOTE else ""
        notes.append(
            f"{counted(len(aside), what, PLURALS.get(what))} without a PDF or an abstract left "
            f"aside: {shown}{more}"
        )
    if not sources and not failed and not allow_empty:
        raise ValueError(f"{origin}: no {what} has a PDF or an abstract to run on")
    return Discovery(
        collection=collection, sources=list(sources.values()), failed=failed, notes=notes
    )


def _doi_id(fields: dict[str, str]) -> str | None:
    return doi_paper_id(fields["doi"]) if "doi" in fields else None


def _pdf_source(pdf: Path, entry: LibraryEntry, fields: dict[str, str]) -> PaperSource:
    """The PDF, named by the manager's DOI when it knows one (else as any PDF is), its content
    the hash of its bytes and of the manager's fields (`pdf_content_sha256`): an edit of the
    title in the manager is a changed paper, as a changed file is (caught before it is
    parsed)."""
    return PaperSource(
        paper_id=_doi_id(fields) or pdf_paper_id(pdf),
        kind="pdf",
        path=str(pdf.resolve()),
        external_id=entry.key,
        content_sha256=pdf_content_sha256(file_sha256(pdf), fields),
        size_bytes=pdf.stat().st_size,
        fields=fields,
        citation_key=entry.citation_key or None,
        library_bibtex=entry.bibtex or None,
    )


def _abstract_source(origin: Path, entry: LibraryEntry, fields: dict[str, str]) -> PaperSource:
    """The entry as an abstract table's row: named by its DOI, else by its key in the library
    or `.bib` file (not by the collection: an item in two collections is one paper)."""
    return PaperSource(
        paper_id=_doi_id(fields) or table_paper_id(slug(origin.stem), entry.key),
        kind="table_row",
        path=str(origin.resolve()),
        external_id=entry.key,
        content_sha256=sha256_text(json.dumps(fields, sort_keys=True, ensure_ascii=False)),
        fields=fields,
        citation_key=entry.citation_key or None,
        library_bibtex=entry.bibtex or None,
    )
