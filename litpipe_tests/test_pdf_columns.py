"""Two-column pages with shared baselines, under a full-width title block, and footnotes.

The PDFs are drawn with PyMuPDF: every body line carries a numbered token of its column
("west07", "east12"), so the order the tokens come out in is the order the lines were read.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pymupdf

from litpipe.ingest.pdf import parse_pdf

_FILLER = ("the", "distilled", "model", "answers", "each", "customer", "question", "in", "a")
_TOKEN = re.compile(r"\b(?:west|east)\d\d\b")


def _body_line(token: str, width: float, size: float) -> str:
    """`token` then filler words filling `width` within a letter or two, as justified lines do."""
    words = [token]
    for word in itertools.cycle(_FILLER):
        for candidate in (word, "a"):
            if pymupdf.get_text_length(" ".join([*words, candidate]), fontsize=size) <= width:
                words.append(candidate)
                break
        else:
            return " ".join(words)
    raise AssertionError("unreachable: the cycle only ends by returning")


def _centred(
    page: pymupdf.Page, text: str, middle: float, y: float, size: float, font: str = "helv"
) -> None:
    width = pymupdf.get_text_length(text, fontname=font, fontsize=size)
    page.insert_text((middle - width / 2, y), text, fontname=font, fontsize=size)


def _title_block(page: pymupdf.Page, left: float, width: float, size: float) -> float:
    """A centred two-line title over two rows of three centred authors; returns the y under it.

    The second title line and the middle author of each row cross the gutter below.
    """
    middle = left + width / 2
    _centred(page, "Distilling Large Language Models for Customer", middle, 70, 1.6 * size, "hebo")
    _centred(page, "Service Assistants", middle, 70 + 2 * size, 1.6 * size, "hebo")
    y = 70 + 4.5 * size
    for row in range(2):
        for place in range(3):
            author = [f"Author {row}{place}", "LinkedIn", "Sunnyvale, USA", "a@example.com"]
            for offset, text in enumerate(author):
                author_middle = left + width * (2 * place + 1) / 6
                _centred(page, text, author_middle, y + offset * 1.2 * size, size)
        y += 5.5 * size
    return y


def _columns(
    page: pymupdf.Page, top: float, left: float, width: float, gutter: float, size: float, rows: int
) -> float:
    """Two columns whose lines share baselines; returns the y under them."""
    column = (width - gutter) / 2
    pitch = 1.2 * size
    for row in range(rows):
        y = top + row * pitch
        for name, x in (("west", left), ("east", left + column + gutter)):
            page.insert_text((x, y), _body_line(f"{name}{row:02d}", column, size), fontsize=size)
    return top + rows * pitch


def _expected_tokens(rows: int) -> list[str]:
    return [f"{name}{row:02d}" for name in ("west", "east") for row in range(rows)]


def _write_acm_page(path: Path, footnote: bool = False) -> None:
    """ACM sigconf: letter page, 0.75in margins, 0.33in gutter, 9pt body, full-width abstract."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    left, width, size = 54.0, 504.0, 9.0
    y = _title_block(page, left, width, size) + size
    page.insert_text((left, y), "ABSTRACT", fontname="hebo", fontsize=10)
    for line in range(5):
        y += 1.2 * size
        page.insert_text((left, y), _body_line(f"summary{line}", width, size), fontsize=size)
    bottom = _columns(page, y + 3 * size, left, width, 0.33 * 72, size, 22)
    if footnote:
        # Under the left column, after a rule: the footnote of the first author's name.
        page.draw_line((left, bottom + 2), (left + 60, bottom + 2))
        page.insert_text(
            (left, bottom + 10), "*Work done during an internship at LinkedIn.", fontsize=7
        )
        page.insert_text((left, bottom + 18), "Corresponding author: a@example.com.", fontsize=7)
        # A single-column page closing on a numbered footnote.
        single = doc.new_page(width=612, height=792)
        for row in range(40):
            text = _body_line(f"south{row:02d}", width, size)
            single.insert_text((left, 72 + row * 1.2 * size), text, fontsize=size)
        single.insert_text(
            (left, 72 + 41 * 1.2 * size),
            "1 The code and the distilled weights are shared on request.",
            fontsize=7,
        )
    doc.save(path)


def _write_ieee_page(path: Path, rows: int = 40) -> None:
    """IEEE conference: letter page, 0.625in side margins, 0.2in gutter, 10pt body; the abstract
    opens the left column, beside the first lines of the right one."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    left, width, size, gutter = 45.0, 522.0, 10.0, 0.2 * 72
    top = _title_block(page, left, width, size) + size
    column, pitch = (width - gutter) / 2, 1.2 * size
    for line in range(3):
        text = _body_line("Abstract. We" if line == 0 else "summary", column, size)
        page.insert_text((left, top + line * pitch), text, fontsize=size)
    for row in range(rows):
        west = _body_line(f"west{row:02d}", column, size)
        page.insert_text((left, top + (row + 3) * pitch), west, fontsize=size)
        east = _body_line(f"east{row:02d}", column, size)
        page.insert_text((left + column + gutter, top + row * pitch), east, fontsize=size)
    doc.save(path)


def test_acm_columns_are_read_one_after_the_other_under_the_title_block(tmp_path: Path) -> None:
    path = tmp_path / "acm.pdf"
    _write_acm_page(path)
    text = parse_pdf(path, "acm").text
    assert _TOKEN.findall(text) == _expected_tokens(22)
    assert text.index("summary4") < text.index("west00")
    assert text.index("Service Assistants") < text.index("summary0")


def test_ieee_columns_with_a_narrow_gutter_are_read_one_after_the_other(tmp_path: Path) -> None:
    path = tmp_path / "ieee.pdf"
    _write_ieee_page(path)
    text = parse_pdf(path, "ieee").text
    assert _TOKEN.findall(text) == _expected_tokens(40)
    assert text.index("Abstract") < text.index("west00")


def test_footnotes_are_left_out_of_the_body_text(tmp_path: Path) -> None:
    path = tmp_path / "footnotes.pdf"
    _write_acm_page(path, footnote=True)
    document = parse_pdf(path, "footnotes")
    text = document.text
    assert "internship" not in text and "Corresponding author" not in text
    assert "distilled weights" not in text
    # Columns' and pages' own last lines stay.
    assert _TOKEN.findall(text) == _expected_tokens(22)
    assert re.findall(r"\bsouth\d\d\b", text) == [f"south{row:02d}" for row in range(40)]
