"""Reference-list entries (as `litpipe.ingest.pdf` splits them) read into `ReferenceRecord`s.

An entry is read left to right, the way every common style sets it: an optional number, the
author block, an optional year right after it (author-year styles), the title (quoted, where
the style quotes it), then the venue up to its volume or pages; the year is otherwise the
first one after the title. DOIs and arXiv ids are found by pattern anywhere in the entry.

The author block is read name by name. Its first name fixes the style of the rest, so that
a title's first words are not taken for one more author:

- initials first: `R. T. Abraham`, `S.-H. Park`, `J. Wade Harper` (PNAS, IEEE; Genetics
  after its first name);
- family, initials with full stops: `Vaswani, A.`, `Supek,F.`, `Pope,B.D.` (Nature, NAR, APA);
- family, initials with full stops, no comma: `Amberg D.`, `Bendel A. M.` (Genetics);
- family, bare initials: `Ceccaldi R`, `D'Andrea AD` (Vancouver: PLOS, BMC, ASM, G3);
- full names: `Patrick Lewis`, `Wen-tau Yih` (ACL, NeurIPS, natbib).

A first sentence of a few words that reads as none of these (`OpenAI.`, `R Core Team.`) is an
organisation's name. Nothing here raises: a field that cannot be read is None.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date

from litpipe.schemas import ReferenceRecord

_UPPER = "A-Z" + "".join(
    char for char in map(chr, range(0xC0, 0x250)) if char.isupper() and char.isalpha()
)
_LETTER = r"[^\W\d_]"
_APOSTROPHES = "'\u2019"
# A family name's word: a capital, then letters, joined by hyphens or apostrophes
# (`Schuster-Böckler`, `D'Andrea`, `O\u2019Rahilly`), holding a lower-case letter so that bare
# initials (`BF`) are not one.
_FAMILY_WORD = (
    rf"[{_UPPER}](?=[\w{_APOSTROPHES}-]*[a-zß-ÿ]){_LETTER}*(?:[{_APOSTROPHES}-]{_LETTER}+)*"
)
_PARTICLES = r"(?:(?:van|von|der|den|de|del|della|di|da|du|dos|das|la|le|ter|ten|el|al)\s+)*"
_FAMILY = rf"{_PARTICLES}{_FAMILY_WORD}"
# Initials with full stops; a space inside them only before another initial, so that the
# space before `and` or a family name is not taken.
_INITIAL = rf"[{_UPPER}][a-z]?\."
_INITIALS = rf"{_INITIAL}(?:(?:\s?-\s?|\s?){_INITIAL})*"
_BARE_INITIALS = rf"[{_UPPER}]{{1,4}}(?:-[{_UPPER}]{{1,2}})?(?!{_LETTER})"
_GIVEN = rf"[{_UPPER}][a-z]+(?:-[a-z]+)?"

# Each form: a regex whose group `family` is the family name.
_INITIALS_FIRST = re.compile(rf"{_INITIALS}\s*(?:{_GIVEN}\s+)?(?P<family>{_FAMILY})")
_FAMILY_COMMA_INITIALS = re.compile(rf"(?P<family>{_FAMILY}(?:\s+{_FAMILY_WORD})?),\s?{_INITIALS}")
_FAMILY_INITIALS = re.compile(rf"(?P<family>{_FAMILY}(?:\s+{_FAMILY_WORD})?)\s+{_INITIALS}")
_VANCOUVER = re.compile(rf"(?P<family>{_FAMILY}(?:\s+{_FAMILY_WORD})?)\s+{_BARE_INITIALS}")
_FULL_NAME = re.compile(rf"{_GIVEN}(?:\s+(?:{_GIVEN}|{_INITIALS}))*?\s+(?P<family>{_FAMILY})")
# The forms in the order the first name is tried, each with the forms its followers may take.
_STYLES: tuple[tuple[re.Pattern[str], tuple[re.Pattern[str], ...]], ...] = (
    (_INITIALS_FIRST, (_INITIALS_FIRST,)),
    (_FAMILY_COMMA_INITIALS, (_FAMILY_COMMA_INITIALS,)),
    (_FAMILY_INITIALS, (_INITIALS_FIRST, _FAMILY_INITIALS)),
    (_VANCOUVER, (_VANCOUVER,)),
    (_FULL_NAME, (_FULL_NAME,)),
)
_SUFFIX = re.compile(r",?\s+(?:Jr|Sr|II|III|IV)\b\.?")
_NAME_SEPARATOR = re.compile(r"\s*(?:,\s*(?:and|&)\s+|,\s*|;\s*|\s+and\s+|\s*&\s*)")
_ET_AL = re.compile(r",?\s*(?:et\s+al\.?|and\s+others\b)")
# What may follow an author block: punctuation (the last initial's full stop too), a year, or
# the end.
_BLOCK_END = re.compile(r"(?<=\.)|\s*(?:[.,:;(]|$|(?:18|19|20)\d\d\b)")
_ORGANISATION = re.compile(
    rf"(?P<name>[{_UPPER}][^.,\d]{{0,40}}?)(?:\.\s+(?=\S)|,?\s+(?=(?:18|19|20)\d\d\b))"
)
_ORGANISATION_WORDS = 4

# `[12]`, `12.`, `12)`, or a bare `12 ` before a capital (a list whose full stops were lost).
_NUMBER = re.compile(rf"^\s*(?:\[(\d{{1,4}})\]|(\d{{1,4}})[.)]|(\d{{1,3}})(?=\s+[{_UPPER}]))\s*")
_YEAR = r"(?:18|19|20)\d\d"
_YEAR_AFTER_AUTHORS = re.compile(rf"^[\s,.]*\(?({_YEAR})[a-z]?\)?(?=[\s.,:;]|$)[.,:;]?\s*")
_ANY_YEAR = re.compile(rf"(?<![\d./-])({_YEAR})(?![\d/])")
# A line break inside a DOI leaves a space after its `.`, `/`, `_` or `-`; a sentence after
# it opens with a capital.
_DOI = re.compile(r"10\.\s?\d{4,9}/\S+(?:(?<=[./_-])\s(?=[0-9a-z])\S+)*")
_DOI_TRAILING = ".,;:'\"\u201d\u2019>"
_URL = re.compile(r"(?:https?://|www\.)\S+|\bdoi:\s*", re.I)
_ARXIV_NEW = re.compile(r"(?:arXiv:\s*)?(?<![\d.])(\d{4}\.\d{4,5}(?:v\d+)?)(?![\d])", re.I)
# `hep-th/9711200`: distinctive enough to need no mention of arXiv. The archive's name is
# bounded, which keeps a search through a long hyphenated word linear.
_ARXIV_OLD = re.compile(
    r"(?:arXiv:\s*)?(?<![\w-])([a-z]{1,12}(?:-[a-z]{1,12})?(?:\.[A-Z]{2})?/\d{7})\b", re.I
)
_MENTIONS_ARXIV = re.compile(r"arxiv", re.I)
_PREPRINT_VERSION = re.compile(r"^(10\.1101/.*\d)v\d+$")
_PREPRINT_DOI_DATE = re.compile(r"10\.1101/((?:19|20)\d\d)\.\d\d\.\d\d\.")
_ARXIV_MONTH = re.compile(r"(\d\d)(?:0[1-9]|1[0-2])\.")
_QUOTED_TITLE = re.compile(r"\s*[“\"]([^”\"]{3,}?)[,.]?[”\"]")
# A title ends at a full stop (or ? or !) before a space, unless the word before it is an
# abbreviation (`vs.`), or a lone capital before a lower-case word: a genus' initial
# (`E. coli`), where `microcin L. Antimicrob Agents` ends the title.
_SENTENCE_END = re.compile(r"[.?!](?=\s|$)")
_ABBREVIATION = re.compile(r"(?:^|[\s(])(?:vs|al|e\.g|i\.e|ca|St|Dr|sp|spp|var|ord|nov)$")
_GENUS_INITIAL = re.compile(rf"(?:^|[\s(])[{_UPPER}]$")
_LOWER_WORD_NEXT = re.compile(r"\s+[a-z]")
_LOOK_BACK = 8
_IN = re.compile(r"^In:?\s+", re.I)
# Nature's `Preprint at <url>`, the url gone.
_AT_URL = re.compile(r"\s+at$")
# A venue stops at its volume, issue, pages or year: a number standing alone, a bracket, `;`.
_VENUE_END = re.compile(r"[\s,.;:]+\d+(?![a-z])|\s*[(\[;]|,\s*(?:pages|pp?\.|vol\.|volume)", re.I)
_MAX_VENUE = 200


def parse_references(entries: Iterable[str]) -> list[ReferenceRecord]:
    """One record per entry, in order."""
    return [parse_reference(entry) for entry in entries]


def parse_reference(raw: str) -> ReferenceRecord:
    """The entry's record; a field that cannot be read is None (authors empty)."""
    text = " ".join(raw.split())
    number, text = _number(text)
    doi = _doi(text)
    without_doi = _DOI.sub(" ", text)
    arxiv_id = _arxiv_id(without_doi, doi)
    fields = _URL.sub(" ", without_doi)
    # The ids go before the fields are read: `2007.01282` holds a year.
    fields = _ARXIV_OLD.sub(" ", fields)
    if _MENTIONS_ARXIV.search(fields):
        fields = _ARXIV_NEW.sub(" ", fields)
    fields = " ".join(fields.split())
    authors, rest = _authors(fields)
    year: int | None = None
    if authors and (after := _YEAR_AFTER_AUTHORS.match(rest)):
        year = int(after.group(1))
        rest = rest[after.end() :]
    rest = rest.lstrip(" .,;:")
    title, after_title = _title(rest)
    if year is None:
        year = _first_year(after_title) or _first_year(fields) or year_of_ids(doi, arxiv_id)
    return ReferenceRecord(
        raw=raw,
        number=number,
        authors=authors,
        title=title,
        year=year,
        venue=_venue(after_title),
        doi=doi,
        arxiv_id=arxiv_id,
    )


def _number(text: str) -> tuple[int | None, str]:
    found = _NUMBER.match(text)
    if found is None:
        return None, text
    return int(found.group(1) or found.group(2) or found.group(3)), text[found.end() :]


def _doi(text: str) -> str | None:
    """The entry's DOI: a line break inside it (`10. 1016/...`) closed up, trailing
    punctuation and an unbalanced closing bracket dropped."""
    found = _DOI.search(text)
    if found is None:
        return None
    doi = found.group(0).replace(" ", "").rstrip(_DOI_TRAILING)
    # A bioRxiv address names a version (`...523679v3`) the DOI does not have.
    doi = _PREPRINT_VERSION.sub(r"\1", doi)
    for opening, closing in ("()", "[]", "{}"):
        while doi.endswith(closing) and doi.count(closing) > doi.count(opening):
            doi = doi[:-1].rstrip(_DOI_TRAILING)
    return doi or None


def _first_year(text: str) -> int | None:
    """The first number of `text` that can be a year of publication: not after next year
    (`Cells 12, 2078 (2023)`: 2078 is an article number)."""
    latest = date.today().year + 1
    return next(
        (year for found in _ANY_YEAR.finditer(text) if (year := int(found.group(1))) <= latest),
        None,
    )


def year_of_ids(doi: str | None, arxiv_id: str | None) -> int | None:
    """The year a bioRxiv or medRxiv DOI (`10.1101/2020.06.26.166157`) or a new-style arXiv
    id (`2303.08774`: 2023) is dated by, for an entry that gives its year nowhere else."""
    if doi and (dated := _PREPRINT_DOI_DATE.match(doi)):
        return int(dated.group(1))
    if arxiv_id and (month := _ARXIV_MONTH.match(arxiv_id)):
        return 2000 + int(month.group(1))
    return None


def _arxiv_id(text: str, doi: str | None) -> str | None:
    """An arXiv id: its DOI's (`10.48550/arXiv.2303.08774`), an old-style one, or a new-style
    one where the entry names arXiv (a bare `2303.08774` could be pages)."""
    if doi and "arxiv." in doi.lower():
        return doi.lower().partition("arxiv.")[2] or None
    if old := _ARXIV_OLD.search(text):
        return old.group(1)
    new = _ARXIV_NEW.search(text) if _MENTIONS_ARXIV.search(text) else None
    return new.group(1) if new else None


def _authors(text: str) -> tuple[list[str], str]:
    """The family names of the author block at the start of `text`, and the text after it."""
    for first, followers in _STYLES:
        found = first.match(text)
        if found is None:
            continue
        families = [_family(found)]
        position = _after_suffix(text, found.end())
        while True:
            separator = _NAME_SEPARATOR.match(text, position)
            following = separator and next(
                (name for form in followers if (name := form.match(text, separator.end()))),
                None,
            )
            if separator is None or following is None:
                break
            families.append(_family(following))
            position = _after_suffix(text, following.end())
        if et_al := _ET_AL.match(text, position):
            return families, text[et_al.end() :]
        if _BLOCK_END.match(text, position):
            return families, text[position:]
    organisation = _ORGANISATION.match(text)
    if organisation and len(organisation.group("name").split()) <= _ORGANISATION_WORDS:
        return [organisation.group("name").strip()], text[organisation.end() :]
    return [], text


def _after_suffix(text: str, position: int) -> int:
    """Past a name's `Jr.` or `III`, if it has one."""
    suffix = _SUFFIX.match(text, position)
    return suffix.end() if suffix else position


def _family(found: re.Match[str]) -> str:
    return " ".join(found.group("family").split())


def _title(rest: str) -> tuple[str | None, str]:
    """The title and the text after it: a quoted title opening `rest` (IEEE's), else its
    first sentence."""
    quoted = _QUOTED_TITLE.match(rest)
    if quoted:
        title = quoted.group(1).strip(" ,.")
        after = rest[quoted.end() :]
    else:
        end = next(
            (stop.end() for stop in _SENTENCE_END.finditer(rest) if not _continues(rest, stop)),
            len(rest),
        )
        title = rest[:end].strip(" .,;:")
        after = rest[end:]
    if sum(char.isalpha() for char in title) < 3:
        return None, after
    return title, after


def _continues(text: str, stop: re.Match[str]) -> bool:
    """Whether the full stop at `stop` is inside the title rather than its end."""
    # The few characters before it hold any abbreviation, and keep long entries linear.
    before = text[max(0, stop.start() - _LOOK_BACK) : stop.start()]
    if _ABBREVIATION.search(before):
        return True
    return bool(_GENUS_INITIAL.search(before) and _LOWER_WORD_NEXT.match(text, stop.end()))


def _venue(after_title: str) -> str | None:
    text = _IN.sub("", after_title.strip(" .,;:"))
    end = _VENUE_END.search(text)
    venue = _AT_URL.sub("", (text[: end.start()] if end else text).strip(" .,;:"))
    if not venue or len(venue) > _MAX_VENUE or not any(char.isalpha() for char in venue):
        return None
    return venue
