"""A paper's in-text citation markers linked to its reference-list records, each with the
sentence that cites, its page and its section.

Markers read:

- numbered, in a paper whose list is numbered: `[12]`, `[3-5]`, `[1, 4, 7]` (a range
  expanded), and `Lewis et al. [12]` by its number; `(12)`, `(3-5)` where they outnumber the
  bracketed ones (PNAS, NAR, ASM set numbers in parentheses);
- raised, in a paper whose list is numbered and where they outnumber the bracketed and the
  parenthesised ones (Nature's style; elsewhere a raised number is a footnote's mark): the
  PDF reader writes them in superscripts (`formation¹⁰,²⁰`, `models⁷⁻¹³`, `U50¹⁴`), read
  after a word, a closing bracket or punctuation, not after a number (`10⁵`, `2.2x10⁻¹⁶`:
  exponents), a unit or a lone letter (`cm²`, `R²`, `σ²`), before a charge (`Ca²⁺`) or an
  element (`¹⁴C`), nor in the front matter (`Smith¹,²`: affiliations);
- author-year: `(Lewis et al., 2020)`, `(Lewis and Chen 2020; Wu 2019)`, `(Gallone et al.
  2016, 2018)`, `Lewis et al. (2020)`: linked by the first author's family name and the year
  (a second author's name, or a year's letter `2020b`, choosing among entries that share
  them).

A marker that names no entry, or several, is returned unresolved with its text; nothing
here raises.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from litpipe.ingest.pdf import FRONT_MATTER
from litpipe.schemas import (
    CitationContext,
    CitationContexts,
    PaperDocument,
    ReferenceRecord,
    UnresolvedMarker,
)
from litpipe.text import SUPERSCRIPT_DIGITS, SUPERSCRIPT_MINUS, Span, sentences

_DASH = "-\u2010\u2011\u2012\u2013\u2014"
_NUMBERS = (
    rf"\d{{1,4}}(?:\s*[{_DASH}]\s*\d{{1,4}})?(?:\s*[,;]\s*\d{{1,4}}(?:\s*[{_DASH}]\s*\d{{1,4}})?)*"
)
_BRACKETED = re.compile(rf"\[\s*({_NUMBERS})\s*\]")
_PARENTHESISED = re.compile(rf"\(\s*({_NUMBERS})\s*\)")
_RANGE = re.compile(rf"(\d+)\s*[{_DASH}]\s*(\d+)|(\d+)")
# A longer range is more likely a span of pages or years than of references.
_MAX_RANGE = 50

# Raised numbers: `¹⁴`, `¹⁰,²⁰`, `³⁸, ³⁹, ⁴²,⁴³`, `⁷⁻¹³` (a dash the producer did not raise
# between raised numbers too), not a run that goes on into a charge (`²⁺`, `²⁻`), a word or
# an element (`¹⁴C`).
_RAISED_DIGIT = f"[{SUPERSCRIPT_DIGITS}]"
_RAISED_NUMBER = (
    rf"{_RAISED_DIGIT}{{1,4}}(?:\s?[{_DASH}{SUPERSCRIPT_MINUS}]\s?{_RAISED_DIGIT}{{1,4}})?"
)
_RAISED = re.compile(
    rf"(?<![{SUPERSCRIPT_DIGITS}{SUPERSCRIPT_MINUS}])"
    rf"{_RAISED_NUMBER}(?:\s?,\s?{_RAISED_NUMBER})*(?![\w\u207a{SUPERSCRIPT_MINUS}])"
)
_LOWERED = str.maketrans(SUPERSCRIPT_DIGITS + SUPERSCRIPT_MINUS, "0123456789-")
# What a citation is raised after: punctuation, a closing bracket or quote or a per cent sign
# right before it (`(RFA)⁵⁸`), else a word (`fine-tuning³⁸`), one space away at most
# (`setHARD ³⁴`, as some producers set it).
_CLOSING = ".,;:)]%\u201d\u2019"
_WORD_BEFORE = re.compile(r"[^\W_]+(?:[-.][^\W_]+)*$")
# A word that is a number (`10⁵`; `4x10⁵`, whose word is `10`) or a number times ten
# (`2.2X10⁻¹⁶`, `2 x10⁵`) raises an exponent.
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[xX]10)?|[xX]10")
# A word's last part that is a unit raised to a power: `cm²`, `mm³`, `µm²`, `km²`, `ft²`
# (lengths: areas and volumes; a lone letter, a variable or a unit such as `m`, is left out
# by its length). Not `in`: "reviewed in¹²" cites.
_UNITS = frozenset({"mm", "cm", "dm", "km", "nm", "pm", "\u00b5m", "\u03bcm", "ft", "yd", "mi"})
_WORD_PARTS = re.compile(r"[-.]")
# A number written with a leading zero is an allele's or a code's (`spn-A⁰⁵⁷`).
_LEADING_ZERO = re.compile(r"(?<!\d)0")

# A family name of one or two words, each of a bounded length: the search for markers tries
# every word's start, and a long hyphenated word has many.
_NAME = (
    r"(?:(?:van|von|de|der|den|del|della|di|da|du|la|le)\s+)*"
    r"[^\W\d_a-z][\w'\u2019-]{0,40}(?:\s+[^\W\d_a-z][\w'\u2019-]{0,40}[a-z])?"
)
_YEARS = r"(?:18|19|20)\d\d[a-z]?(?:\s*,\s*(?:18|19|20)\d\d[a-z]?)*"
_AUTHORS = rf"(?P<first>{_NAME})(?P<et_al>\s+et\s+al\.?)?(?:\s+(?:and|&)\s+(?P<second>{_NAME}))?"
_PARENTHESIS = re.compile(r"\(([^()]{1,400})\)")
_CITED_PART = re.compile(
    rf"\s*(?:(?:e\.g\.|i\.e\.|see(?:\s+also)?|cf\.|reviewed\s+in)[,\s]+)?{_AUTHORS},?\s+"
    rf"(?P<years>{_YEARS})\b"
)
_NARRATIVE = re.compile(rf"\b{_AUTHORS}\s+\((?P<years>{_YEARS})\)")
_YEAR = re.compile(r"((?:18|19|20)\d\d)([a-z]?)")


@dataclass(frozen=True)
class _AuthorYear:
    """One author-year citation: `Lewis et al. 2020b`."""

    first: str
    # A two-word name may be a word before the name (`In Lewis et al. (2020)`): its last word
    # alone is tried after it.
    first_last_word: str
    second: str | None
    year: int
    letter: str


@dataclass(frozen=True)
class _Marker:
    text: str
    start: int
    cited: list[int | _AuthorYear]


def citation_contexts(
    document: PaperDocument, references: list[ReferenceRecord]
) -> CitationContexts:
    """The markers of the document's body linked to `references` (its list's records, in
    order), in the order they appear."""
    text = document.text
    spans = sentences(text)
    starts = [span.start for span in spans]
    section_starts = [section.char_start for section in document.sections]
    numbers = _entries_by_number(references)
    result = CitationContexts(paper_id=document.paper_id)
    front = document.sections[0] if document.sections else None
    front_end = front.char_end if front is not None and front.heading == FRONT_MATTER else 0
    for marker in sorted(_markers(text, references, front_end), key=lambda found: found.start):
        page = document.page_at(marker.start)
        sentence = _sentence_at(spans, starts, marker.start)
        for cited in marker.cited:
            index, reason = (
                _numbered(cited, numbers)
                if isinstance(cited, int)
                else _author_year(cited, references)
            )
            if index is None:
                result.unresolved.append(
                    UnresolvedMarker(
                        marker=marker.text, reason=reason, char_start=marker.start, page=page
                    )
                )
                continue
            result.contexts.append(
                CitationContext(
                    reference_index=index,
                    reference_number=references[index].number,
                    marker=marker.text,
                    marker_start=marker.start,
                    sentence=sentence.text,
                    char_start=sentence.start,
                    char_end=sentence.end,
                    page=page,
                    section=_section_at(document, section_starts, marker.start),
                )
            )
    return result


def _markers(text: str, references: list[ReferenceRecord], front_end: int) -> Iterator[_Marker]:
    yield from _numeric_markers(text, references, front_end)
    for parenthesis in _PARENTHESIS.finditer(text):
        cited: list[int | _AuthorYear] = []
        for part in parenthesis.group(1).split(";"):
            if match := _CITED_PART.match(part):
                cited.extend(_author_years(match))
        if cited:
            yield _Marker(parenthesis.group(0), parenthesis.start(), cited)
    for narrative in _NARRATIVE.finditer(text):
        yield _Marker(narrative.group(0), narrative.start(), list(_author_years(narrative)))


def _numeric_markers(
    text: str, references: list[ReferenceRecord], front_end: int
) -> Iterator[_Marker]:
    """The paper's numbered markers, where its list is numbered (in an author-year paper
    `F[1,2]` names a protein fragment): bracketed, parenthesised or raised, whichever is the
    most common (a few bracketed numbers inside a parenthesis do not make brackets its style;
    a few raised ones in a paper citing in brackets are footnotes' marks or exponents). A
    parenthesised or raised number past the list's last is a count, a year or an exponent."""
    last = max((reference.number or 0 for reference in references), default=0)
    if not last:
        return
    bracketed = [_numeric(found) for found in _BRACKETED.finditer(text)]
    parenthesised = [
        marker
        for marker in (_numeric(found) for found in _PARENTHESISED.finditer(text))
        if all(isinstance(number, int) and number <= last for number in marker.cited)
    ]
    raised = list(_raised_markers(text, last, front_end))
    # The paper's style is the most common of the three; a tie goes to brackets.
    yield from max(bracketed, parenthesised, raised, key=len)


def _raised_markers(text: str, last: int, front_end: int) -> Iterator[_Marker]:
    """The raised numbers of the text that cite: past the front matter, after what a citation
    follows, each number one of the list's and none written with a leading zero."""
    for found in _RAISED.finditer(text, front_end):
        numbers = found.group(0).translate(_LOWERED)
        if not _cites_after(text, found.start()) or _LEADING_ZERO.search(numbers):
            continue
        marker = _Marker(found.group(0), found.start(), list(_expanded(numbers)))
        if all(isinstance(number, int) and 1 <= number <= last for number in marker.cited):
            yield marker


def _cites_after(text: str, start: int) -> bool:
    """Whether what stands before a raised number at `start` is what a citation is raised
    after, not the base of an exponent."""
    before = text[max(0, start - 40) : start]
    if before.endswith(tuple(_CLOSING)):
        return True
    word = _WORD_BEFORE.search(before.removesuffix(" "))
    if word is None or not any(char.isalpha() for char in word.group(0)):
        return False
    if _NUMBER.fullmatch(word.group(0)):
        return False
    last_part = _WORD_PARTS.split(word.group(0))[-1]
    return not (last_part in _UNITS or (len(last_part) == 1 and last_part.isalpha()))


def _numeric(found: re.Match[str]) -> _Marker:
    return _Marker(found.group(0), found.start(), list(_expanded(found.group(1))))


def _expanded(numbers: str) -> Iterator[int]:
    """`3-5, 8` as 3, 4, 5, 8; a range longer than `_MAX_RANGE` as its two ends."""
    for found in _RANGE.finditer(numbers):
        if found.group(3):
            yield int(found.group(3))
            continue
        low, high = int(found.group(1)), int(found.group(2))
        if low <= high <= low + _MAX_RANGE:
            yield from range(low, high + 1)
        else:
            yield from (low, high)


def _author_years(match: re.Match[str]) -> Iterator[_AuthorYear]:
    for year in _YEAR.finditer(match.group("years")):
        yield _AuthorYear(
            first=_folded(match.group("first")),
            first_last_word=_folded(match.group("first").split()[-1]),
            second=_folded(match.group("second")) if match.group("second") else None,
            year=int(year.group(1)),
            letter=year.group(2),
        )


def _folded(name: str) -> str:
    """A family name as compared: no accents, case, spaces or punctuation."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(char for char in decomposed.casefold() if char.isalpha() and char.isascii())


def _entries_by_number(references: list[ReferenceRecord]) -> dict[int, int]:
    return {ref.number: index for index, ref in enumerate(references) if ref.number is not None}


def _numbered(number: int, numbers: dict[int, int]) -> tuple[int | None, str]:
    if number in numbers:
        return numbers[number], ""
    return None, f"no entry numbered {number}"


def _author_year(cited: _AuthorYear, references: list[ReferenceRecord]) -> tuple[int | None, str]:
    candidates = _by_first_author(cited.first, cited.year, references) or _by_first_author(
        cited.first_last_word, cited.year, references
    )
    if cited.second is not None:
        with_second = [
            index
            for index in candidates
            if len(references[index].authors) > 1
            and _folded(references[index].authors[1]) == cited.second
        ]
        candidates = with_second or candidates
    if cited.letter:
        place = ord(cited.letter) - ord("a")
        if 0 <= place < len(candidates):
            return candidates[place], ""
        return None, f"no entry {place + 1} by {cited.first} in {cited.year}"
    if len(candidates) == 1:
        return candidates[0], ""
    if not candidates:
        return None, f"no entry by {cited.first} in {cited.year}"
    return None, f"{len(candidates)} entries by {cited.first} in {cited.year}"


def _by_first_author(family: str, year: int, references: list[ReferenceRecord]) -> list[int]:
    return [
        index
        for index, reference in enumerate(references)
        if reference.year == year and reference.authors and _folded(reference.authors[0]) == family
    ]


def _sentence_at(spans: list[Span], starts: list[int], offset: int) -> Span:
    place = bisect.bisect_right(starts, offset) - 1
    return spans[place] if place >= 0 else Span("", offset, offset)


def _section_at(document: PaperDocument, starts: list[int], offset: int) -> str:
    place = bisect.bisect_right(starts, offset) - 1
    if place < 0:
        return ""
    section = document.sections[place]
    return section.heading if offset < section.char_end else ""
