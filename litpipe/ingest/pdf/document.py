"""Step 5, the document: where title, abstract and references lie, the text less references and
debris, its sections, and the offset where each page starts."""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from litpipe.ingest.pdf.columns import _Style
from litpipe.ingest.pdf.front_matter import (
    _abstract,
    _demote_front_headings,
    _opened_by_abstract_heading,
    _title_index,
    _unheaded_introduction,
)
from litpipe.ingest.pdf.headings import _CAPTION, _CAPTION_LABEL
from litpipe.ingest.pdf.paragraphs import _Paragraph
from litpipe.ingest.pdf.references import _reference_paragraphs
from litpipe.schemas import PaperCaption, PaperTable, Section

# The heading of what comes before the first section (title, authors, affiliations), when no
# heading opens it: where a raised number is an affiliation's mark, not a citation.
FRONT_MATTER = "Front matter"
_DEBRIS_TOKENS = 40
_DEBRIS_WORD_SHARE = 0.2
_PROSE_WORD = re.compile(r"\(?[A-Za-z][a-z]{2,}[a-z'\u2019-]*[.,;:)]?")


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
        starts[0] = FRONT_MATTER
    return starts


def _assemble(
    paragraphs: list[_Paragraph], layout: _Layout, style: _Style, pages: int
) -> tuple[str, list[Section], list[int], list[PaperCaption]]:
    starts = _section_starts(paragraphs, layout, style)
    references = set(layout.reference_paragraphs)
    if layout.reference_heading is not None:
        references.add(layout.reference_heading)
    pieces: list[str] = []
    offset = 0
    page_starts: list[int | None] = [None] * pages
    section_offsets: list[tuple[str, int]] = []
    caption_spans: list[tuple[re.Match[str], int, int]] = []
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
        label = None if paragraph.heading else _CAPTION_LABEL.match(paragraph.text)
        if label:
            caption_spans.append((label, offset, offset + len(paragraph.text)))
        pieces.append(paragraph.text)
        offset += len(paragraph.text)
    text = "".join(pieces)
    filled = _fill_page_starts(page_starts, len(text))
    captions = [
        PaperCaption(
            kind="table" if "table" in label["kind"].casefold() else "figure",
            label=" ".join(label["label"].split()),
            text=text[start:end],
            page=_page_at(filled, start),
            char_start=start,
            char_end=end,
        )
        for label, start, end in caption_spans
    ]
    return text, _sections(section_offsets, filled, len(text)), filled, captions


def _captioned(tables: list[PaperTable], captions: list[PaperCaption]) -> list[PaperTable]:
    """Each table with its caption paragraph: the table caption of its number on its page,
    else of its number anywhere (a caption set on the page before)."""
    by_number: dict[str, list[PaperCaption]] = {}
    for caption in captions:
        if caption.kind == "table":
            by_number.setdefault(_number(caption.label), []).append(caption)
    captioned = []
    for table in tables:
        candidates = by_number.get(_number(table.label), [])
        same_page = [caption for caption in candidates if caption.page == table.page]
        if same_page or candidates:
            found = (same_page or candidates)[0]
            table = table.model_copy(
                update={"caption": found.text, "caption_start": found.char_start}
            )
        captioned.append(table)
    return captioned


def _number(label: str) -> str:
    return label.split()[-1].rstrip(".").upper()


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
