"""Footnotes: small lines opened by a mark at a column's foot are left out of the text."""

from __future__ import annotations

import re

from litpipe.ingest.pdf.columns import _Column, _Style
from litpipe.ingest.pdf.headings import _REFERENCE_HEADINGS, _normalized_heading

# Footnotes: set this much smaller than the body at most, opened by a symbol or a number.
_FOOTNOTE_SIZE = 0.85
_FOOTNOTE_MARK = re.compile(r"[*\u2217\u2020\u2021\u00a7\u00b6\u2016#]|\d{1,2} ?[A-Za-z]")


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
