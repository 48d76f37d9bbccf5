"""Step 2, page furniture: running headers and footers (the same text at the same height on many
pages), page numbers, line-number margins and figure labels go."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import TYPE_CHECKING

from litpipe.ingest.pdf.headings import _KNOWN_HEADINGS, _normalized_heading
from litpipe.ingest.pdf.reading import _Line

if TYPE_CHECKING:
    import pymupdf

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
_LINE_NUMBER_MIN = 10
_MARGIN_TOLERANCE = 2.0

_PROSE_FONT_SHARE = 0.1
_LABEL_LINE_CHARS = 20
_PROSE_LINE_WIDTH = 0.25
_PROSE_LINE_WORDS = 6


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
