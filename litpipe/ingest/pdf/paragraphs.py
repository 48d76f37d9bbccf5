"""Step 4, paragraphs and headings: from line spacing, indents, short last lines and font
changes; a paragraph broken by a column end resumes after any caption in between."""

from __future__ import annotations

from dataclasses import dataclass, field

from litpipe.ingest.pdf.columns import _Column, _Style
from litpipe.ingest.pdf.headings import (
    _ABSTRACT_LABEL,
    _CAPTION,
    _FRONT_LABEL,
    _KNOWN_HEADINGS,
    _NUMBERING,
    _normalized_heading,
)
from litpipe.ingest.pdf.reading import _Line

_PARAGRAPH_GAP = 1.45
_SHORT_LINE = 0.25
_SIZE_STEP = 0.9
_HEADING_SIZE_STEP = 0.7
_BOLD_HEADING_SMALLER = 1.0
# All-capital headings ("RESULTS") are longer than gene and protein names ("CFTR").
_CAPITALS_MIN_LETTERS = 5
_WRAPPED_HEADING_CHARS = 25
_CARRY_MIN_SIZE = 0.8
_MAX_INTERRUPTIONS = 2
_INTERRUPTED_MIN_LINES = 2
_HEADING_MAX_CHARS = 120
_HEADING_MAX_WORDS = 16
_SENTENCE_END = (".", "!", "?", ":")


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


def _heading_key(paragraph: _Paragraph) -> str:
    return _normalized_heading(paragraph.text) if paragraph.heading else ""
