"""Reference records written as files a reference manager imports: BibTeX (`.bib`) and RIS.

Here, in `report`, because these are renderings for the reader, as the pages are: what is
written is decided by the workflows and assets above (the "Often cited, not in your library"
list; later, a collection's exports), and `ingest.bibtex` stays the reader of `.bib` files,
whose rules (`latex_to_text`) the escapes below are written to round-trip through.

BibTeX: `@article` for a record with a venue (`journal`), `@misc` without; authors each
braced, so that `De Silva` or an organisation's name stays one family name; LaTeX's special
characters escaped and the ligatures (`--`, two quotes) broken, non-ASCII kept as UTF-8; an
arXiv id as `eprint` with `archivePrefix = {arXiv}`. Keys are generated as a paper's are
(`litpipe.citation_keys`: `lewis2020retrieval`), with `a`, `b`, ... added in order on a
clash.

RIS (RefMan's specification): `TY  - ` first and `ER  - ` last, each tag on its own line ended
by a carriage return and line feed; `JOUR` for a record with a venue (`JO`), `GEN` without.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from litpipe.citation_keys import KeyParts, generated_base, suffixed
from litpipe.schemas import ReferenceRecord

ARXIV_ABS = "https://arxiv.org/abs/"
RIS_LINE_END = "\r\n"
_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_LATEX_SPECIAL = re.compile("|".join(re.escape(char) for char in _LATEX_ESCAPES))
# `--`, ``` `` ``` and `''` are TeX ligatures (a dash, curly quotes): an empty group between
# the two characters keeps them as written.
_LIGATURE = re.compile(r"([-`'])(?=\1)")


def bibtex(records: Sequence[ReferenceRecord]) -> str:
    """The records as a `.bib` text, one entry each, in order, with unique keys."""
    return "".join(
        bibtex_entry(key, record)
        for key, record in zip(citation_keys(records), records, strict=True)
    )


def ris(records: Sequence[ReferenceRecord]) -> str:
    """The records as an RIS text, one reference each, in order."""
    return "".join(
        "".join(f"{tag}  - {value}{RIS_LINE_END}" for tag, value in _ris_tags(record))
        for record in records
    )


def citation_keys(records: Sequence[ReferenceRecord]) -> list[str]:
    """Each record's key, unique among them, generated as a paper's is (`generated_base`):
    `lewis2020retrieval`, then `lewis2020retrievala`, `...b` for the records after it that
    make the same one."""
    keys: list[str] = []
    for record in records:
        parts = KeyParts(authors=record.authors, year=record.year, title=record.title or "")
        keys.append(suffixed(generated_base(parts), keys))
    return keys


def bibtex_entry(key: str, record: ReferenceRecord) -> str:
    fields: list[tuple[str, str]] = []
    if record.authors:
        fields.append(("author", " and ".join(_bibtex_author(name) for name in record.authors)))
    if record.title:
        fields.append(("title", latex_escaped(record.title)))
    if record.year is not None:
        fields.append(("year", str(record.year)))
    if record.venue:
        fields.append(("journal", latex_escaped(record.venue)))
    if record.doi:
        fields.append(("doi", latex_escaped(record.doi)))
    if record.arxiv_id:
        fields.extend([("eprint", latex_escaped(record.arxiv_id)), ("archivePrefix", "arXiv")])
    entry_type = "article" if record.venue else "misc"
    body = "".join(f",\n  {name} = {{{value}}}" for name, value in fields)
    return f"@{entry_type}{{{key}{body}\n}}\n\n"


def _bibtex_author(name: str) -> str:
    """A name braced whole, `Family, Given` as `{Family}, Given`: BibTeX splits the rest."""
    family, comma, given = name.partition(",")
    if comma and family.strip() and given.strip():
        return f"{{{latex_escaped(family.strip())}}}, {latex_escaped(given.strip())}"
    return f"{{{latex_escaped(name)}}}"


def latex_escaped(text: str) -> str:
    """Text as a BibTeX value (or LaTeX prose) that reads back as itself: one line, specials
    escaped, ligatures broken."""
    escaped = _LATEX_SPECIAL.sub(
        lambda found: _LATEX_ESCAPES[found.group()], " ".join(text.split())
    )
    return _LIGATURE.sub(r"\1{}", escaped)


def _ris_tags(record: ReferenceRecord) -> list[tuple[str, str]]:
    tags = [("TY", "JOUR" if record.venue else "GEN")]
    tags += [("AU", author) for author in record.authors]
    if record.title:
        tags.append(("TI", record.title))
    if record.year is not None:
        tags.append(("PY", str(record.year)))
    if record.venue:
        tags.append(("JO", record.venue))
    if record.doi:
        tags.append(("DO", record.doi))
    if record.arxiv_id:
        tags.append(("UR", ARXIV_ABS + record.arxiv_id))
    # A line break inside a value would end its tag's line.
    return [(tag, " ".join(value.split())) for tag, value in tags if " ".join(value.split())] + [
        ("ER", "")
    ]
