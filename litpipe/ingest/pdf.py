"""PDF → `PaperDocument`: clean body text, sections, pages and references.

One `page.get_text("dict")` per page gives every text line with its box, font and size;
everything after that is plain Python over those lines, so parsing costs about twice what
reading the plain text does. The steps, in order:

1. lines: horizontal text lines with their dominant font, size and weight;
2. furniture: running headers and footers (the same text at the same height on many pages),
   page numbers, line-number margins (small integers beside the text, sharing an edge) and
   figure labels (fonts that never set a line of prose) go;
3. reading order, per page: a gutter (a free strip before an edge where lines start) splits the
   page into columns; lines crossing it (titles, centred author rows, full-width abstracts and
   captions) cut it into bands; each band is read left column then right column;
4. footnotes (small lines opened by a mark at a column's foot) go; paragraphs and headings,
   from line spacing, indents, short last lines and font changes; a paragraph broken by a
   column end resumes after any caption in between;
5. the document: title, authors, abstract, references (kept out of the text), sections, and the
   offset where each page starts.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pymupdf

from litpipe.ingest.ids import has_pdf_header, paper_identifiers
from litpipe.schemas import IngestError, PaperDocument, Section

# Ligatures expanded (no TEXT_PRESERVE_LIGATURES); images skipped: extracting their bytes would
# cost more than the text itself.
_TEXT_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
_BOLD_FLAG = 16
_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi|[.,+-]B$", re.I)
# Below this share of the font size between two letters, a space span between them is kerning.
_KERNING_GAP = 0.1
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))
_SOFT_HYPHEN = "\u00ad"
_HYPHENS = ("-", "\u2010", "\u2011")
# A line ending inside a URL or DOI: its hyphen is part of the address.
_URL_TAIL = re.compile(r"(?:https?:|www\.|doi\.org|/)\S*$")

_HEADER_NOT_PDF = 16
_MIN_TEXT_CHARS = 40

# Page furniture.
_FURNITURE_BAND = 0.12
_FURNITURE_MIN_PAGES = 3
_FURNITURE_PAGE_SHARE = 0.3
_SAME_HEIGHT = 4.0
_PAGE_NUMBER = re.compile(
    r"(?:page\s*)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?|[-\u2013\u2014]\s*\d{1,4}\s*[-\u2013\u2014]"
    r"|[ivxlc]{1,6}",
    re.I,
)
_LINE_NUMBER = re.compile(r"\d{1,4}")
# The punctuation around a word split by a font's spacing ("(dif ferent)," -> "(", "),").
_LEADING_NON_WORD = re.compile(r"\W*")
_TRAILING_NON_LETTERS = re.compile(r"[^A-Za-z]*(?:-.*)?$")
_LINE_NUMBER_MIN = 10
_MARGIN_TOLERANCE = 2.0

_PROSE_FONT_SHARE = 0.1
_LABEL_LINE_CHARS = 20
_PROSE_LINE_WIDTH = 0.25
_PROSE_LINE_WORDS = 6

# Reading order.
_GUTTER_MIN_WIDTH = 6.0
_SPANNING_WIDTH = 0.6
_GUTTER_CROSSING_SHARE = 0.08
# How far (a share of the text's width) a centred line's middle may lie off the text's middle.
_CENTRED_TOLERANCE = 0.02
_GUTTER_MIN_SIDE_LINES = 4
# Lines starting at one x that may mark a column's left edge (hanging indents leave few).
_EDGE_MIN_LINES = 2
_GUTTER_MIN_SIDE_SHARE = 0.04
_MAX_COLUMN_DEPTH = 2
_BAND_MIN_SIDE_LINES = 2
_DROP_CAP_RATIO = 1.8

# Paragraphs and headings.
_PARAGRAPH_GAP = 1.45
_SHORT_LINE = 0.25
_SIZE_STEP = 0.9
_HEADING_SIZE_STEP = 0.7
_BOLD_HEADING_SMALLER = 1.0
# All-capital headings ("RESULTS") are longer than gene and protein names ("CFTR").
_CAPITALS_MIN_LETTERS = 5
_WRAPPED_HEADING_CHARS = 25
_LOCAL_PITCH_MIN_LINES = 4
_BODY_PAGES_SHARE = 0.6
# Pages that hold title, authors and abstract.
_FRONT_PAGES = 2
_MENDED_MIN_LETTERS = 5
_DEBRIS_TOKENS = 40
_DEBRIS_WORD_SHARE = 0.2
_PROSE_WORD = re.compile(r"\(?[A-Za-z][a-z]{2,}[a-z'\u2019-]*[.,;:)]?")
_CARRY_MIN_SIZE = 0.8
# Footnotes: set this much smaller than the body at most, opened by a symbol or a number.
_FOOTNOTE_SIZE = 0.85
_FOOTNOTE_MARK = re.compile(r"[*\u2217\u2020\u2021\u00a7\u00b6\u2016#]|\d{1,2} ?[A-Za-z]")
_MAX_INTERRUPTIONS = 2
_INTERRUPTED_MIN_LINES = 2
_HEADING_MAX_CHARS = 120
_HEADING_MAX_WORDS = 16
_SENTENCE_END = (".", "!", "?", ":")
_CAPTION = re.compile(r"(?:supplementary\s+)?(?:fig(?:ure)?s?|table|movie|video)\.?\s*S?\d", re.I)
_NUMBERING = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,4}\.|[A-H]\.)\s+")
_KNOWN_HEADINGS = {
    "abstract", "summary", "introduction", "background", "results", "discussion", "methods",
    "conclusion", "conclusions", "materials and methods", "material and methods", "methodology",
    "results and discussion", "experimental procedures", "experimental section", "method details",
    "star methods", "online methods", "acknowledgements", "acknowledgments", "acknowledgement",
    "acknowledgment", "funding", "author contributions", "data availability", "code availability",
    "data and code availability", "competing interests", "conflict of interest",
    "conflicts of interest", "declaration of interests", "supplementary material",
    "supplementary information", "supporting information", "figure legends", "figures", "tables",
    "abbreviations", "appendix", "references", "literature cited", "bibliography",
    "references and notes", "works cited", "significance", "importance", "author summary",
    "availability of data and materials", "declarations", "ethics approval",
}  # fmt: skip
_REFERENCE_HEADINGS = {
    "references", "literature cited", "bibliography", "references and notes", "works cited",
    "reference", "cited literature", "references cited",
}  # fmt: skip
_ABSTRACT_HEADINGS = {"abstract", "summary"}
_INTRO_HEADINGS = {"introduction", "background"}
_FRONT_HEADINGS = {
    "significance", "importance", "author summary", "graphical abstract", "highlights",
    "keywords", "key words", "abbreviations",
}  # fmt: skip
# Labels that open front-matter paragraphs ("Keywords: ...", "IMPORTANCE Class II ...").
_FRONT_LABEL = re.compile(
    r"^(?:[Kk]ey ?[Ww]ords?|KEY ?WORDS?|Abbreviations|ABBREVIATIONS|Importance|IMPORTANCE|"
    r"Significance|SIGNIFICANCE|Author [Ss]ummary|AUTHOR SUMMARY|Highlights|HIGHLIGHTS|"
    r"Graphical [Aa]bstract|Running (?:title|head)|Correspondence|Edited by|Received)\b"
)
_ABSTRACT_LABEL = re.compile(r"^(?:abstract|summary)\s*[:.\u2013\u2014-]?\s+(?=[A-Z])", re.I)
_ABSTRACT_MIN_CHARS = 400
_ABSTRACT_MAX_CHARS = 5000
_INTRO_MIN_CHARS = 200
_AUTHORS_MAX_CHARS = 1500
_AFFILIATION = re.compile(r"\b(?:universit|department|institut|laborator|school of|@)", re.I)
_REFERENCE_NUMBER = re.compile(r"^\[?(\d{1,4})[.\])]?\s+\S")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_FIRST_REFERENCE = re.compile(r"^\[?1[.\])]?\s+\S")
_HYPHENATED = re.compile(r"[a-z]+(?:-[a-z]+)+")
_WORD = re.compile(r"[a-z]+")
_LINE_END_HYPHEN = re.compile(r"([a-z]+)[-\u00ad]\n([a-z]+)")
_BAD_TITLE = re.compile(
    r"^(?:title|untitled|microsoft word|document\d*|paper)\b|\.(?:docx?|tex|pdf)$"
)


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


@dataclass(slots=True)
class _Column:
    """Lines read in a row: one column of one band of a page."""

    lines: list[_Line]
    left: float = 0.0
    right: float = 0.0
    # The most common font size here, and the usual distance between its lines (double-spaced
    # drafts double it).
    size: float = 0.0
    pitch: float = 0.0


@dataclass(slots=True)
class _Paragraph:
    lines: list[_Line]
    heading: bool = False
    text: str = ""
    # (offset in `text`, page) wherever the paragraph enters a page.
    page_marks: list[tuple[int, int]] = field(default_factory=list)

    @property
    def page(self) -> int:
        return self.lines[0].page

    @property
    def size(self) -> float:
        return self.lines[0].size


@dataclass(slots=True)
class _Style:
    """Document-wide typography that headings and paragraphs are judged against."""

    body_size: float


# ---------------------------------------------------------------------------------------------
# Opening the file


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


# ---------------------------------------------------------------------------------------------
# 1. Lines


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


def _line_from_spans(
    page: int, bbox: tuple[float, float, float, float], spans: list[dict]
) -> _Line | None:
    spans = _without_kerning_spaces(spans)
    text = _clean("".join(span["text"] for span in spans)).strip()
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


def _page_lines(page: pymupdf.Page, number: int) -> list[_Line]:
    lines = []
    for block in page.get_text("dict", flags=_TEXT_FLAGS)["blocks"]:
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


# ---------------------------------------------------------------------------------------------
# 2. Page furniture: running headers and footers, page numbers, line numbers


def _furniture_key(text: str) -> str:
    return re.sub(r"\d+", "#", text.lower())


def _in_band(line: _Line, height: float) -> bool:
    return line.y1 < height * _FURNITURE_BAND or line.y0 > height * (1 - _FURNITURE_BAND)


def _repeated_furniture(pages: list[list[_Line]], rects: list[pymupdf.Rect]) -> set[int]:
    """ids of band lines whose text (digits aside) recurs at the same height on many pages."""
    heights: dict[str, list[tuple[float, int, int]]] = defaultdict(list)
    for lines, rect in zip(pages, rects, strict=True):
        for line in lines:
            if _in_band(line, rect.height):
                heights[_furniture_key(line.text)].append((line.y0, line.page, id(line)))
    threshold = max(_FURNITURE_MIN_PAGES, _FURNITURE_PAGE_SHARE * len(pages))
    repeated: set[int] = set()
    for occurrences in heights.values():
        if len(occurrences) < threshold:
            continue
        for cluster in _clusters_by_height(sorted(occurrences)):
            if len({page for _, page, _ in cluster}) >= threshold:
                repeated.update(line_id for _, _, line_id in cluster)
    return repeated


def _clusters_by_height(
    occurrences: list[tuple[float, int, int]],
) -> Iterator[list[tuple[float, int, int]]]:
    cluster = [occurrences[0]]
    for occurrence in occurrences[1:]:
        if occurrence[0] - cluster[-1][0] > _SAME_HEIGHT:
            yield cluster
            cluster = []
        cluster.append(occurrence)
    yield cluster


def _remove_furniture(pages: list[list[_Line]], rects: list[pymupdf.Rect]) -> None:
    repeated = _repeated_furniture(pages, rects)
    for index, (lines, rect) in enumerate(zip(pages, rects, strict=True)):
        pages[index] = [
            line
            for line in lines
            if id(line) not in repeated
            and not (_in_band(line, rect.height) and _PAGE_NUMBER.fullmatch(line.text))
        ]


def _remove_line_numbers(pages: list[list[_Line]]) -> None:
    """Drops a margin column of line numbers (preprints number every line for reviewers).

    A number is a line number when it lies in the margin beside the text and many numbers in the
    document share its left or right edge.
    """
    numbers = [line for lines in pages for line in lines if _LINE_NUMBER.fullmatch(line.text)]
    edges = Counter(round(line.x0 / 3) for line in numbers)
    edges.update(-round(line.x1 / 3) for line in numbers)
    if not numbers or edges.most_common(1)[0][1] < _LINE_NUMBER_MIN:
        return
    for index, lines in enumerate(pages):
        text_lines = [line for line in lines if not _LINE_NUMBER.fullmatch(line.text)]
        if not text_lines:
            continue
        text_left = min(line.x0 for line in text_lines)
        text_right = max(line.x1 for line in text_lines)
        pages[index] = [
            line
            for line in lines
            if not (
                _LINE_NUMBER.fullmatch(line.text)
                and (
                    line.x1 <= text_left + _MARGIN_TOLERANCE
                    or line.x0 >= text_right - _MARGIN_TOLERANCE
                )
                and max(edges[round(line.x0 / 3)], edges[-round(line.x1 / 3)]) >= _LINE_NUMBER_MIN
            )
        ]


def _remove_figure_text(pages: list[list[_Line]], rects: list[pymupdf.Rect]) -> None:
    """Drops lines set in fonts used only for labels (figure panels, axes), never for prose.

    Figures drawn as vectors keep their labels as text; their font is the giveaway: body text,
    captions, titles and references are set in fonts that also fill long lines, headings in
    fonts of fair-sized lines, while figure labels are short fragments in a font of their own.
    """
    prose: Counter[str] = Counter()
    total: Counter[str] = Counter()
    count: Counter[str] = Counter()
    headings: set[str] = set()
    for lines, rect in zip(pages, rects, strict=True):
        for line in lines:
            total[line.font] += len(line.text)
            count[line.font] += 1
            if _prose_line(line, rect.width):
                prose[line.font] += len(line.text)
            elif _normalized_heading(line.text) in _KNOWN_HEADINGS:
                headings.add(line.font)
    labels = {
        font
        for font, chars in total.items()
        if prose[font] < _PROSE_FONT_SHARE * chars
        and chars < _LABEL_LINE_CHARS * count[font]
        and font not in headings
    }
    if labels:
        for index, lines in enumerate(pages):
            pages[index] = [line for line in lines if line.font not in labels]


def _prose_line(line: _Line, page_width: float) -> bool:
    return (
        line.x1 - line.x0 >= _PROSE_LINE_WIDTH * page_width
        and line.text.count(" ") >= _PROSE_LINE_WORDS - 1
    )


# ---------------------------------------------------------------------------------------------
# 3. Reading order


def _attach_drop_caps(lines: list[_Line]) -> list[_Line]:
    """Glues a large initial letter ("V" + "irtually") to the line it starts."""
    caps = [
        line for line in lines if len(line.text) == 1 and line.text.isalpha() and line.height > 0
    ]
    if not caps:
        return lines
    dropped: set[int] = set()
    for cap in caps:
        beside = [
            line
            for line in lines
            if line is not cap
            and -2 <= line.x0 - cap.x1 < 3 * cap.size
            and cap.y0 - 2 <= line.y0 <= cap.y1
            and cap.size >= _DROP_CAP_RATIO * line.size
        ]
        if beside:
            first = min(beside, key=lambda line: line.y0)
            first.text = cap.text + first.text
            first.x0 = cap.x0
            dropped.add(id(cap))
    return [line for line in lines if id(line) not in dropped]


def _find_gutter(lines: list[_Line]) -> tuple[float, float] | None:
    """The vertical strip that best splits `lines` into two substantial columns, if any.

    A column's left edge is where many lines start; its gutter is the free strip before that
    edge. Lines as wide as most of the text (titles, full-width captions) may cross it: they cut
    the page into bands instead. Few narrower lines may cross it (a stray author-list fragment),
    but for those centred on the page above the first line starting at the edge: the title
    block over the columns (a short title line, the middle one of a row of authors), cut off as
    a band like the wide ones.
    """
    if len(lines) < 2 * _GUTTER_MIN_SIDE_LINES:
        return None
    page_left = min(line.x0 for line in lines)
    extent = max(line.x1 for line in lines) - page_left
    narrow = [line for line in lines if line.x1 - line.x0 <= _SPANNING_WIDTH * extent]
    middle, centred = page_left + extent / 2, 2 * _CENTRED_TOLERANCE * extent
    allowed = max(1, int(_GUTTER_CROSSING_SHARE * len(narrow)))
    starts = Counter(round(line.x0) for line in lines)
    total_chars = sum(len(line.text) for line in lines)
    best, best_chars = None, 0
    for start in sorted(starts):
        aligned = sum(starts.get(start + delta, 0) for delta in range(3))
        if aligned < _EDGE_MIN_LINES or start - page_left < 2 * _GUTTER_MIN_WIDTH:
            continue
        edge = start - 0.5
        columns_top = min(line.y0 for line in lines if 0 <= round(line.x0) - start <= 2)
        crossing = sum(
            line.x0 < edge < line.x1
            and not (line.y1 <= columns_top and abs(line.x0 + line.x1 - 2 * middle) < centred)
            for line in narrow
        )
        if crossing > allowed:
            continue
        left = [line for line in lines if line.x1 <= edge]
        right = [line for line in lines if line.x0 >= edge]
        if min(len(left), len(right)) < _GUTTER_MIN_SIDE_LINES:
            continue
        top, bottom = min(line.y0 for line in right), max(line.y1 for line in right)
        beside = [line.x1 for line in left if line.y1 > top and line.y0 < bottom]
        gutter = (max(beside, default=edge - _GUTTER_MIN_WIDTH), edge)
        chars = min(sum(len(line.text) for line in side) for side in (left, right))
        if (
            gutter[1] - gutter[0] >= _GUTTER_MIN_WIDTH
            and chars >= _GUTTER_MIN_SIDE_SHARE * total_chars
            and chars > best_chars
        ):
            best, best_chars = gutter, chars
    return best


def _reading_order(lines: list[_Line], depth: int = 0) -> list[list[_Line]]:
    """`lines` as runs read top to bottom, in the order a reader takes them."""
    gutter = _find_gutter(lines) if depth < _MAX_COLUMN_DEPTH else None
    ordered = sorted(lines, key=lambda line: (line.y0, line.x0))
    if gutter is None:
        return [ordered] if ordered else []
    runs: list[list[_Line]] = []
    for band, spanning in _bands(ordered, gutter):
        runs.extend(_band_order(band, gutter, depth))
        if spanning:
            runs.append(spanning)
    return runs


def _bands(
    ordered: list[_Line], gutter: tuple[float, float]
) -> Iterator[tuple[list[_Line], list[_Line]]]:
    """Splits lines at those crossing the gutter: (lines of a band, crossing lines after it)."""
    band: list[_Line] = []
    spanning: list[_Line] = []
    for line in ordered:
        if line.x0 < gutter[0] - 1 and line.x1 > gutter[1] + 1:
            spanning.append(line)
            continue
        if spanning:
            yield band, spanning
            band, spanning = [], []
        band.append(line)
    yield band, spanning


def _band_order(band: list[_Line], gutter: tuple[float, float], depth: int) -> list[list[_Line]]:
    """A band is read column by column only when both columns hold text; else top to bottom."""
    middle = (gutter[0] + gutter[1]) / 2
    left = [line for line in band if (line.x0 + line.x1) / 2 < middle]
    right = [line for line in band if (line.x0 + line.x1) / 2 >= middle]
    if min(len(left), len(right)) < _BAND_MIN_SIDE_LINES:
        return [band] if band else []
    return _reading_order(left, depth + 1) + _reading_order(right, depth + 1)


def _merge_fragments(run: list[_Line]) -> list[_Line]:
    """Joins pieces of one visual line (justified words, superscripts, a tab-separated number)."""
    merged: list[_Line] = []
    group: list[_Line] = []
    for line in run:
        if group and _same_row(group[0], line):
            group.append(line)
            continue
        if group:
            merged.append(_joined(group))
        group = [line]
    if group:
        merged.append(_joined(group))
    return merged


def _same_row(first: _Line, other: _Line) -> bool:
    overlap = min(first.y1, other.y1) - max(first.y0, other.y0)
    centers = abs(first.y0 + first.y1 - other.y0 - other.y1) / 2
    return overlap > 0.5 * min(first.height, other.height) and centers < 0.4 * max(
        first.height, other.height
    )


def _joined(group: list[_Line]) -> _Line:
    if len(group) == 1:
        return group[0]
    group.sort(key=lambda line: line.x0)
    main = max(group, key=lambda line: len(line.text))
    return _Line(
        page=main.page,
        x0=min(line.x0 for line in group),
        y0=min(line.y0 for line in group),
        x1=max(line.x1 for line in group),
        y1=max(line.y1 for line in group),
        text=" ".join(line.text for line in group),
        size=main.size,
        bold=main.bold,
        font=main.font,
    )


def _columns(pages: list[list[_Line]]) -> list[_Column]:
    columns = []
    for lines in pages:
        for run in _reading_order(_attach_drop_caps(lines)):
            merged = _merge_fragments(run)
            column = _Column(
                merged,
                left=min(line.x0 for line in merged),
                right=max(line.x1 for line in merged),
            )
            for line in merged:
                line.left = column.left
            columns.append(column)
    return columns


# ---------------------------------------------------------------------------------------------
# 4. Paragraphs and headings


def _document_style(columns: list[_Column], pages: int) -> _Style:
    """The body text size, read from the first pages: methods and references often come smaller."""
    sizes: Counter[float] = Counter()
    leading: Counter[float] = Counter()
    for column in columns:
        column_sizes = Counter({line.size: 0 for line in column.lines})
        for line in column.lines:
            column_sizes[line.size] += len(line.text)
            if line.page < max(1, _BODY_PAGES_SHARE * pages):
                sizes[round(line.size * 2) / 2] += len(line.text)
        column.size = column_sizes.most_common(1)[0][0]
        pitches = _pitches(column)
        if sum(pitches.values()) >= _LOCAL_PITCH_MIN_LINES:
            column.pitch = pitches.most_common(1)[0][0]
        for pitch, count in pitches.items():
            leading[round(pitch / column.size, 1)] += count
    ratio = leading.most_common(1)[0][0] if leading else 1.2
    for column in columns:
        if not column.pitch:
            column.pitch = ratio * column.size
    return _Style(sizes.most_common(1)[0][0] if sizes else 10.0)


def _pitches(column: _Column) -> Counter[float]:
    """Distances between consecutive lines of the column's usual size."""
    pitches: Counter[float] = Counter()
    for above, below in zip(column.lines, column.lines[1:], strict=False):
        if abs(above.size - column.size) < 0.3 and abs(below.size - column.size) < 0.3:
            pitch = below.y0 - above.y0
            if 0 < pitch < 4 * column.size:
                pitches[round(pitch * 2) / 2] += 1
    return pitches


def _drop_footnotes(columns: list[_Column], style: _Style) -> None:
    """Leaves footnotes ("* Work done during an internship at ...") out of the text: a block of
    small lines closing a column under its body text, in the lower half of the page, opened by
    a footnote mark.

    A column of small lines throughout (references, methods set smaller) has no body above such
    a block, and a reference list opens under its heading: both stay; so do affiliations under
    the authors, high on the page.
    """
    small = _FOOTNOTE_SIZE * style.body_size
    tops: dict[int, float] = {}
    bottoms: dict[int, float] = {}
    for column in columns:
        for line in column.lines:
            tops[line.page] = min(tops.get(line.page, line.y0), line.y0)
            bottoms[line.page] = max(bottoms.get(line.page, line.y1), line.y1)
    for column in columns:
        lines = column.lines
        start = len(lines)
        while start > 0 and lines[start - 1].size <= small:
            start -= 1
        if (
            0 < start < len(lines)
            and _FOOTNOTE_MARK.match(lines[start].text)
            and 2 * lines[start].y0 > tops[lines[0].page] + bottoms[lines[0].page]
            and _normalized_heading(lines[start - 1].text) not in _REFERENCE_HEADINGS
        ):
            del lines[start:]


def _normalized_heading(text: str) -> str:
    text = _NUMBERING.sub("", text.strip())
    return re.sub(r"[\s:.]+$", "", text).lower()


def _is_heading(line: _Line, previous: _Line | None, column: _Column, style: _Style) -> bool:
    text = line.text
    if len(text) > _HEADING_MAX_CHARS or not (text[0].isupper() or text[0].isdigit()):
        return False
    known = _normalized_heading(text) in _KNOWN_HEADINGS
    larger = line.size >= style.body_size + _HEADING_SIZE_STEP
    # Smaller bold lines open run-in headings ("Strains. We grew ...") or label figures.
    bold = line.bold and line.size >= style.body_size - _BOLD_HEADING_SMALLER
    capitals = text.isupper() and sum(char.isalpha() for char in text) >= _CAPITALS_MIN_LETTERS
    numbered = bool(_NUMBERING.match(text)) and (line.bold or larger)
    if not (known or larger or bold or capitals or numbered):
        return False
    words = text.split()
    if len(words) > _HEADING_MAX_WORDS or sum(char.isalpha() for char in text) < 3:
        return False
    if _CAPTION.match(text) or text.endswith((",", ";")) or (text.endswith(".") and len(words) > 6):
        return False
    if previous is not None and _continues(previous, line, column, style):
        return False
    if known:
        return line.size >= 0.7 * style.body_size
    short = line.x1 - line.x0 < 0.75 * (column.right - column.left) or len(words) <= 8
    return short and (larger or bold or numbered or (capitals and len(words) <= 6))


def _continues(
    previous: _Line, line: _Line, column: _Column, style: _Style, previous_opens: bool = False
) -> bool:
    """Whether `line` reads on from `previous` in the same paragraph, judged from geometry.

    `previous_opens`: `previous` is its paragraph's first line, so an indent under it is a
    hanging indent (a list or reference entry), not a new paragraph's first-line indent.
    """
    if abs(previous.size - line.size) > _SIZE_STEP or previous.bold != line.bold:
        return False
    gap = line.y0 - previous.y0
    if gap <= 0 or gap > _PARAGRAPH_GAP * column.pitch * max(1.0, line.size / column.size):
        return False
    if _FRONT_LABEL.match(line.text):
        return False  # a label opens its own paragraph even right under the abstract
    width = column.right - column.left
    indent = line.x0 - column.left
    indented = 0.5 * line.size < indent < 4 * line.size and previous.x0 < line.x0 - 2
    if indented and not previous_opens:
        return False
    ended_short = previous.x1 < column.right - _SHORT_LINE * width
    return not (ended_short and previous.text.endswith(_SENTENCE_END))


def _paragraphs(columns: list[_Column], style: _Style) -> list[_Paragraph]:
    paragraphs: list[_Paragraph] = []
    for column in columns:
        current: _Paragraph | None = None
        previous: _Line | None = None
        for line in column.lines:
            joined = _joined_paragraph(paragraphs, current, previous, line, column, style)
            if joined is None:
                current = _Paragraph([line], heading=_is_heading(line, previous, column, style))
                paragraphs.append(current)
            else:
                current = joined
                current.lines.append(line)
            previous = line
    return paragraphs


def _joined_paragraph(
    paragraphs: list[_Paragraph],
    current: _Paragraph | None,
    previous: _Line | None,
    line: _Line,
    column: _Column,
    style: _Style,
) -> _Paragraph | None:
    """The paragraph `line` continues, if any.

    `current` took the column's previous line: usually the last paragraph, but a column's first
    line may resume a paragraph that a footnote or a caption interrupted.
    """
    if current is None or previous is None:
        last = paragraphs[-1] if paragraphs else None
        if last is not None and last.heading:
            return last if _heading_goes_on(last.lines[-1], line, style) else None
        if _is_heading(line, None, column, style):
            return None
        return _interrupted_paragraph(paragraphs, line, column, style)
    if current.heading:
        return current if _heading_goes_on(current.lines[-1], line, style) else None
    if _is_heading(line, previous, column, style):
        return None
    previous_opens = len(current.lines) == 1
    return current if _continues(previous, line, column, style, previous_opens) else None


def _interrupted_paragraph(
    paragraphs: list[_Paragraph], line: _Line, column: _Column, style: _Style
) -> _Paragraph | None:
    """The paragraph a column's first line continues, if any.

    A paragraph broken by a column or page end may have a footnote, a caption or a "(see figure
    on next page)" between its halves; those are set in another size and are stepped over.
    """
    if _FRONT_LABEL.match(line.text) or _ABSTRACT_LABEL.match(line.text):
        return None
    for stepped, paragraph in enumerate(reversed(paragraphs[-1 - _MAX_INTERRUPTIONS :])):
        if paragraph.heading:
            return None
        if abs(paragraph.size - line.size) <= 0.3:
            # Only running text gets interrupted; a short block (an author line) is left alone.
            if stepped and len(paragraph.lines) < _INTERRUPTED_MIN_LINES:
                return None
            return paragraph if _carries_over(paragraph, line, column, style) else None
    return None


def _heading_goes_on(previous: _Line, line: _Line, style: _Style) -> bool:
    """A long heading (a title) wrapped onto a next line keeps its distinctive style."""
    distinctive = line.bold or line.size >= style.body_size + _HEADING_SIZE_STEP
    return (
        distinctive
        and len(previous.text) >= _WRAPPED_HEADING_CHARS
        and previous.page == line.page
        and abs(previous.size - line.size) < 0.3
        and previous.bold == line.bold
        and 0 < line.y0 - previous.y0 < 1.6 * line.size
        and not _NUMBERING.match(line.text)
    )


def _carries_over(paragraph: _Paragraph, line: _Line, column: _Column, style: _Style) -> bool:
    """Whether a column's first line continues the paragraph that ended the previous column."""
    last = paragraph.lines[-1]
    if last.size < _CARRY_MIN_SIZE * style.body_size or abs(line.size - last.size) > 0.3:
        return False
    if last.bold != line.bold or last.text.endswith(_SENTENCE_END):
        return False
    return line.x0 - column.left < 0.5 * line.size or line.text[0].islower()


# ---------------------------------------------------------------------------------------------
# Joining lines into text


@dataclass(slots=True)
class _Vocabulary:
    """Words seen in the document, to tell "regu-lation" from "high-throughput" at a line end."""

    words: Counter[str]
    hyphenated: set[str]

    @classmethod
    def of(cls, columns: list[_Column]) -> _Vocabulary:
        text = "\n".join(line.text for column in columns for line in column.lines).lower()
        words = Counter(_WORD.findall(text))
        # Words hyphenated at a line end count whole too ("sev-" + "eral").
        words.update(head + tail for head, tail in _LINE_END_HYPHEN.findall(text))
        return cls(words, set(_HYPHENATED.findall(text)))

    def keeps_hyphen(self, left: str, right: str) -> bool:
        head = re.search(r"[a-z]+$", left.lower())
        tail = re.match(r"[a-z]+", right.lower())
        if not head or not tail:
            return True
        whole = head.group(0) + tail.group(0)
        return f"{head.group(0)}-{tail.group(0)}" in self.hyphenated and whole not in self.words

    def mend_split_words(self, text: str) -> str:
        """Rejoins words a font's spacing split ("dif ferent", "h ypometh ylation").

        Pieces are joined when the whole word is more common in the document than one of them.
        """
        tokens = text.split(" ")
        mended: list[str] = []
        index = 0
        while index < len(tokens):
            for width in (3, 2):
                joined = self._joined(tokens[index : index + width])
                if joined is not None:
                    mended.append(joined)
                    index += width
                    break
            else:
                mended.append(tokens[index])
                index += 1
        return " ".join(mended)

    def _joined(self, pieces: list[str]) -> str | None:
        if len(pieces) < 2:
            return None
        leading = _LEADING_NON_WORD.match(pieces[0])
        trailing = _TRAILING_NON_LETTERS.search(pieces[-1])
        # Both patterns match every string, if only with the empty string.
        assert leading is not None and trailing is not None
        opening, closing = leading.group(0), trailing.group(0)
        letters = [pieces[0][len(opening) :], *pieces[1:-1], pieces[-1][: -len(closing) or None]]
        if not all(piece.isalpha() for piece in letters):
            return None
        whole = self.words["".join(letters).lower()]
        # A lone lower-case letter is rarely a word of its own ("se v eral"; "C or N" is); other
        # pieces must be rarer than the whole word, so that "in to" stays apart.
        stray_letter = sum(map(len, letters)) >= _MENDED_MIN_LETTERS and any(
            len(piece) == 1 and piece.islower() and piece != "a" for piece in letters
        )
        rarer = whole >= 2 and min(self.words[piece.lower()] for piece in letters) <= whole
        return opening + "".join(letters) + closing if whole and (stray_letter or rarer) else None


def _join_lines(
    lines: Iterable[_Line], vocabulary: _Vocabulary
) -> tuple[str, list[tuple[int, int]]]:
    parts: list[str] = []
    length = 0
    marks: list[tuple[int, int]] = []
    previous = ""
    for line in lines:
        text = line.text
        if parts:
            glue, previous_part = _glue(previous, text, vocabulary)
            parts[-1] = previous_part
            length = length - len(previous) + len(previous_part) + len(glue)
            parts.append(glue)
        if not marks or marks[-1][1] != line.page:
            marks.append((length, line.page))
        parts.append(text)
        length += len(text)
        previous = text
    joined = "".join(parts)
    return _strip_soft_hyphens(joined, marks)


def _glue(previous: str, text: str, vocabulary: _Vocabulary) -> tuple[str, str]:
    """What goes between two lines, and the previous line's text once its break is mended."""
    if previous.endswith(_SOFT_HYPHEN):
        return "", previous[:-1]
    if text.startswith(_SOFT_HYPHEN):
        return "", previous
    if previous.endswith(_HYPHENS) and len(previous) > 1 and previous[-2].isalnum():
        if _URL_TAIL.search(previous):
            return "", previous
        if text[0].islower() and not vocabulary.keeps_hyphen(previous[:-1], text):
            return "", previous[:-1]
        return "", previous
    if previous.endswith(("/", "\u2014", "\u2013")) and not previous.endswith(" /"):
        return "", previous
    if text[0] in "./" and _URL_TAIL.search(previous):
        return "", previous
    return " ", previous


def _strip_soft_hyphens(
    text: str, marks: list[tuple[int, int]]
) -> tuple[str, list[tuple[int, int]]]:
    if _SOFT_HYPHEN not in text:
        return text, marks
    removed_before = [0] * (len(text) + 1)
    count = 0
    for index, char in enumerate(text):
        removed_before[index] = count
        count += char == _SOFT_HYPHEN
    removed_before[len(text)] = count
    return (
        text.replace(_SOFT_HYPHEN, ""),
        [(offset - removed_before[offset], page) for offset, page in marks],
    )


# ---------------------------------------------------------------------------------------------
# 5. The document: title, authors, abstract, references, sections


def _title(paragraphs: list[_Paragraph], metadata_title: str) -> str:
    first_page = paragraphs[0].page if paragraphs else 0
    candidates = [
        paragraph
        for paragraph in paragraphs
        if paragraph.page == first_page and sum(c.isalpha() for c in paragraph.text) >= 8
    ]
    layout = max(candidates, key=lambda paragraph: paragraph.size, default=None)
    layout_title = " ".join(layout.text.split()) if layout else ""
    if _plausible_title(metadata_title):
        squashed = re.sub(r"\W+", "", metadata_title.lower())
        if not layout_title or squashed in re.sub(r"\W+", "", layout_title.lower()):
            return " ".join(metadata_title.split())
    return layout_title or " ".join(metadata_title.split())


def _plausible_title(title: str) -> bool:
    return len(title.split()) >= 3 and not _BAD_TITLE.search(title.strip().lower())


def _title_index(paragraphs: list[_Paragraph], title: str) -> int | None:
    squashed = re.sub(r"\W+", "", title.lower())
    for index, paragraph in enumerate(paragraphs[:40]):
        if squashed and squashed[:40] in re.sub(r"\W+", "", paragraph.text.lower()):
            return index
    return None


def _authors(paragraphs: list[_Paragraph], title_index: int | None, metadata: str) -> list[str]:
    """Author names: from the metadata when it lists several, else from the line under the title."""
    listed = [" ".join(name.split()) for name in metadata.split(";") if name.strip()]
    if len(listed) >= 2:
        return listed
    if title_index is None or title_index + 1 >= len(paragraphs):
        return []
    text = paragraphs[title_index + 1].text
    if _AFFILIATION.search(text) or len(text) > _AUTHORS_MAX_CHARS:
        return []
    names = []
    for piece in re.split(r",|;|\band\b|&", text):
        # affiliation marks: digits and symbols, and a lone letter before the name ("a Jennifer")
        name = re.sub(r"[\d*\u2020\u2021\u00a7#\u00b6]+|^\s*[a-z]\b", " ", piece)
        words = name.split()
        if 2 <= len(words) <= 5 and all(word[0].isupper() for word in words):
            names.append(" ".join(words).strip(" ."))
    return names


def _heading_key(paragraph: _Paragraph) -> str:
    return _normalized_heading(paragraph.text) if paragraph.heading else ""


def _abstract(
    paragraphs: list[_Paragraph], title_index: int | None, style: _Style
) -> tuple[str, int | None, int]:
    """The abstract's text, the index of its first paragraph, and the index just past it."""
    start = (title_index or 0) + 1
    front = range(start, min(len(paragraphs), start + 60))
    for index in front:
        paragraph = paragraphs[index]
        if paragraph.heading and _heading_key(paragraph) in _ABSTRACT_HEADINGS:
            return _abstract_from(paragraphs, index + 1)
        if not paragraph.heading and _ABSTRACT_LABEL.match(paragraph.text):
            labelled = _ABSTRACT_LABEL.sub("", paragraph.text, count=1)
            text, _, end = _abstract_from(paragraphs, index + 1)
            return ("\n\n".join(filter(None, [labelled, text])), index, end)
    for index in front:
        paragraph = paragraphs[index]
        if _abstract_like(paragraph, style):
            return paragraph.text, index, index + 1
    return "", None, start


def _abstract_from(paragraphs: list[_Paragraph], start: int) -> tuple[str, int | None, int]:
    texts: list[str] = []
    end = start
    for index in range(start, len(paragraphs)):
        paragraph = paragraphs[index]
        if paragraph.heading or _FRONT_LABEL.match(paragraph.text):
            break
        if texts and abs(paragraph.size - paragraphs[start].size) > _SIZE_STEP:
            break
        texts.append(paragraph.text)
        end = index + 1
        if sum(len(text) for text in texts) > _ABSTRACT_MAX_CHARS:
            break
    return "\n\n".join(texts), (start if texts else None), end


def _abstract_like(paragraph: _Paragraph, style: _Style) -> bool:
    return (
        not paragraph.heading
        and len(paragraph.text) >= _ABSTRACT_MIN_CHARS
        and paragraph.size >= 0.85 * style.body_size
        and not _AFFILIATION.search(paragraph.text[:150])
        and not _FRONT_LABEL.match(paragraph.text)
        and paragraph.text.count(". ") >= 2
    )


def _reference_paragraphs(paragraphs: list[_Paragraph]) -> tuple[int | None, list[int]]:
    """The reference list: the index of its heading (if any) and of its paragraphs, in order.

    A numbered list interrupted by other text (PNAS sets its notes and methods in one column
    while the list runs on in the other) is followed to the next expected number.
    """
    heading = next(
        (
            index
            for index, paragraph in enumerate(paragraphs)
            if index > len(paragraphs) // 3 and _heading_key(paragraph) in _REFERENCE_HEADINGS
        ),
        None,
    )
    first = heading + 1 if heading is not None else _unheaded_references(paragraphs)
    if first is None or first >= len(paragraphs):
        return heading, []
    numbered = bool(_FIRST_REFERENCE.match(paragraphs[first].text))
    expected = 1
    found: list[int] = []
    running = True
    for index in range(first, len(paragraphs)):
        paragraph = paragraphs[index]
        resumes = numbered and _opens_entry(paragraph, expected)
        if running and _ends_references(paragraph, paragraphs[first]) and not resumes:
            running = False
            if not numbered:
                break
        if running or resumes:
            running = True
            found.append(index)
            if numbered:
                expected = _next_expected(paragraph, expected)
    return heading, found


def _opens_entry(paragraph: _Paragraph, expected: int) -> bool:
    """Whether the paragraph starts with the next entry's number (a few may be missing)."""
    number = _REFERENCE_NUMBER.match(paragraph.text)
    return number is not None and expected <= int(number.group(1)) <= expected + 2


def _next_expected(paragraph: _Paragraph, expected: int) -> int:
    for line in paragraph.lines:
        number = _REFERENCE_NUMBER.match(line.text)
        if number and expected <= int(number.group(1)) <= expected + 2:
            expected = int(number.group(1)) + 1
    return expected


def _unheaded_references(paragraphs: list[_Paragraph]) -> int | None:
    """A numbered list starting at "1." in the second half that reads like citations."""
    for index in range(len(paragraphs) // 2, len(paragraphs)):
        paragraph = paragraphs[index]
        if paragraph.heading or not _FIRST_REFERENCE.match(paragraph.text):
            continue
        following = " ".join(p.text for p in paragraphs[index : index + 6])
        if _YEAR.search(following) and re.search(r"(?:^|\s)\[?2[.\])]?\s+\S", following):
            return index
    return None


def _ends_references(paragraph: _Paragraph, first_entry: _Paragraph) -> bool:
    if paragraph.heading:
        return _heading_key(paragraph) not in _REFERENCE_HEADINGS
    if _CAPTION.match(paragraph.text) and paragraph.lines[0].bold:
        return True
    return abs(paragraph.size - first_entry.size) > 1.5 * _SIZE_STEP


def _reference_entries(paragraphs: list[_Paragraph], vocabulary: _Vocabulary) -> list[str]:
    lines = [line for paragraph in paragraphs if not paragraph.heading for line in paragraph.lines]
    if not lines:
        return []
    if _FIRST_REFERENCE.match(lines[0].text):
        groups = _numbered_entries(lines)
    else:
        groups = _hanging_entries(lines, paragraphs)
    entries = []
    for group in groups:
        text, _ = _join_lines(group, vocabulary)
        if sum(char.isalpha() for char in text) >= 10:
            entries.append(text)
    return entries


def _numbered_entries(lines: list[_Line]) -> list[list[_Line]]:
    groups: list[list[_Line]] = []
    expected = 1
    for line in lines:
        number = _REFERENCE_NUMBER.match(line.text)
        if number and expected <= int(number.group(1)) <= expected + 2:
            groups.append([line])
            expected = int(number.group(1)) + 1
        elif groups:
            groups[-1].append(line)
    return groups


def _hanging_entries(lines: list[_Line], paragraphs: list[_Paragraph]) -> list[list[_Line]]:
    """Author-year entries: each starts at the column's left edge, its other lines indented."""
    indented = sum(line.x0 > line.left + 3 for line in lines)
    if indented < len(lines) // 5:
        return [paragraph.lines for paragraph in paragraphs if not paragraph.heading]
    groups: list[list[_Line]] = []
    for line in lines:
        if line.x0 <= line.left + 3 or not groups:
            groups.append([line])
        else:
            groups[-1].append(line)
    return groups


# ---------------------------------------------------------------------------------------------
# Assembling the document


@dataclass(slots=True)
class _Layout:
    """Where the parts of the document lie, as paragraph indices."""

    title_index: int | None
    abstract: str
    abstract_start: int | None
    abstract_end: int
    reference_heading: int | None
    reference_paragraphs: list[int]


def _section_starts(paragraphs: list[_Paragraph], layout: _Layout, style: _Style) -> dict[int, str]:
    """Paragraph index → heading of the section it opens."""
    starts = {
        index: " ".join(paragraph.text.split())
        for index, paragraph in enumerate(paragraphs)
        if paragraph.heading
    }
    if layout.abstract_start is not None and not _opened_by_abstract_heading(
        paragraphs, layout.abstract_start
    ):
        starts.setdefault(layout.abstract_start, "Abstract")
        introduction = _unheaded_introduction(paragraphs, layout.abstract_end, style)
        if introduction is not None:
            starts.setdefault(introduction, "Introduction")
    if layout.reference_heading is not None and layout.reference_paragraphs:
        after = layout.reference_paragraphs[-1] + 1
        if after < len(paragraphs) and after not in starts:
            starts[after] = "Figure legends" if _CAPTION.match(paragraphs[after].text) else "Notes"
    if 0 not in starts:
        starts[0] = "Front matter"
    return starts


def _opened_by_abstract_heading(paragraphs: list[_Paragraph], start: int) -> bool:
    return start > 0 and _heading_key(paragraphs[start - 1]) in _ABSTRACT_HEADINGS


def _unheaded_introduction(paragraphs: list[_Paragraph], after: int, style: _Style) -> int | None:
    """The first body paragraph after the abstract, when no heading introduces it (PNAS, ASM)."""
    for index in range(after, len(paragraphs)):
        paragraph = paragraphs[index]
        if paragraph.heading:
            key = _heading_key(paragraph)
            if key in _INTRO_HEADINGS or key not in _FRONT_HEADINGS:
                return None
            continue
        if (
            len(paragraph.text) >= _INTRO_MIN_CHARS
            and paragraph.size >= 0.95 * style.body_size
            and not _FRONT_LABEL.match(paragraph.text)
        ):
            return index
    return None


def _assemble(
    paragraphs: list[_Paragraph], layout: _Layout, style: _Style, pages: int
) -> tuple[str, list[Section], list[int]]:
    starts = _section_starts(paragraphs, layout, style)
    references = set(layout.reference_paragraphs)
    if layout.reference_heading is not None:
        references.add(layout.reference_heading)
    pieces: list[str] = []
    offset = 0
    page_starts: list[int | None] = [None] * pages
    section_offsets: list[tuple[str, int]] = []
    pending: str | None = None
    for index, paragraph in enumerate(paragraphs):
        if index in references:
            continue
        heading = starts.get(index) or pending
        if _debris(paragraph):
            pending = heading
            continue
        pending = None
        if pieces:
            pieces.append("\n\n")
            offset += 2
        if heading is not None:
            section_offsets.append((heading, offset))
        for mark, page in paragraph.page_marks:
            if page_starts[page] is None:
                page_starts[page] = offset + mark
        pieces.append(paragraph.text)
        offset += len(paragraph.text)
    text = "".join(pieces)
    filled = _fill_page_starts(page_starts, len(text))
    return text, _sections(section_offsets, filled, len(text)), filled


def _debris(paragraph: _Paragraph) -> bool:
    """Table cells and figure labels: text where hardly a token is a word."""
    if paragraph.heading or _CAPTION.match(paragraph.text):
        return False
    tokens = paragraph.text.split(maxsplit=_DEBRIS_TOKENS)[:_DEBRIS_TOKENS]
    words = sum(bool(_PROSE_WORD.fullmatch(token)) for token in tokens)
    return words < _DEBRIS_WORD_SHARE * len(tokens)


def _fill_page_starts(page_starts: list[int | None], length: int) -> list[int]:
    """Pages with no body text (figures, references) start where the next page's text does."""
    filled = [0] * len(page_starts)
    following = length
    for page in range(len(page_starts) - 1, -1, -1):
        start = page_starts[page]
        following = min(following, start) if start is not None else following
        filled[page] = following
    if filled:
        filled[0] = 0
    return filled


def _sections(offsets: list[tuple[str, int]], page_starts: list[int], length: int) -> list[Section]:
    sections = []
    for position, (heading, start) in enumerate(offsets):
        end = offsets[position + 1][1] if position + 1 < len(offsets) else length
        if end <= start:
            continue
        sections.append(
            Section(
                heading=heading,
                char_start=start,
                char_end=end,
                page_start=_page_at(page_starts, start),
                page_end=_page_at(page_starts, end - 1),
            )
        )
    return sections


def _page_at(page_starts: list[int], offset: int) -> int:
    return max(1, bisect_right(page_starts, offset))


def _layout(paragraphs: list[_Paragraph], title: str, style: _Style) -> _Layout:
    title_index = _title_index(paragraphs, title)
    abstract, abstract_start, abstract_end = _abstract(paragraphs, title_index, style)
    if abstract_start is not None:
        _demote_front_headings(paragraphs[:abstract_start])
    reference_heading, reference_paragraphs = _reference_paragraphs(paragraphs)
    return _Layout(
        title_index=title_index,
        abstract=abstract,
        abstract_start=abstract_start,
        abstract_end=abstract_end,
        reference_heading=reference_heading,
        reference_paragraphs=reference_paragraphs,
    )


def _demote_front_headings(front: list[_Paragraph]) -> None:
    """Before the abstract, large or bold lines are titles, author names and journal banners."""
    for paragraph in front:
        if paragraph.heading and _heading_key(paragraph) not in _KNOWN_HEADINGS:
            paragraph.heading = False


def _text_layer_missing(pages: list[list[_Line]]) -> bool:
    characters = sum(len(line.text) for lines in pages for line in lines)
    return characters < _MIN_TEXT_CHARS * max(1, len(pages))


@dataclass(frozen=True, slots=True)
class PdfLimits:
    """The most bytes and pages a PDF may have (`ingest.max_pdf_bytes`, `ingest.max_pdf_pages`);
    None: no limit."""

    max_bytes: int | None = None
    max_pages: int | None = None


def parse_pdf(path: Path, paper_id: str, limits: PdfLimits | None = None) -> PaperDocument:
    """Parses one PDF; raises `IngestError` with a one-line reason when the file is unusable or
    over the `limits` (its size checked before it is opened, its page count before any page is
    read)."""
    path = Path(path)
    with _open_pdf(path, limits or PdfLimits()) as doc:
        source = _read(doc)
    pages, rects = source.pages, source.rects
    _remove_furniture(pages, rects)
    _remove_line_numbers(pages)
    _remove_figure_text(pages, rects)
    if _text_layer_missing(pages):
        raise IngestError("no text layer (scanned pages? run OCR first)")
    columns = _columns(pages)
    style = _document_style(columns, len(pages))
    _drop_footnotes(columns, style)
    vocabulary = _Vocabulary.of(columns)
    paragraphs = _paragraphs(columns, style)
    for paragraph in paragraphs:
        paragraph.text, paragraph.page_marks = _join_lines(paragraph.lines, vocabulary)
        if (paragraph.heading or paragraph.page < _FRONT_PAGES) and len(paragraph.page_marks) == 1:
            paragraph.text = vocabulary.mend_split_words(paragraph.text)
    title = _title(paragraphs, source.metadata.get("title", ""))
    layout = _layout(paragraphs, title, style)
    text, sections, page_starts = _assemble(paragraphs, layout, style, len(pages))
    references = _reference_entries(
        [paragraphs[index] for index in layout.reference_paragraphs], vocabulary
    )
    return PaperDocument(
        paper_id=paper_id,
        source_path=str(path),
        title=title,
        authors=_authors(paragraphs, layout.title_index, source.metadata.get("author", "")),
        abstract=layout.abstract,
        text=text,
        sections=sections,
        page_starts=page_starts,
        pages=len(pages),
        references=references,
        doi=source.doi,
        arxiv_id=source.arxiv_id,
        metadata=source.metadata,
    )
