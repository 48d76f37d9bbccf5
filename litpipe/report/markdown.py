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
destination. They agree on what comes right before one: `](` for an inline link or image, and
`]:` after a label opening a line for a reference definition (which every `[text][label]` and
`[label]` link points to). So each destination after one of those is read as a browser would
read it, after whatever a renderer may have decoded (character references, backslash escapes,
code spans, block quote markers, whitespace and control characters), and where its scheme is
unsafe a backslash before the `(`, or before the `[` of the definition's label, makes the
brackets plain text for every renderer. Links are checked on the text as given, not as one
parser reads it: a CommonMark parse would not say what Python-Markdown links, and the other way
round. Nothing else changes (but the two controls Python-Markdown deletes), so the function is
idempotent, and a preview of a file it wrote shows the file's text. An image may show a
`data:image/…` picture: an `<img>` runs no script, and the UI previews of the relationship
analysis embed their SVGs so.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from urllib.parse import unquote

_SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
_IMAGE_DATA = "data:image/"
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
# A reference definition's label opens a line (after block quote and list markers); Python-Markdown
# reads it up to the first bracket, CommonMark past escaped ones.
_LINE_START = r"(?:^|(?<=\r))[ \t>*+\-.)0-9]*+(?P<label>\[)"
_DEFINITIONS = (
    re.compile(_LINE_START + r"[^\[\]]*+\]:" + _DESTINATION, re.M),
    re.compile(_LINE_START + r"(?:[^\[\]\\]++|\\.)*+\]:" + _DESTINATION, re.M | re.S),
)
# A definition's destination ends its line or is followed by a title: otherwise (as in
# `[a:1]: Finding: …`) the line is a paragraph's text. It ends at any whitespace for
# Python-Markdown, at ASCII whitespace and controls for CommonMark, and may hold spaces in `<…>`.
_DEFINED = re.compile(
    r"[ \t]*+(?:(?:\r\n?|\n)[ \t>]*+)?"
    r"(?:<|(?:\S++|[^\x00-\x20\x7f]++)[ \t]*+(?:$|[\r\"'(]))",
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
    # A renderer may decode character references before writing the attribute, and the browser
    # decodes the attribute: twice covers both.
    for _ in range(2):
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
        inline and url.startswith(_IMAGE_DATA) and _closes_an_image(markdown, found.start())
    )


def _unsafe_openers(markdown: str) -> Iterator[int]:
    """Where a backslash makes each link to an unsafe destination text: before the `(` of an
    inline link or image, before the `[` of a reference definition's label."""
    for found in _INLINE.finditer(markdown):
        if _is_unsafe(markdown, found, inline=True):
            yield found.start() + 1
    for definition in _DEFINITIONS:
        for found in definition.finditer(markdown):
            destination = found.start("destination")
            if _DEFINED.match(markdown, destination) and _is_unsafe(markdown, found, inline=False):
                yield found.start("label")


def safe_markdown(markdown: str) -> str:
    """`markdown` with raw HTML escaped and links and images to a URL of any scheme but
    `http:`, `https:` and `mailto:` (and images of `data:image/…`) shown as the text they were
    written as; everything else as it was."""
    # Python-Markdown deletes these two controls (its placeholders' ends) before it reads the
    # text, which may join a `]` to a `(`.
    markdown = markdown.replace("\x02", "").replace("\x03", "")
    pieces = []
    start = 0
    for opener in sorted(set(_unsafe_openers(markdown))):
        pieces += [markdown[start:opener], "\\"]
        start = opener
    pieces.append(markdown[start:])
    return "".join(pieces).replace("<", "&lt;")
