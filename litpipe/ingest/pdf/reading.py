"""Opening the PDF within its limits, and step 1: every page's horizontal text lines with their
box, dominant font, size and weight (one `page.get_text("dict")` per page), less the space
glyphs some producers set between kerned letters, and with raised numbers written as Unicode
superscripts (`U50¹⁴`, `10⁻⁵`), as the layout shows them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from litpipe.ingest.ids import has_pdf_header, paper_identifiers
from litpipe.schemas import IngestError
from litpipe.text import SUPERSCRIPT_DIGITS, SUPERSCRIPT_MINUS

if TYPE_CHECKING:
    # Imported where a PDF is opened: pymupdf takes about half a second to import, which the
    # processes that load the pipeline's definitions but open no PDF should not pay.
    import pymupdf

_BOLD_FLAG = 16
_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi|[.,+-]B$", re.I)
# Below this share of the font size between two letters, a space span between them is kerning.
_KERNING_GAP = 0.1
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))
# PyMuPDF's flag of a span set above the baseline of the text before it.
_SUPERSCRIPT_FLAG = 1
# A raised span of digits, commas and dashes (a citation marker `14`, `10,20`, `7-13`; an
# exponent `5`, `-16`; the minus U+2212 that some producers raise on its own before an
# exponent's digits) is written in superscripts, its commas and spaces kept: joined to the word
# before, `14` would read as part of it (`U5014`, where `PARP1` is a name). Other raised text
# (letters, `*`, `†`, `+`) is left as it is set.
_RAISED_NUMBER = re.compile(r"[0-9,\-\u2013\u2212 ]*[0-9\-\u2013\u2212][0-9,\-\u2013\u2212 ]*")
_AS_SUPERSCRIPT = str.maketrans(
    "0123456789-\u2013\u2212", SUPERSCRIPT_DIGITS + 3 * SUPERSCRIPT_MINUS
)

_HEADER_NOT_PDF = 16
_MIN_TEXT_CHARS = 40


@dataclass(slots=True)
class _Line:
    """One line of text on a page (or several fragments of one, once merged)."""

    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    size: float
    bold: bool
    font: str = ""
    # Left edge of the column the line was read in (set once the page's columns are known).
    left: float = 0.0

    @property
    def height(self) -> float:
        return self.y1 - self.y0


def _open_pdf(path: Path, limits: PdfLimits) -> pymupdf.Document:
    if not path.is_file():
        raise IngestError(f"file not found: {path}")
    size = path.stat().st_size
    if limits.max_bytes is not None and size > limits.max_bytes:
        raise IngestError(
            f"{size:,} bytes, over the limit of {limits.max_bytes:,} (setting ingest.max_pdf_bytes)"
        )
    with path.open("rb") as handle:
        head = handle.read(1024)
    if not head:
        raise IngestError("empty file")
    if not has_pdf_header(head):
        raise IngestError(f"not a PDF (starts with {head[:_HEADER_NOT_PDF]!r})")
    import pymupdf

    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as exc:  # pymupdf raises several types for damaged files
        raise IngestError(f"corrupt PDF: {_one_line(exc)}") from exc
    if doc.needs_pass:
        doc.close()
        raise IngestError("encrypted PDF (needs a password)")
    if doc.page_count == 0:
        doc.close()
        raise IngestError("corrupt PDF: no pages could be read")
    if limits.max_pages is not None and doc.page_count > limits.max_pages:
        pages = doc.page_count
        doc.close()
        raise IngestError(
            f"{pages:,} pages, over the limit of {limits.max_pages:,} "
            "(setting ingest.max_pdf_pages)"
        )
    return doc


def _one_line(exc: BaseException) -> str:
    message = " ".join(str(exc).split()) or type(exc).__name__
    return message[:200]


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text.translate(_INVISIBLE))


@lru_cache(maxsize=512)
def _bold_font(name: str) -> bool:
    return bool(_BOLD_FONT.search(name))


def _without_kerning_spaces(spans: list[dict]) -> list[dict]:
    """The spans less each space drawn where the letters on its sides touch: some producers
    set a space glyph (its own span) between kerned letters of one word, which would read
    "e v aluate". A real space leaves a gap of about a quarter of the font size."""
    kept = []
    for index, span in enumerate(spans):
        if not span["text"].strip() and 0 < index < len(spans) - 1:
            before, after = spans[index - 1], spans[index + 1]
            gap = after["bbox"][0] - before["bbox"][2]
            size = max(before["size"], after["size"])
            if before["text"].strip() and after["text"].strip() and gap < _KERNING_GAP * size:
                continue
        kept.append(span)
    return kept


def _written(span: dict) -> str:
    """A span's text as the line reads it: a raised number in superscripts, one character for
    one, so that whatever stands around it keeps its place."""
    text: str = span["text"]
    if span["flags"] & _SUPERSCRIPT_FLAG and _RAISED_NUMBER.fullmatch(text.strip()):
        return text.translate(_AS_SUPERSCRIPT)
    return text


def _line_from_spans(
    page: int, bbox: tuple[float, float, float, float], spans: list[dict]
) -> _Line | None:
    spans = _without_kerning_spaces(spans)
    text = _clean("".join(map(_written, spans))).strip()
    if not text:
        return None
    main = spans[0]
    main_chars = bold_chars = chars = 0
    for span in spans:
        visible = len(span["text"].strip())
        chars += visible
        if span["flags"] & _BOLD_FLAG or _bold_font(span["font"]):
            bold_chars += visible
        if visible > main_chars:
            main, main_chars = span, visible
    return _Line(
        page, *bbox, text, round(main["size"], 1), bold_chars * 2 > chars, font=main["font"]
    )


@lru_cache(maxsize=1)
def _text_flags() -> int:
    """Ligatures expanded (no TEXT_PRESERVE_LIGATURES); images skipped: extracting their bytes
    would cost more than the text itself."""
    import pymupdf

    return pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP


def _page_lines(page: pymupdf.Page, number: int) -> list[_Line]:
    lines = []
    for block in page.get_text("dict", flags=_text_flags())["blocks"]:
        for raw in block.get("lines", ()):
            # Rotated text is margin furniture ("Downloaded from ...") or figure axis labels.
            if abs(raw["dir"][1]) > 0.05 or raw["dir"][0] < 0:
                continue
            line = _line_from_spans(number, raw["bbox"], raw["spans"])
            if line is not None:
                lines.append(line)
    return lines


@dataclass(slots=True)
class _Source:
    """What is read from the file: every page's lines, page sizes, metadata and identifiers."""

    pages: list[list[_Line]]
    rects: list[pymupdf.Rect]
    metadata: dict[str, str]
    doi: str | None
    arxiv_id: str | None


def _read(doc: pymupdf.Document) -> _Source:
    try:
        pages, rects = [], []
        for number, page in enumerate(doc.pages()):
            rects.append(page.rect)
            pages.append(_page_lines(page, number))
        doi, arxiv_id = paper_identifiers(doc)
        metadata = {key: value.strip() for key, value in (doc.metadata or {}).items() if value}
    except Exception as exc:  # damaged page streams raise several types
        raise IngestError(f"corrupt PDF: {_one_line(exc)}") from exc
    return _Source(pages, rects, metadata, doi, arxiv_id)


def _text_layer_missing(pages: list[list[_Line]]) -> bool:
    characters = sum(len(line.text) for lines in pages for line in lines)
    return characters < _MIN_TEXT_CHARS * max(1, len(pages))


@dataclass(frozen=True, slots=True)
class PdfLimits:
    """The most bytes and pages a PDF may have (`ingest.max_pdf_bytes`, `ingest.max_pdf_pages`);
    None: no limit."""

    max_bytes: int | None = None
    max_pages: int | None = None
