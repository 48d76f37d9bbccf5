"""BibTeX's grammar, written for this: a `.bib` text's entries, and where and why the others do
not parse.

`@type{key, name = value, ...}` (or with parentheses), values in braces (nested), in quotes,
numbers or `@string` macros (the months predefined), joined by `#`; `@comment` and `@preamble`
skipped, and so is everything between entries (a line that opens with `%` included). An entry
that does not parse fails alone with its line number: an entry is read no further than the next
line that opens another, so a brace left open damages only its own entry. The values stay LaTeX
(`litpipe.ingest.bibtex.latex` makes them text).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from litpipe.ingest.bibtex.files import FILE_FIELDS
from litpipe.ingest.bibtex.latex import _SPACE

MONTHS = {
    name: str(number)
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
_SKIPPED_TYPES = ("comment", "preamble")
# A line that opens an entry: no entry is read past the next one.
_ENTRY_LINE = re.compile(r"^[ \t]*@[ \t]*[A-Za-z]+[ \t]*[{(]", re.M)
_NAME_CHARS = re.compile(r"[^\s\"#%'(),={}]+")
_TYPE = re.compile(r"[A-Za-z]+")


@dataclass
class BibEntry:
    """One entry as parsed: its fields' values with macros expanded and pieces joined, still
    LaTeX (braces kept)."""

    type: str
    key: str
    fields: dict[str, str]
    line: int


@dataclass
class BibDamage:
    """An entry that does not parse: where, and why (one line)."""

    line: int
    reason: str


class _Damage(Exception):
    def __init__(self, position: int, reason: str) -> None:
        super().__init__(reason)
        self.position = position
        self.reason = reason


def parse_bibtex(text: str) -> tuple[list[BibEntry], list[BibDamage]]:
    """The entries of a BibTeX text that parse, and where and why the others do not."""
    return _Parser(text).parse()


# What an entry does not take from the entry its `crossref` names (a DBLP export's
# proceedings): that entry's own title (its `booktitle` instead), abstract, files and ids.
_NOT_INHERITED = {"title", "abstract", "doi", "url", "crossref", *FILE_FIELDS}


# What the user's entry keeps when written again for a manuscript's `.bib` (`written_entry`): not
# the fields of their own machine (files, BibDesk's file links) nor a `crossref` whose fields it
# now holds.
_NOT_WRITTEN = {"crossref", *FILE_FIELDS}


def written_entry(entry: BibEntry) -> str:
    """The entry as BibTeX again: its type, key and fields (LaTeX as the user wrote it, macros
    expanded, a crossref's fields inherited), less `_NOT_WRITTEN`."""
    body = "".join(
        f",\n  {name} = {{{value}}}"
        for name, value in entry.fields.items()
        if name not in _NOT_WRITTEN and not name.startswith("bdsk-file-")
    )
    return f"@{entry.type}{{{entry.key}{body}\n}}\n"


def with_crossrefs(entries: list[BibEntry]) -> list[BibEntry]:
    """The entries with the fields they lack taken from the entry their `crossref` names, its
    title as their `booktitle`, as BibTeX does."""
    by_key = {entry.key.lower(): entry for entry in entries}
    completed = []
    for entry in entries:
        parent = by_key.get(entry.fields.get("crossref", "").strip().lower())
        if parent is None or parent is entry:
            completed.append(entry)
            continue
        inherited = {
            name: value
            for name, value in parent.fields.items()
            if name not in _NOT_INHERITED and not name.startswith("bdsk-file-")
        }
        if "title" in parent.fields:
            inherited.setdefault("booktitle", parent.fields["title"])
        # The entry's own fields first, as the user wrote them; what it inherits after.
        own_first = entry.fields | {n: v for n, v in inherited.items() if n not in entry.fields}
        completed.append(BibEntry(entry.type, entry.key, own_first, entry.line))
    return completed


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0, *(m.end() for m in re.finditer(r"\n", text))]
        self.openings = [m.start() for m in _ENTRY_LINE.finditer(text)]
        self.macros: dict[str, str] = dict(MONTHS)
        self.pos = 0
        self.limit = len(text)

    def line_of(self, position: int) -> int:
        return bisect_right(self.line_starts, position)

    def parse(self) -> tuple[list[BibEntry], list[BibDamage]]:
        entries: list[BibEntry] = []
        damaged: list[BibDamage] = []
        position = 0
        while (at := self._next_entry(position)) is not None:
            following = [start for start in self.openings if start > at]
            self.limit = following[0] if following else len(self.text)
            self.pos = at + 1
            try:
                entry = self._entry(at)
            except _Damage as damage:
                damaged.append(BibDamage(self.line_of(damage.position), damage.reason))
                position = self.limit
                continue
            if entry is not None:
                entries.append(entry)
            position = self.pos
        return entries, damaged

    def _next_entry(self, position: int) -> int | None:
        """The next `@` outside a comment line (one opening with `%`)."""
        while (at := self.text.find("@", position)) >= 0:
            line_start = self.text.rfind("\n", 0, at) + 1
            if self.text[line_start:at].lstrip().startswith("%"):
                end = self.text.find("\n", at)
                position = len(self.text) if end < 0 else end + 1
                continue
            return at
        return None

    # The entry

    def _entry(self, at: int) -> BibEntry | None:
        self._skip_space()
        found = _TYPE.match(self.text, self.pos, self.limit)
        if found is None:
            return None  # an `@` in text between entries: a comment
        kind = found.group().lower()
        self.pos = found.end()
        self._skip_space()
        opener = self._peek()
        if opener not in ("{", "("):
            return None
        close = "}" if opener == "{" else ")"
        self.pos += 1
        if kind in _SKIPPED_TYPES:
            self._skip_group(at, close)
            return None
        if kind == "string":
            self._skip_space()
            name, value = self._field(at)
            self.macros[name] = value
            self._skip_space()
            self._expect(close, "to close the @string")
            return None
        self._skip_space()
        key = self._cite_key(close)
        fields: dict[str, str] = {}
        # The last field read: where it starts, its name and value.
        last: tuple[int, str, str] | None = None
        self._skip_space()
        while True:
            if self._peek() == close:
                self.pos += 1
                break
            if self.pos >= self.limit:
                raise self._unclosed(at, key, last)
            if self._peek() != ",":
                after = f"field {last[1]!r}" if last else "the cite key"
                raise self._damage(
                    key, f"expected ',' or '{close}' after {after}, found {self._shown()}"
                )
            self.pos += 1
            self._skip_space()
            if self._peek() == close:  # a trailing comma
                self.pos += 1
                break
            start = self.pos
            name, value = self._field(at, key)
            fields.setdefault(name, value)
            last = (start, name, value)
            self._skip_space()
        return BibEntry(type=kind, key=key, fields=fields, line=self.line_of(at))

    def _unclosed(self, at: int, key: str, last: tuple[int, str, str] | None) -> _Damage:
        """An entry that runs into the next one (or the file's end): where its last field
        starts, which, when its value runs over lines, likely holds a brace left open (it took
        the entry's closing brace)."""
        end = "the next entry" if self.limit < len(self.text) else "the end of the file"
        if last is None:
            return _Damage(at, f"entry {key}: not closed before {end}")
        start, name, value = last
        hint = f"; is a brace left open in field {name!r}?" if "\n" in value else ""
        return _Damage(start, f"entry {key}: not closed before {end}{hint}")

    def _cite_key(self, close: str) -> str:
        start = self.pos
        while self.pos < self.limit and self.text[self.pos] not in f",{close}{_SPACE}":
            self.pos += 1
        key = self.text[start : self.pos]
        if not key:
            raise _Damage(start, "an entry without a cite key")
        return key

    def _field(self, at: int, key: str | None = None) -> tuple[str, str]:
        found = _NAME_CHARS.match(self.text, self.pos, self.limit)
        if found is None:
            raise self._damage(key, f"expected a field name, found {self._shown()}")
        name = found.group().lower()
        self.pos = found.end()
        self._skip_space()
        if self._peek() != "=":
            raise self._damage(key, f"expected '=' after field {name!r}, found {self._shown()}")
        self.pos += 1
        self._skip_space()
        pieces = [self._piece(key, name)]
        self._skip_space()
        while self._peek() == "#":
            self.pos += 1
            self._skip_space()
            pieces.append(self._piece(key, name))
            self._skip_space()
        return name, "".join(pieces)

    def _piece(self, key: str | None, name: str) -> str:
        char = self._peek()
        start = self.pos
        if char == "{":
            return self._delimited(key, name, "{")
        if char == '"':
            return self._delimited(key, name, '"')
        found = _NAME_CHARS.match(self.text, self.pos, self.limit)
        if found is None:
            raise self._damage(key, f"expected a value for field {name!r}, found {self._shown()}")
        self.pos = found.end()
        word = found.group()
        if word.isdigit():
            return word
        # An undefined macro (an abbreviations file not given) stands for its name.
        return self.macros.get(word.lower(), self.text[start : self.pos])

    def _delimited(self, key: str | None, name: str, opener: str) -> str:
        """A value in braces (nested braces kept) or quotes (braces inside balanced)."""
        start = self.pos
        self.pos += 1
        depth = 0
        while self.pos < self.limit:
            char = self.text[self.pos]
            if char == "\\" and self.pos + 1 < self.limit:
                self.pos += 2
                continue
            if char == "{":
                depth += 1
            elif char == "}":
                if depth == 0:
                    if opener == "{":
                        self.pos += 1
                        return self.text[start + 1 : self.pos - 1]
                    raise _Damage(self.pos, _named(key, f"an unmatched '}}' in field {name!r}"))
                depth -= 1
            elif char == '"' and opener == '"' and depth == 0:
                self.pos += 1
                return self.text[start + 1 : self.pos - 1]
            self.pos += 1
        what = "brace" if opener == "{" else "quote"
        raise _Damage(
            start,
            _named(
                key,
                f"the {what} opening field {name!r} is not closed before "
                f"{'the next entry' if self.limit < len(self.text) else 'the end of the file'}",
            ),
        )

    def _skip_group(self, at: int, close: str) -> None:
        depth = 0
        while self.pos < self.limit:
            char = self.text[self.pos]
            self.pos += 1
            if char == "{":
                depth += 1
            elif char == "}" and depth > 0:
                depth -= 1
            elif char == close and depth == 0:
                return
        raise _Damage(at, "an @comment or @preamble that is not closed")

    # Helpers

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < self.limit else ""

    def _shown(self) -> str:
        char = self._peek()
        if char:
            return repr(char)
        return "the next entry" if self.limit < len(self.text) else "the end of the file"

    def _skip_space(self) -> None:
        """Whitespace, and `%` comments to the end of their line."""
        while self.pos < self.limit:
            char = self.text[self.pos]
            if char in _SPACE:
                self.pos += 1
            elif char == "%":
                end = self.text.find("\n", self.pos, self.limit)
                self.pos = self.limit if end < 0 else end + 1
            else:
                return

    def _expect(self, char: str, why: str) -> None:
        if self._peek() != char:
            raise _Damage(self.pos, f"expected {char!r} {why}, found {self._shown()}")
        self.pos += 1

    def _damage(self, key: str | None, reason: str) -> _Damage:
        """The damage at the parser's position, or, at the entry's end, where its text ends
        (not on the next entry's line)."""
        position = self.pos
        if position >= self.limit:
            position = max(0, len(self.text[: self.limit].rstrip()) - 1)
        return _Damage(position, _named(key, reason))


def _named(key: str | None, reason: str) -> str:
    return f"entry {key}: {reason}" if key else reason
