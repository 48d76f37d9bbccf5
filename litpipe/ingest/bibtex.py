"""A BibTeX file as the source of `litpipe run --bibtex refs.bib`.

The entries with a PDF in their `file` field (JabRef's, Zotero's and Mendeley's `file =
{Description:path.pdf:application/pdf}`, `{:path.pdf:PDF}` or a bare `{path.pdf}`, several
separated by `;`; BibDesk's `bdsk-file-N`; a `pdf` or `local-url` field), relative to the
`.bib`'s folder, are their PDFs; the entries with an `abstract` and no PDF enter by it; the
others are left aside, counted in a note. The rest follows `litpipe.ingest.library`.

The parser is BibTeX's grammar, written for this: `@type{key, name = value, ...}` (or with
parentheses), values in braces (nested), in quotes, numbers or `@string` macros (the months
predefined), joined by `#`; `@comment` and `@preamble` skipped, and so is everything between
entries (a line that opens with `%` included). An entry that does not parse fails alone with
its line number: an entry is read no further than the next line that opens another, so a
brace left open damages only its own entry. Values are made text: LaTeX accents (`{\\"u}`,
`\\'{e}`, `\\c{c}`), letters (`{\\ss}`, `\\o`), dashes (`--`), quotes, escapes and protective
braces; names split at `and`, each as `Family, Given` (`von Last, First`, `First von Last`,
`{Organisation}`).
"""

from __future__ import annotations

import base64
import plistlib
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from litpipe.ingest.ids import slug
from litpipe.ingest.library import LibraryEntry, library_discovery
from litpipe.ingest.sources import Discovery
from litpipe.schemas import FailedPaper

MONTHS = {
    name: str(number)
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
# Where each entry type keeps what it was published in, in order (an entry has its own).
VENUE_FIELDS = (
    "journal",
    "journaltitle",
    "booktitle",
    "school",
    "institution",
    "publisher",
    "organization",
)
FILE_FIELDS = ("file", "pdf", "local-url")
_SKIPPED_TYPES = ("comment", "preamble")
# A line that opens an entry: no entry is read past the next one.
_ENTRY_LINE = re.compile(r"^[ \t]*@[ \t]*[A-Za-z]+[ \t]*[{(]", re.M)
_NAME_CHARS = re.compile(r"[^\s\"#%'(),={}]+")
_TYPE = re.compile(r"[A-Za-z]+")
_DOI_IN_URL = re.compile(r"doi\.org/(10\.\S+)", re.I)
_SPACE = " \t\r\n"


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


def discover_bibtex(bib: Path, collection: str | None = None) -> Discovery:
    """The papers of the `.bib` file's entries that have a PDF or an abstract, in the
    collection `collection` (default: the file's name, slugged).

    Raises ValueError, with a one-line reason, for a file there is nothing to run on: no such
    file, or no entry with a PDF or an abstract (the first damage's line when none parsed).
    """
    if not bib.is_file():
        problem = "not a file" if bib.exists() else "no such file"
        raise ValueError(f"{bib}: {problem}; --bibtex takes a BibTeX file (.bib)")
    try:
        data = bib.read_bytes()
    except OSError as error:
        raise ValueError(f"{bib}: cannot read the file: {error.strerror or error}") from error
    text = _decoded(data)
    entries, damaged = parse_bibtex(text)
    entries = with_crossrefs(entries)
    folders = list(dict.fromkeys([*_jabref_file_directories(text, bib.parent), bib.parent]))
    if not entries and damaged:
        raise ValueError(f"{bib}: line {damaged[0].line}: {damaged[0].reason}")
    failed = [
        FailedPaper(paper_id=None, file=str(bib), reason=f"line {damage.line}: {damage.reason}")
        for damage in damaged
    ]
    first_line: dict[str, int] = {}
    library: list[LibraryEntry] = []
    for entry in entries:
        if entry.key in first_line:
            failed.append(
                FailedPaper(
                    paper_id=None,
                    file=str(bib),
                    reason=f"line {entry.line}: entry {entry.key}: duplicate cite key (first "
                    f"at line {first_line[entry.key]}); this one is left out",
                )
            )
            continue
        first_line[entry.key] = entry.line
        library.append(_library_entry(entry, folders))
    name = slug(collection) if collection else slug(bib.stem)
    try:
        found = library_discovery(library, name, bib, "entry")
    except ValueError:
        if not failed:
            raise
        found = Discovery(collection=name, sources=[], failed=[])
    return found.model_copy(update={"failed": [*failed, *found.failed]})


def _decoded(data: bytes) -> str:
    """UTF-8 (a byte-order mark dropped), else Latin-1, which older `.bib` files are in."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def parse_bibtex(text: str) -> tuple[list[BibEntry], list[BibDamage]]:
    """The entries of a BibTeX text that parse, and where and why the others do not."""
    return _Parser(text).parse()


# What an entry does not take from the entry its `crossref` names (a DBLP export's
# proceedings): that entry's own title (its `booktitle` instead), abstract, files and ids.
_NOT_INHERITED = {"title", "abstract", "doi", "url", "crossref", *FILE_FIELDS}


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
        completed.append(BibEntry(entry.type, entry.key, {**inherited, **entry.fields}, entry.line))
    return completed


_JABREF_FILE_DIRECTORY = re.compile(
    r"@comment\s*\{\s*jabref-meta:\s*fileDirectory(-[^:]*)?:(.*?);?\s*\}", re.I
)


def _jabref_file_directories(text: str, folder: Path) -> list[Path]:
    """The folders JabRef resolves the library's relative file paths in, as its metadata
    comments set them (`@Comment{jabref-meta: fileDirectory:papers;}`, the library's own
    before a user's), relative to the `.bib`'s folder."""
    found = sorted(
        _JABREF_FILE_DIRECTORY.finditer(text), key=lambda match: match.group(1) is not None
    )
    return [folder / Path(_unescaped(match.group(2).strip())).expanduser() for match in found]


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


# From an entry to a library entry


def _library_entry(entry: BibEntry, folders: list[Path]) -> LibraryEntry:
    values = entry.fields
    doi = latex_to_text(values.get("doi", ""), ligatures=False)
    if not doi and (found := _DOI_IN_URL.search(values.get("url", ""))):
        doi = found.group(1)
    pdfs, problems = entry_pdfs(values, folders)
    return LibraryEntry(
        key=entry.key,
        name=f"entry {entry.key} (line {entry.line})",
        title=latex_to_text(values.get("title", "")),
        authors=names(values.get("author") or values.get("editor") or ""),
        year=latex_to_text(values.get("year") or values.get("date") or ""),
        venue=next(
            (latex_to_text(values[name]) for name in VENUE_FIELDS if values.get(name, "").strip()),
            "",
        ),
        doi=doi,
        abstract=latex_to_text(values.get("abstract", "")),
        pdfs=pdfs,
        problem="; ".join(problems),
    )


def entry_pdfs(values: dict[str, str], folders: list[Path]) -> tuple[list[Path], list[str]]:
    """The PDFs an entry's file fields name (a relative one in the first of `folders` that
    holds it), and what could not be read of them."""
    pdfs: list[Path] = []
    problems: list[str] = []
    for name in (*FILE_FIELDS, *sorted(n for n in values if n.startswith("bdsk-file-"))):
        if name not in values:
            continue
        if name.startswith("bdsk-file-"):
            path = _bibdesk_path(values[name])
            if path is None:
                problems.append(f"its {name} field cannot be read")
                continue
            records = [(path, "")]
        elif name == "local-url":
            records = [(values[name], "")]
        else:
            records = file_field(values[name])
        for path, kind in records:
            if path.lower().endswith(".pdf") or "pdf" in kind.lower():
                pdfs.append(_resolved(path, folders))
    return pdfs, problems


def file_field(raw: str) -> list[tuple[str, str]]:
    """(path, file type) of each file a `file` field lists: `path`, `:path:PDF`,
    `Description:path:application/pdf`, separated by `;`; JabRef's escapes (`\\:`, `\\;`,
    `\\\\`) and Mendeley's (`{\\_}`, `$\\backslash$`) undone."""
    raw = raw.replace("$\\backslash$", "\\\\").replace("{\\_}", "_").replace("\\_", "_")
    found: list[tuple[str, str]] = []
    for record in _split_unescaped(raw, ";"):
        parts = [_unescaped(part).strip() for part in _split_unescaped(record, ":")]
        if not any(parts):
            continue
        if len(parts) == 1:
            path, kind = parts[0], ""
        elif len(parts) == 2:
            if len(parts[0]) == 1 and parts[0].isalpha():  # a Windows drive: C:\...
                path, kind = ":".join(parts), ""
            elif parts[1].lower().endswith(".pdf"):  # Description:path
                path, kind = parts[1], ""
            else:  # path:type
                path, kind = parts
        else:
            path, kind = ":".join(parts[1:-1]), parts[-1]
        if path:
            found.append((path, kind))
    return found


def _split_unescaped(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            current.append(text[index : index + 2])
            index += 2
            continue
        if char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    parts.append("".join(current))
    return parts


def _unescaped(text: str) -> str:
    return re.sub(r"\\([\\:;])", r"\1", text)


def _resolved(path: str, folders: list[Path]) -> Path:
    """A file field's path as a file: a `file://` URL decoded, `~` expanded, a relative path
    in the first of `folders` that holds it (or, as Mendeley writes absolute paths without
    their leading `/`, from the root when only that exists; else in the first folder)."""
    if path.lower().startswith("file:"):
        path = unquote(urlparse(path).path)
    given = Path(path).expanduser()
    if given.is_absolute():
        return given
    candidates = [folder / given for folder in folders] + [Path("/") / given]
    return next((candidate for candidate in candidates if candidate.is_file()), candidates[0])


def _bibdesk_path(raw: str) -> str | None:
    """The `relativePath` of BibDesk's `bdsk-file-N`: a base64 property list (a keyed archive,
    or a plain dictionary)."""
    try:
        archive = plistlib.loads(base64.b64decode("".join(raw.split())))
    except Exception:  # any undecodable value: the entry says it cannot be read
        return None
    if not isinstance(archive, dict):
        return None
    direct = archive.get("relativePath")
    if isinstance(direct, str):
        return direct
    objects = archive.get("$objects")
    if not isinstance(objects, list):
        return None
    for item in objects:
        if isinstance(item, dict) and "relativePath" in item:
            target = item["relativePath"]
            if isinstance(target, plistlib.UID) and target.data < len(objects):
                target = objects[target.data]
            return target if isinstance(target, str) else None
    return None


# Names


def names(raw: str) -> list[str]:
    """The names of an `author` (or `editor`) field, split at `and` outside braces, each as
    `Family, Given` (a name in one brace group, an organisation, as it is); `others` dropped."""
    found = []
    for name in _split_top_level(raw, re.compile(r"\s+and\s+", re.I)):
        if name.strip().lower() in ("", "others"):
            continue
        found.append(_name(name.strip()))
    return [name for name in found if name]


def _name(raw: str) -> str:
    parts = [part.strip() for part in _split_top_level(raw, re.compile(r","))]
    if len(parts) >= 2:
        family = latex_to_text(parts[0])
        junior = latex_to_text(parts[1]) if len(parts) >= 3 else ""
        given = latex_to_text(parts[-1])
        family = f"{family} {junior}".strip()
        return f"{family}, {given}" if given else family
    words = _split_top_level(raw, re.compile(r"\s+"))
    if len(words) == 1:
        return latex_to_text(words[0])
    # First von Last: the family name from the first lowercase word (not the first word) on,
    # else the last word.
    start = next((i for i in range(1, len(words) - 1) if _lowercase_word(words[i])), len(words) - 1)
    family = latex_to_text(" ".join(words[start:]))
    given = latex_to_text(" ".join(words[:start]))
    return f"{family}, {given}" if given else family


def _lowercase_word(word: str) -> bool:
    """Whether a name's word starts lowercase, as BibTeX reads it: a word opening with a brace
    group that is not a command (`{van Gogh}`) has no case."""
    if word.startswith("{") and not word.startswith("{\\"):
        return False
    letters = [char for char in latex_to_text(word) if char.isalpha()]
    return bool(letters) and letters[0].islower()


def _split_top_level(text: str, separator: re.Pattern[str]) -> list[str]:
    """`text` split where `separator` matches outside braces."""
    parts: list[str] = []
    depth, start, index = 0, 0, 0
    while index < len(text):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth = max(0, depth - 1)
        elif depth == 0 and (found := separator.match(text, index)) and found.end() > index:
            parts.append(text[start:index])
            start = index = found.end()
            continue
        index += 1
    parts.append(text[start:])
    return parts


# LaTeX to text

_ACCENTS = {
    "'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
    ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "k": "\u0328",
    "r": "\u030a", "b": "\u0331", "d": "\u0323", "t": "\u0361",
}  # fmt: skip
_LETTERS = {
    "ss": "\N{LATIN SMALL LETTER SHARP S}",
    "o": "\N{LATIN SMALL LETTER O WITH STROKE}",
    "O": "\N{LATIN CAPITAL LETTER O WITH STROKE}",
    "ae": "\N{LATIN SMALL LETTER AE}",
    "AE": "\N{LATIN CAPITAL LETTER AE}",
    "oe": "\N{LATIN SMALL LIGATURE OE}",
    "OE": "\N{LATIN CAPITAL LIGATURE OE}",
    "aa": "\N{LATIN SMALL LETTER A WITH RING ABOVE}",
    "AA": "\N{LATIN CAPITAL LETTER A WITH RING ABOVE}",
    "l": "\N{LATIN SMALL LETTER L WITH STROKE}",
    "L": "\N{LATIN CAPITAL LETTER L WITH STROKE}",
    "i": "\N{LATIN SMALL LETTER DOTLESS I}",
    "j": "\N{LATIN SMALL LETTER DOTLESS J}",
    "dh": "\N{LATIN SMALL LETTER ETH}",
    "DH": "\N{LATIN CAPITAL LETTER ETH}",
    "th": "\N{LATIN SMALL LETTER THORN}",
    "TH": "\N{LATIN CAPITAL LETTER THORN}",
    "ng": "\N{LATIN SMALL LETTER ENG}",
    "NG": "\N{LATIN CAPITAL LETTER ENG}",
    "dj": "\N{LATIN SMALL LETTER D WITH STROKE}",
    "DJ": "\N{LATIN CAPITAL LETTER D WITH STROKE}",
    "textendash": "\N{EN DASH}",
    "textemdash": "\N{EM DASH}",
    "textquoteright": "\N{RIGHT SINGLE QUOTATION MARK}",
    "textquoteleft": "\N{LEFT SINGLE QUOTATION MARK}",
    "textquotedblleft": "\N{LEFT DOUBLE QUOTATION MARK}",
    "textquotedblright": "\N{RIGHT DOUBLE QUOTATION MARK}",
    "ldots": "\N{HORIZONTAL ELLIPSIS}",
    "dots": "\N{HORIZONTAL ELLIPSIS}",
    "textellipsis": "\N{HORIZONTAL ELLIPSIS}",
    "textregistered": "\N{REGISTERED SIGN}",
    "texttrademark": "\N{TRADE MARK SIGN}",
    "copyright": "\N{COPYRIGHT SIGN}",
    "textdegree": "\N{DEGREE SIGN}",
    "textasciitilde": "~",
    "textbackslash": "\\",
    "textunderscore": "_",
    "textbar": "|",
    "textless": "<",
    "textgreater": ">",
    "S": "\N{SECTION SIGN}",
    "P": "\N{PILCROW SIGN}",
    "pounds": "\N{POUND SIGN}",
    "euro": "\N{EURO SIGN}",
    "textperthousand": "\N{PER MILLE SIGN}",
    "textmu": "\N{MICRO SIGN}",
    "alpha": "\N{GREEK SMALL LETTER ALPHA}",
    "beta": "\N{GREEK SMALL LETTER BETA}",
    "gamma": "\N{GREEK SMALL LETTER GAMMA}",
    "delta": "\N{GREEK SMALL LETTER DELTA}",
    "epsilon": "\N{GREEK SMALL LETTER EPSILON}",
    "varepsilon": "\N{GREEK SMALL LETTER EPSILON}",
    "zeta": "\N{GREEK SMALL LETTER ZETA}",
    "eta": "\N{GREEK SMALL LETTER ETA}",
    "theta": "\N{GREEK SMALL LETTER THETA}",
    "kappa": "\N{GREEK SMALL LETTER KAPPA}",
    "lambda": "\N{GREEK SMALL LETTER LAMDA}",
    "mu": "\N{GREEK SMALL LETTER MU}",
    "nu": "\N{GREEK SMALL LETTER NU}",
    "xi": "\N{GREEK SMALL LETTER XI}",
    "pi": "\N{GREEK SMALL LETTER PI}",
    "rho": "\N{GREEK SMALL LETTER RHO}",
    "sigma": "\N{GREEK SMALL LETTER SIGMA}",
    "tau": "\N{GREEK SMALL LETTER TAU}",
    "phi": "\N{GREEK SMALL LETTER PHI}",
    "varphi": "\N{GREEK SMALL LETTER PHI}",
    "chi": "\N{GREEK SMALL LETTER CHI}",
    "psi": "\N{GREEK SMALL LETTER PSI}",
    "omega": "\N{GREEK SMALL LETTER OMEGA}",
    "Gamma": "\N{GREEK CAPITAL LETTER GAMMA}",
    "Delta": "\N{GREEK CAPITAL LETTER DELTA}",
    "Theta": "\N{GREEK CAPITAL LETTER THETA}",
    "Lambda": "\N{GREEK CAPITAL LETTER LAMDA}",
    "Pi": "\N{GREEK CAPITAL LETTER PI}",
    "Sigma": "\N{GREEK CAPITAL LETTER SIGMA}",
    "Phi": "\N{GREEK CAPITAL LETTER PHI}",
    "Psi": "\N{GREEK CAPITAL LETTER PSI}",
    "Omega": "\N{GREEK CAPITAL LETTER OMEGA}",
    "pm": "\N{PLUS-MINUS SIGN}",
    "times": "\N{MULTIPLICATION SIGN}",
    "leq": "\N{LESS-THAN OR EQUAL TO}",
    "le": "\N{LESS-THAN OR EQUAL TO}",
    "geq": "\N{GREATER-THAN OR EQUAL TO}",
    "ge": "\N{GREATER-THAN OR EQUAL TO}",
    "neq": "\N{NOT EQUAL TO}",
    "approx": "\N{ALMOST EQUAL TO}",
    "sim": "\N{TILDE OPERATOR}",
    "infty": "\N{INFINITY}",
    "rightarrow": "\N{RIGHTWARDS ARROW}",
    "to": "\N{RIGHTWARDS ARROW}",
    "leftarrow": "\N{LEFTWARDS ARROW}",
    "cdot": "\N{MIDDLE DOT}",
    "circ": "\N{RING OPERATOR}",
    "prime": "\N{PRIME}",
}
# Commands whose argument is text shown as it is; `\href{url}{text}` shows its second.
_WRAPPERS = {
    "textbf", "textit", "emph", "textsc", "textrm", "textsf", "texttt", "textup", "textsl",
    "textnormal", "mathrm", "mathit", "mathbf", "mathsf", "mathtt", "mathcal", "mbox", "hbox",
    "text", "url", "NoCaseChange", "MakeUppercase", "MakeLowercase", "uppercase", "lowercase",
}  # fmt: skip
_SPACING = {",": " ", ";": " ", ":": " ", " ": " ", "!": "", "-": "", "/": "", "\\": " "}


def latex_to_text(raw: str, *, ligatures: bool = True) -> str:
    """A BibTeX value as plain text: accents composed (`{\\"u}` → ü, `\\c{c}` → ç), letters
    (`{\\ss}` → ß), escapes (`\\&`), formatting commands' text, math delimiters and protective
    braces dropped, whitespace collapsed; with `ligatures`, `--`/`---` as dashes and TeX's
    quotes as curly ones (not in a DOI)."""
    text = _Latex(raw, ligatures).run()
    return unicodedata.normalize("NFC", " ".join(text.split()))


class _Latex:
    def __init__(self, raw: str, ligatures: bool) -> None:
        self.raw = raw
        self.pos = 0
        self.ligatures = ligatures
        self.math = False

    def run(self, in_group: bool = False) -> str:
        out: list[str] = []
        raw = self.raw
        while self.pos < len(raw):
            char = raw[self.pos]
            if char == "}":
                self.pos += 1
                if in_group:
                    return "".join(out)
                continue
            if char == "{":
                self.pos += 1
                out.append(self.run(in_group=True))
            elif char == "\\":
                out.append(self.command())
            elif char == "$":
                self.math = not self.math
                self.pos += 1
            elif char == "~":
                out.append(" ")
                self.pos += 1
            elif self.math and char in "^_":
                self.pos += 1
            elif self.ligatures and raw.startswith("---", self.pos):
                out.append("\N{EM DASH}")
                self.pos += 3
            elif self.ligatures and raw.startswith("--", self.pos):
                out.append("\N{EN DASH}")
                self.pos += 2
            elif self.ligatures and raw.startswith("``", self.pos):
                out.append("\N{LEFT DOUBLE QUOTATION MARK}")
                self.pos += 2
            elif self.ligatures and raw.startswith("''", self.pos):
                out.append("\N{RIGHT DOUBLE QUOTATION MARK}")
                self.pos += 2
            else:
                out.append(char)
                self.pos += 1
        return "".join(out)

    def command(self) -> str:
        raw = self.raw
        self.pos += 1  # the backslash
        if self.pos >= len(raw):
            return ""
        char = raw[self.pos]
        if not char.isalpha():
            self.pos += 1
            if char in _ACCENTS:
                return self.accented(_ACCENTS[char])
            if char in _SPACING:
                return _SPACING[char]
            return char  # \& \% \$ \# \_ \{ \}
        found = re.match(r"[A-Za-z]+", raw[self.pos :])
        name = found.group() if found else char
        self.pos += len(name)
        if name in _ACCENTS and (self._at("{") or self._space_then_letter()):
            self._skip_space()
            return self.accented(_ACCENTS[name])
        self._skip_space()
        if name in _LETTERS:
            if self._at("{}"):
                self.pos += 2
            return _LETTERS[name]
        if name == "href":
            self.argument()
            return self.argument()
        if name in _WRAPPERS or self._at("{"):
            return self.argument() if self._at("{") else ""
        return ""

    def accented(self, mark: str) -> str:
        base = self.argument()
        # A dotless i or j takes the accent in place of its dot; a tie joins two letters.
        base = {
            "\N{LATIN SMALL LETTER DOTLESS I}": "i",
            "\N{LATIN SMALL LETTER DOTLESS J}": "j",
        }.get(base[:1], base[:1]) + base[1:]
        return base[:1] + mark + base[1:] if base else mark

    def argument(self) -> str:
        """The next argument: a group, a command, or one character."""
        self._skip_space()
        if self.pos >= len(self.raw):
            return ""
        char = self.raw[self.pos]
        if char == "{":
            self.pos += 1
            return self.run(in_group=True)
        if char == "\\":
            return self.command()
        self.pos += 1
        return char

    def _at(self, char: str) -> bool:
        return self.raw.startswith(char, self.pos)

    def _space_then_letter(self) -> bool:
        return bool(re.match(r"\s+[A-Za-z\\]", self.raw[self.pos :]))

    def _skip_space(self) -> None:
        while self.pos < len(self.raw) and self.raw[self.pos] in _SPACE:
            self.pos += 1
