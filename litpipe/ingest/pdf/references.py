"""The reference list: its paragraphs (kept out of the text) and its entries, numbered or
author-year."""

from __future__ import annotations

import re

from litpipe.ingest.pdf.headings import _CAPTION, _REFERENCE_HEADINGS
from litpipe.ingest.pdf.joining import _join_lines, _Vocabulary
from litpipe.ingest.pdf.paragraphs import _SIZE_STEP, _heading_key, _Paragraph
from litpipe.ingest.pdf.reading import _Line

_REFERENCE_NUMBER = re.compile(r"^\[?(\d{1,4})[.\])]?\s+\S")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_FIRST_REFERENCE = re.compile(r"^\[?1[.\])]?\s+\S")


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
