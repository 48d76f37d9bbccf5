"""Step 3, reading order: each page's lines as columns read in a row (a gutter splits a page into
columns, lines crossing it cut it into bands), and the document's typography (body size, line
pitch) that paragraphs and headings are judged against."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from litpipe.ingest.pdf.reading import _Line

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

_LOCAL_PITCH_MIN_LINES = 4
_BODY_PAGES_SHARE = 0.6


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
class _Style:
    """Document-wide typography that headings and paragraphs are judged against."""

    body_size: float


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
