"""A BibTeX file as the source of `litpipe run --bibtex refs.bib`: its entries made library
entries (`litpipe.ingest.library`).

The entries with a PDF in their `file` field (JabRef's, Zotero's and Mendeley's `file =
{Description:path.pdf:application/pdf}`, `{:path.pdf:PDF}` or a bare `{path.pdf}`, several
separated by `;`; BibDesk's `bdsk-file-N`; a `pdf` or `local-url` field), relative to the
`.bib`'s folder, are their PDFs; the entries with an `abstract` and no PDF enter by it; the
others are left aside, counted in a note. An entry's `retracted` field (`true`, or the reason)
marks the paper retracted in the catalog. The rest follows `litpipe.ingest.library`.

The modules, one concern each: `parser` (BibTeX's grammar: the entries and the damaged ones,
crossrefs resolved), `files` (an entry's file fields as PDFs), `latex` (LaTeX values made
text), `authors` (name lists as `Family, Given`) and `related` (the keys of an entry's
related entries). Their underscored names are the package's own; the others are imported
from here.
"""

from __future__ import annotations

import re
from pathlib import Path

from litpipe.ingest.bibtex.authors import names
from litpipe.ingest.bibtex.files import _jabref_file_directories, entry_pdfs, file_field
from litpipe.ingest.bibtex.latex import latex_to_text
from litpipe.ingest.bibtex.parser import (
    BibDamage,
    BibEntry,
    parse_bibtex,
    with_crossrefs,
    written_entry,
)
from litpipe.ingest.bibtex.related import related_keys
from litpipe.ingest.ids import slug
from litpipe.ingest.library import LibraryEntry, library_discovery
from litpipe.ingest.sources import Discovery
from litpipe.schemas import FailedPaper

__all__ = [
    "BibDamage",
    "BibEntry",
    "discover_bibtex",
    "entry_pdfs",
    "file_field",
    "latex_to_text",
    "names",
    "parse_bibtex",
    "related_keys",
    "with_crossrefs",
]

# Where each entry type keeps what it was published in, in order (an entry has its own).
VENUE_FIELDS = (
    "journal",
    "journaltitle",
    "booktitle",
    "school",
    "institution",
    "publisher",
    "organization",
)
_DOI_IN_URL = re.compile(r"doi\.org/(10\.\S+)", re.I)


def discover_bibtex(bib: Path, collection: str | None = None) -> Discovery:
    """The papers of the `.bib` file's entries that have a PDF or an abstract, in the
    collection `collection` (default: the file's name, slugged).

    Raises ValueError, with a one-line reason, for a file there is nothing to run on: no such
    file, or no entry with a PDF or an abstract (the first damage's line when none parsed).
    """
    if not bib.is_file():
        problem = "not a file" if bib.exists() else "no such file"
        raise ValueError(f"{bib}: {problem}; --bibtex takes a BibTeX file (.bib)")
    try:
        data = bib.read_bytes()
    except OSError as error:
        raise ValueError(f"{bib}: cannot read the file: {error.strerror or error}") from error
    text = _decoded(data)
    entries, damaged = parse_bibtex(text)
    entries = with_crossrefs(entries)
    folders = list(dict.fromkeys([*_jabref_file_directories(text, bib.parent), bib.parent]))
    if not entries and damaged:
        raise ValueError(f"{bib}: line {damaged[0].line}: {damaged[0].reason}")
    failed = [
        FailedPaper(paper_id=None, file=str(bib), reason=f"line {damage.line}: {damage.reason}")
        for damage in damaged
    ]
    first_line: dict[str, int] = {}
    library: list[LibraryEntry] = []
    for entry in entries:
        if entry.key in first_line:
            failed.append(
                FailedPaper(
                    paper_id=None,
                    file=str(bib),
                    reason=f"line {entry.line}: entry {entry.key}: duplicate cite key (first "
                    f"at line {first_line[entry.key]}); this one is left out",
                )
            )
            continue
        first_line[entry.key] = entry.line
        library.append(_library_entry(entry, folders))
    name = slug(collection) if collection else slug(bib.stem)
    try:
        found = library_discovery(library, name, bib, "entry")
    except ValueError:
        if not failed:
            raise
        found = Discovery(collection=name, sources=[], failed=[])
    return found.model_copy(update={"failed": [*failed, *found.failed]})


def _decoded(data: bytes) -> str:
    """UTF-8 (a byte-order mark dropped), else Latin-1, which older `.bib` files are in."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _library_entry(entry: BibEntry, folders: list[Path]) -> LibraryEntry:
    values = entry.fields
    doi = latex_to_text(values.get("doi", ""), ligatures=False)
    if not doi and (found := _DOI_IN_URL.search(values.get("url", ""))):
        doi = found.group(1)
    pdfs, problems = entry_pdfs(values, folders)
    return LibraryEntry(
        key=entry.key,
        citation_key=entry.key,
        bibtex=written_entry(entry),
        name=f"entry {entry.key} (line {entry.line})",
        title=latex_to_text(values.get("title", "")),
        authors=names(values.get("author") or values.get("editor") or ""),
        year=latex_to_text(values.get("year") or values.get("date") or ""),
        venue=next(
            (latex_to_text(values[name]) for name in VENUE_FIELDS if values.get(name, "").strip()),
            "",
        ),
        doi=doi,
        abstract=latex_to_text(values.get("abstract", "")),
        pdfs=pdfs,
        problem="; ".join(problems),
        # An explicit `retracted = {true}` (or the reason: `retracted = {fabricated data}`);
        # a note or keyword that mentions a retraction is not read as one.
        retracted=latex_to_text(values.get("retracted", "")),
    )
