"""Citation keys: the names a manuscript cites a paper by (`\\cite{lewis2020retrieval}`,
`[@lewis2020retrieval]`), the researcher's own where their library gives one.

A paper's key comes from its library (a BibTeX entry's key; Better BibTeX's key of a Zotero
item), is set by the user (`litpipe key`), or is generated in the common `authorYEARword` form
(Google Scholar's: the first author's family name, the year, the title's first word that is not
a function word; `lewis2020retrieval`). A generated key is built from the paper's record alone,
so a fresh home makes the same one; a second paper of the same base gets `a`, `b`, ... in the
order the papers were registered (`suffixed`). The catalog keeps the keys (`Catalog.keys`):
unique within the home regardless of case, since BibTeX compares keys so.

Pure Python: the catalog, the exports and the pages share it.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Collection

from pydantic import BaseModel, Field

from litpipe.schemas.papers import family_name

# Who gave a paper its key, strongest first: the user's command over their library, the
# library over the generator. A weaker never replaces a stronger.
BY_USER = "user"
BY_LIBRARY = "library"
GENERATED = "generated"
GIVERS = (BY_USER, BY_LIBRARY, GENERATED)

# The family name a paper with no author is cited by.
ANONYMOUS = "anon"
# Words a title's key word is never: they name no paper ("On the ...", "A survey of ...").
_FUNCTION_WORDS = frozenset(
    # A sentence of words reads better than fifty quoted ones.
    (  # noqa: SIM905
        "a an the of on in for to and or with without from by at as is are be via towards "
        "toward into onto over under between about its their this that these those we our how "
        "what why when where which who do does can"
    ).split()
)
# What BibTeX, biblatex and Pandoc take in a key, between entries: `\\cite{...}` ends at a brace
# or a comma, a `%` starts a comment, `#` and `~` are TeX's, a quote or space ends Pandoc's key.
_FORBIDDEN = re.compile(r"[\s{}(),%#~\\\"'=]")
# Beyond this a key is not a name anyone types.
MAX_KEY_LENGTH = 120


class KeyParts(BaseModel):
    """What a generated key is made of: a paper's record, as its library, table or PDF gives
    it."""

    authors: list[str] = Field(default_factory=list, description="`Family, Given`, in order.")
    year: int | None = None
    title: str = ""


def key_problem(key: str) -> str | None:
    """Why `key` cannot be cited as it is (one line), or None when it can. A key may hold any
    letter (`Müller2024`), digits and the punctuation BibTeX and Pandoc take (`:`, `/`, `.`,
    `-`, `_`, `+`): `10.1000/xyz-1` and `smith:2020:deep` are keys."""
    if not key:
        return "a citation key cannot be empty"
    if len(key) > MAX_KEY_LENGTH:
        return f"a citation key has at most {MAX_KEY_LENGTH} characters"
    found = _FORBIDDEN.search(key)
    if found:
        shown = "a space" if found.group().isspace() else f"'{found.group()}'"
        return f"a citation key cannot hold {shown}: BibTeX, LaTeX or Pandoc would cut it there"
    if any(unicodedata.category(character).startswith("C") for character in key):
        return "a citation key cannot hold a control character"
    return None


def _ascii_letters(text: str) -> str:
    """`text` lower-cased, its accents dropped and anything not a letter or digit removed:
    `Müller-Lüdenscheidt` is `mullerludenscheidt`."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in folded if c in string.ascii_lowercase or c in string.digits)


def generated_base(parts: KeyParts) -> str:
    """The `authorYEARword` key of a record, before any suffix: `lewis2020retrieval`; `anon`
    for a paper with no author, the year left out where none is known, the word where the
    title has none."""
    named = [family_name(author) for author in parts.authors if author.strip()]
    author = next((word for name in named[:1] if (word := _ascii_letters(name))), ANONYMOUS)
    year = str(parts.year) if parts.year is not None else ""
    words = (_ascii_letters(word) for word in re.split(r"[\s\-\u2013\u2014/:]+", parts.title))
    word = next((w for w in words if w and w not in _FUNCTION_WORDS and not w.isdigit()), "")
    return f"{author}{year}{word}"


def suffixed(base: str, taken: Collection[str]) -> str:
    """`base` if no key of `taken` is it (regardless of case), else the first of `basea`,
    `baseb`, ..., `basez`, `baseaa`, ... that is free."""
    used = {key.casefold() for key in taken}
    if base.casefold() not in used:
        return base
    count = 0
    while True:
        count += 1
        candidate = base + _letters(count)
        if candidate.casefold() not in used:
            return candidate


def _letters(number: int) -> str:
    """1 -> a, 26 -> z, 27 -> aa: a spreadsheet's column names."""
    letters = ""
    while number:
        number, remainder = divmod(number - 1, 26)
        letters = string.ascii_lowercase[remainder] + letters
    return letters
