"""Stable, short, URL-safe paper ids.

A paper id is a Dagster partition key, a file name fragment and a citation anchor, so it must be
stable across runs and machines, short, and free of the characters Dagster forbids in partition
keys (`,` and `|`). A PDF is named by its own DOI when one can be found, then by its arXiv id, and
otherwise by the hash of its bytes; a table row by its collection and its row id.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pymupdf

_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")
_HASH_CHARS = 8

# The DOI Handbook's syntax: "10.", a registrant code, "/", then any printable suffix.
_DOI = re.compile(r"10\.\d{4,9}/[^\s\"'<>\[\]{}]+")
# A DOI the page presents as its own ("doi: 10...", "https://doi.org/10...") rather than one cited.
_LABELLED_DOI = re.compile(r"(?:doi\s*[:.]?\s*|doi\.org/)(10\.\d{4,9}/[^\s\"'<>\[\]{}]+)", re.I)
_ARXIV = re.compile(
    r"arxiv\s*:\s*(\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?|arxiv\.org/(?:abs|pdf)/"
    r"(\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Z]{2})?/\d{7})",
    re.I,
)
# Zero-width and soft-hyphen characters that PDF producers insert inside URLs to allow breaks.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\u00ad\ufeff"))
_ID_PAGES = 2
_PDF_MAGIC = b"%PDF-"
# Readers accept a few junk bytes before the header; so do we.
_HEADER_WINDOW = 1024


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_HASH_CHARS]


def slug(text: str, max_len: int = 64) -> str:
    """`text` as an id fragment: only `[A-Za-z0-9._-]`, never empty, at most `max_len` long.

    Other characters collapse to `-`. A fragment that had to be shortened ends with a hash of the
    whole text, so two long texts sharing a prefix still get different slugs.
    """
    if max_len < _HASH_CHARS + 2:
        raise ValueError(f"max_len must be at least {_HASH_CHARS + 2}")
    cleaned = _UNSAFE_RUN.sub("-", text).strip("-._")
    if not cleaned:
        return f"x{_short_hash(text)}"
    if len(cleaned) <= max_len:
        return cleaned
    head = cleaned[: max_len - _HASH_CHARS - 1].rstrip("-._")
    return f"{head}-{_short_hash(text)}"


def table_paper_id(collection: str, row_id: str) -> str:
    """Id of one row of an abstract table: `<collection>.<row id>`, both slugged, every dot of
    the collection written twice.

    Slugs hold dots, so joined as they are, collection `a.b` row `c` and collection `a` row `b.c`
    would be one paper. Doubled, the collection's dots come in runs of even length, and the
    separator is the first lone dot: a row slug starts with a letter or digit, a collection slug
    ends with one. The id of a collection without a dot is what it always was.
    """
    return f"{slug(collection).replace('.', '..')}.{slug(row_id)}"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _clean_doi(raw: str) -> str:
    # Sentence punctuation and closing brackets after a DOI are almost never part of it; DOIs are
    # case-insensitive, so one spelling keeps the id stable.
    return raw.rstrip(".,;:)]}'\"").lower()


def _doi_in_metadata(doc: pymupdf.Document) -> str | None:
    metadata = doc.metadata or {}
    for key in ("subject", "keywords"):
        found = _DOI.search(metadata.get(key) or "")
        if found:
            return _clean_doi(found.group(0))
    xmp = doc.get_xml_metadata() or ""
    for field in ("prism:doi", "dc:identifier"):
        element = re.search(rf"<{field}>(.*?)</{field}>", xmp, re.S)
        found = _DOI.search(element.group(1)) if element else None
        if found:
            return _clean_doi(found.group(0))
    return None


def _front_pages_text(doc: pymupdf.Document) -> list[str]:
    pages = min(_ID_PAGES, doc.page_count)
    return [doc[number].get_text().translate(_INVISIBLE) for number in range(pages)]


def _doi_in_text(pages: list[str]) -> str | None:
    # A paper prints its own DOI under the title or in a running header or footer; a DOI cited on
    # the first pages is rarer, usually unlabelled, and not repeated on every page.
    labelled = Counter(_clean_doi(doi) for text in pages for doi in _LABELLED_DOI.findall(text))
    if labelled:
        return labelled.most_common(1)[0][0]
    per_page = [{_clean_doi(doi) for doi in _DOI.findall(text)} for text in pages]
    on_every_page = set.intersection(*per_page) if len(per_page) > 1 else set()
    return min(on_every_page) if on_every_page else None


def _arxiv_in_text(text: str) -> str | None:
    found = _ARXIV.search(text)
    if not found:
        return None
    return found.group(1) or found.group(2)


def paper_identifiers(doc: pymupdf.Document) -> tuple[str | None, str | None]:
    """The paper's own (DOI, arXiv id), from its metadata then its first two pages."""
    doi = _doi_in_metadata(doc)
    pages = _front_pages_text(doc)
    if doi is None:
        doi = _doi_in_text(pages)
    return doi, _arxiv_in_text("\n".join(pages))


def doi_paper_id(doi: str) -> str:
    return slug(doi.replace("/", "_"))


def arxiv_paper_id(arxiv_id: str) -> str:
    return slug(f"arxiv-{arxiv_id.replace('/', '_')}")


def hash_paper_id(sha256_hex: str) -> str:
    return f"sha256-{sha256_hex[:16]}"


def has_pdf_header(head: bytes) -> bool:
    return _PDF_MAGIC in head[:_HEADER_WINDOW]


def pdf_paper_id(path: Path) -> str:
    """Stable id of a PDF: its DOI, else its arXiv id, else `sha256-<16 hex of its bytes>`.

    Never raises for unreadable PDFs (they get the content-hash id; `parse_pdf` reports why).
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            if not has_pdf_header(handle.read(_HEADER_WINDOW)):
                return hash_paper_id(file_sha256(path))
        # Imported here: pymupdf takes about half a second to import, which the processes
        # that never open a PDF (the digest, table ingests) should not pay.
        import pymupdf

        with pymupdf.open(path, filetype="pdf") as doc:
            if not doc.needs_pass:
                doi, arxiv_id = paper_identifiers(doc)
                if doi:
                    return doi_paper_id(doi)
                if arxiv_id:
                    return arxiv_paper_id(arxiv_id)
    except Exception:  # any unreadable file falls back to its content hash
        pass
    return hash_paper_id(file_sha256(path))
