"""Tables: PyMuPDF's table finder (`Page.find_tables`) run on the pages that set a table's
caption, each table kept only beside a caption and with text in most of its cells, its cells as
Markdown.

In PyMuPDF 2.0 the finder first runs its layout analyzer (`pymupdf_layout`, which pymupdf
requires: an ONNX model) to find table regions, then the page's ruling lines and words their
cells; with the analyzer off (`use_layout=False`) it finds none of the bundled papers' tables,
which are ruled above and below only. Rules, as judged on the bundled papers: the finder costs
1 to 2 s a table page here (two cores), and half a second a page with no table, where the rest
of parsing costs about a hundredth of a second a page (`benchmarks/pdf_tables.py`); and away
from captioned tables it finds two-column lists (a paper's abbreviations) that no reader calls
a table. So it runs only on a page with a caption line (`Table 2: ...`, `TABLE 1`, not `Table 1).
Deleted ...` nor a supplementary `Table S2`, which the PDF does not hold); a table is kept when
such a line lies within `_CAPTION_GAP` above or below it, each caption naming its nearest
table, and when it has two rows and two columns or more, at most half of its cells empty. A
kept table's lines leave the page's lines, so that its cells reach the reader once, as
Markdown; a table not kept stays in the text as it was.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from litpipe.ingest.pdf.reading import _Line, _one_line
from litpipe.schemas import PaperTable

if TYPE_CHECKING:
    import pymupdf

log = logging.getLogger(__name__)

# A line that opens a table's caption: `Table 1: ...`, `Table 2. ...`, `TABLE 3 Primers`.
_TABLE_CAPTION_LINE = re.compile(r"^((?i:table)\s+\d+)(?=\s*[.:|]|\s+[A-Z(]|\s*$)")
# How far (PDF points, half an inch) a caption may lie from the table it names.
_CAPTION_GAP = 36.0
_MAX_EMPTY_SHARE = 0.5
# Past these the Markdown is cut and says so: no reader's question needs the 101st column, and
# a chunk repeats the header row.
MAX_TABLE_COLUMNS = 20
MAX_TABLE_ROWS = 200


def _find_tables(doc: pymupdf.Document, pages: list[list[_Line]]) -> list[PaperTable]:
    """The tables kept on the pages whose lines (`pages`, read from `doc`) set a caption."""
    tables = []
    for number, lines in enumerate(pages):
        captions = []
        for line in lines:
            label = _TABLE_CAPTION_LINE.match(line.text)
            if label:
                captions.append((" ".join(label.group(1).split()), line))
        if captions:
            tables.extend(_page_tables(doc[number], number, captions))
    return tables


def _without_table_lines(pages: list[list[_Line]], tables: list[PaperTable]) -> None:
    """Drops from `pages` the lines whose middle lies inside a kept table."""
    for table in tables:
        x0, y0, x1, y1 = table.bbox
        pages[table.page - 1] = [
            line
            for line in pages[table.page - 1]
            if not (x0 <= (line.x0 + line.x1) / 2 <= x1 and y0 <= (line.y0 + line.y1) / 2 <= y1)
        ]


def _page_tables(
    page: pymupdf.Page, number: int, captions: list[tuple[str, _Line]]
) -> list[PaperTable]:
    """The page's tables beside a caption line (`captions`: each with its label)."""
    try:
        found = page.find_tables().tables
        words = page.get_text("words")
    except Exception as exc:  # the finder's geometry fails in several ways on odd pages
        log.warning("page %d: tables not read (%s); they stay as text", number + 1, _one_line(exc))
        return []
    candidates = [(table, _cells(table, words)) for table in found]
    candidates = [(table, cells) for table, cells in candidates if _readable(cells)]
    named: dict[int, str] = {}
    for label, caption in captions:
        gaps = [(_gap(caption, table.bbox), index) for index, (table, _) in enumerate(candidates)]
        near = [(gap, index) for gap, index in gaps if gap <= _CAPTION_GAP]
        if near:
            named.setdefault(min(near)[1], label)
    kept = []
    for index, label in sorted(named.items()):
        table, cells = candidates[index]
        markdown, capped = _markdown(cells)
        kept.append(
            PaperTable(
                page=number + 1,
                bbox=tuple(round(value, 1) for value in table.bbox),
                label=label,
                markdown=markdown,
                rows=len(cells),
                columns=len(cells[0]),
                capped=capped,
            )
        )
    return kept


def _cells(table: pymupdf.table.Table, words: list[tuple]) -> list[list[str]]:
    """Each cell's words, in reading order: the finder's own cell text drops the spaces of
    PDFs that set words apart by position, where the page's words keep them."""
    boxes = [row.cells for row in table.rows]
    if table.header.external:  # a header row the finder found above the table's lines
        boxes.insert(0, table.header.cells)
    # Each word by its middle; a row's words are picked once, then each cell's among them.
    middles = [((word[0] + word[2]) / 2, (word[1] + word[3]) / 2, word) for word in words]
    rows = []
    for row in boxes:
        tops = [box[1] for box in row if box is not None]
        bottoms = [box[3] for box in row if box is not None]
        in_row = [m for m in middles if tops and min(tops) <= m[1] <= max(bottoms)]
        texts = []
        for box in row:
            if box is None:  # a cell merged into its neighbour
                texts.append("")
                continue
            x0, y0, x1, y1 = box
            inside = [word for x, y, word in in_row if x0 <= x <= x1 and y0 <= y <= y1]
            inside.sort(key=lambda word: (word[5], word[6], word[7]))  # block, line, word
            texts.append(" ".join(str(word[4]) for word in inside))
        rows.append(texts)
    return rows


def _readable(cells: list[list[str]]) -> bool:
    """Two rows and two columns or more, and text in most cells."""
    if len(cells) < 2 or len(cells[0]) < 2:
        return False
    total = sum(len(row) for row in cells)
    empty = sum(not text.strip() for row in cells for text in row)
    return empty <= _MAX_EMPTY_SHARE * total


def _gap(caption: _Line, bbox: tuple[float, float, float, float]) -> float:
    """Vertical distance from the caption line to the table (inf when they do not overlap
    horizontally: a caption of the other column)."""
    x0, y0, x1, y1 = bbox
    if caption.x1 < x0 or caption.x0 > x1:
        return float("inf")
    return max(y0 - caption.y1, caption.y0 - y1, 0.0)


def _markdown(cells: list[list[str]]) -> tuple[str, bool]:
    """The cells as a Markdown table, the first row its header; cut to the caps, with a last
    line that says so."""
    rows, columns = len(cells), len(cells[0])
    shown = [row[:MAX_TABLE_COLUMNS] for row in cells[:MAX_TABLE_ROWS]]
    width = len(shown[0])
    lines = [_row(shown[0]), "|" + " --- |" * width]
    lines.extend(_row(row) for row in shown[1:])
    capped = rows > MAX_TABLE_ROWS or columns > MAX_TABLE_COLUMNS
    if capped:
        lines.append(
            f"(table capped: {len(shown)} of {rows} rows and {width} of {columns} columns shown)"
        )
    return "\n".join(lines), capped


def _row(texts: list[str]) -> str:
    return "| " + " | ".join(" ".join(text.split()).replace("|", "\\|") for text in texts) + " |"
