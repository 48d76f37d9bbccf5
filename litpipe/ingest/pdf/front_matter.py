"""The front matter: title, authors, abstract, and where an unheaded introduction starts."""

from __future__ import annotations

import re

from litpipe.ingest.pdf.columns import _Style
from litpipe.ingest.pdf.headings import _ABSTRACT_LABEL, _FRONT_LABEL, _KNOWN_HEADINGS
from litpipe.ingest.pdf.paragraphs import _SIZE_STEP, _heading_key, _Paragraph
from litpipe.text import SUPERSCRIPT_DIGITS

_ABSTRACT_HEADINGS = {"abstract", "summary"}
_INTRO_HEADINGS = {"introduction", "background"}
_FRONT_HEADINGS = {
    "significance", "importance", "author summary", "graphical abstract", "highlights",
    "keywords", "key words", "abbreviations",
}  # fmt: skip
_ABSTRACT_MIN_CHARS = 400
_ABSTRACT_MAX_CHARS = 5000
_INTRO_MIN_CHARS = 200
_AUTHORS_MAX_CHARS = 1500
_AFFILIATION = re.compile(r"\b(?:universit|department|institut|laborator|school of|@)", re.I)
_AFFILIATION_MARKS = re.compile(rf"[\d{SUPERSCRIPT_DIGITS}*\u2020\u2021\u00a7#\u00b6]+|^\s*[a-z]\b")
_BAD_TITLE = re.compile(
    r"^(?:title|untitled|microsoft word|document\d*|paper)\b|\.(?:docx?|tex|pdf)$"
)


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
        # affiliation marks: digits (raised ones as the reader writes them: `Smith¹,²`) and
        # symbols, and a lone letter before the name ("a Jennifer")
        name = _AFFILIATION_MARKS.sub(" ", piece)
        words = name.split()
        if 2 <= len(words) <= 5 and all(word[0].isupper() for word in words):
            names.append(" ".join(words).strip(" ."))
    return names


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


def _demote_front_headings(front: list[_Paragraph]) -> None:
    """Before the abstract, large or bold lines are titles, author names and journal banners."""
    for paragraph in front:
        if paragraph.heading and _heading_key(paragraph) not in _KNOWN_HEADINGS:
            paragraph.heading = False
