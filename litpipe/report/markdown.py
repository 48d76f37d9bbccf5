"""Markdown that shows paper and model text as text.

Paper text reaches every Markdown litpipe writes (synthesis.md, plain.md, digests, query
summaries, related work) and the Markdown metadata the Dagster UI renders. Markdown passes raw
HTML through, so a `<script>` or an `<img onerror=…>` copied from a paper would run in whatever
renders the file, and a `[x](javascript:…)` link would run on a click. `safe_markdown` keeps the
Markdown (headings, lists, emphasis, tables, citation markers, links to pages and files) and
makes the rest inert: every `<` is written `&lt;` (so no tag, comment or autolink is left), and
a link whose URL has a scheme other than `http:`, `https:` or `mailto:` is shown as the text it
was written as.

Renderers disagree on where a link starts: CommonMark renderers and Python-Markdown (MkDocs)
match brackets differently, and Python-Markdown takes spaces, line breaks and code spans into a
destination, so a parse by one of them would not say what the other links. They agree on what
comes right before a destination: `](` for an inline link or image, and `]:` after a label
opening a line for a reference definition (which every `[text][label]` and `[label]` link points
to). So each destination after one of those is read as a browser would read it, after whatever
a renderer may have decoded (character references, backslash escapes, code spans, block quote
markers, whitespace and control characters), and where its scheme is unsafe a backslash before
the `(`, or the definition's colon written `&#58;`, makes the brackets plain text for every
renderer (escaping the label's `[` instead would join it to brackets before it for CommonMark,
and Python-Markdown shows the backslash of an escaped colon). Nothing else changes (but the two
controls Python-Markdown deletes), so the function is idempotent, and a preview of a file it
wrote shows the file's text. An image may show a `data:image/…` picture: an `<img>` runs no
script, and the UI previews of the relationship analysis embed their SVGs so.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from urllib.parse import unquote

_SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
# A picture's data URI, as written: a spelling a renderer decodes to one may not be one for
# another (Python-Markdown keeps `\/` and backticks).
_PICTURE = re.compile(r"[\s<]*+data:image/", re.I)
# A destination's start as far as it can spell a scheme: scheme characters, the colon, what a
# renderer or a browser drops (whitespace, controls, `<`, `>`, backslashes, backticks), and
# character references and percent escapes, which may spell any of those. Possessive repeats
# (`*+`, `++`): giving characters back finds nothing, and a repeat that may give back keeps a
# backtracking point per character.
_DESTINATION = (
    r"(?P<destination>(?:[A-Za-z0-9+.\-:/\s\x00-\x1f\x7f<>\\`]++"
    r"|&#?[A-Za-z0-9]++;?|%[0-9A-Fa-f]{2})*+)"
)
_INLINE = re.compile(r"\]\(" + _DESTINATION)
# A reference definition's label opens a line (after block quote and list markers, a lone \r
# ending a line too) and holds no bracket but escaped ones. (Python-Markdown ends a label at an
# escaped `]` too, but could not link to one ending in a backslash.)
_DEFINITION = re.compile(
    r"(?:^|(?<=\r))[ \t>*+\-.)0-9]*+\[(?:[^\[\]\\]++|\\.)*+\]:" + _DESTINATION, re.M | re.S
)
# A definition's destination ends its line or is followed by a title: otherwise (as in
# `[a:1]: Finding: …`) the line is a paragraph's text. It ends at any whitespace for
# Python-Markdown, at ASCII whitespace and controls for CommonMark, and may hold spaces in `<…>`;
# Python-Markdown also ends it where a title's quote or parenthesis follows without a space.
_DEFINED = re.compile(
    r"[ \t]*+(?:(?:\r\n?|\n)[ \t>]*+)?"
    r"(?:<|(?:\S++|[^\x00-\x20\x7f]++)[ \t]*+(?:$|[\r\"'(])|[^\s\"'(]++[\"'(])",
    re.M,
)
# What may be gone from the URL by the time a browser reads its scheme: a line break with the
# block quote markers and indentation after it, whitespace and controls (a browser drops some,
# Python-Markdown strips others) and backslashes (a Markdown escape's, and any other: one left
# in would only end the scheme); then an angle bracket before it.
_DROPPED = re.compile(r"[\r\n][\s>]*+|[\s\x00-\x1f\x7f\\]")
_LEADING = re.compile(r"^[<>]++")
_SCHEME = re.compile(r"[a-z][a-z0-9+.\-]*+(?=:)")


def _read_as_a_browser_does(destination: str, inline: bool) -> str:
    # Python-Markdown writes a code span's text into an inline link's URL (not a definition's).
    url = destination.replace("`", "") if inline else destination
    # The browser decodes character references (CommonMark renderers decode them too, and write
    # an `&` back as `&amp;`); percent escapes only to be safe.
    url = unquote(html.unescape(url))
    return _LEADING.sub("", _DROPPED.sub("", url)).lower()


def _is_escaped(markdown: str, position: int) -> bool:
    backslashes = 0
    while position - backslashes > 0 and markdown[position - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _closes_an_image(markdown: str, close: int) -> bool:
    """Whether the `]` at `close` ends an image's text for every renderer: `![` before it, the
    `!` not escaped, no bracket between (which renderers would pair differently)."""
    opener = markdown.rfind("[", markdown.rfind("]", 0, close) + 1, close)
    return opener > 0 and markdown[opener - 1] == "!" and not _is_escaped(markdown, opener - 1)


def _is_unsafe(markdown: str, found: re.Match[str], inline: bool) -> bool:
    url = _read_as_a_browser_does(found.group("destination"), inline)
    scheme = _SCHEME.match(url)
    if scheme is None or scheme.group() in _SAFE_SCHEMES:
        return False
    return not (
        inline
        and _PICTURE.match(found.group("destination"))
        and _closes_an_image(markdown, found.start())
    )


def _unsafe_openers(markdown: str) -> Iterator[tuple[int, str]]:
    """Where each link to an unsafe destination opens it (the `(` of an inline link or image,
    the `:` of a reference definition), and what that character is written as to make the link
    text."""
    for found in _INLINE.finditer(markdown):
        if _is_unsafe(markdown, found, inline=True):
            yield found.start() + 1, "\\("
    for found in _DEFINITION.finditer(markdown):
        destination = found.start("destination")
        if _DEFINED.match(markdown, destination) and _is_unsafe(markdown, found, inline=False):
            yield destination - 1, "&#58;"


def safe_markdown(markdown: str) -> str:
    """`markdown` with raw HTML escaped and links and images to a URL of any scheme but
    `http:`, `https:` and `mailto:` (and images of `data:image/…`) shown as the text they were
    written as; everything else as it was."""
    # Python-Markdown deletes these two controls (its placeholders' ends) before it reads the
    # text, which may join a `]` to a `(`.
    markdown = markdown.replace("\x02", "").replace("\x03", "")
    pieces = []
    start = 0
    for opener, written in sorted(dict(_unsafe_openers(markdown)).items()):
        pieces += [markdown[start:opener], written]
        start = opener + 1
    pieces.append(markdown[start:])
    return "".join(pieces).replace("<", "&lt;")
