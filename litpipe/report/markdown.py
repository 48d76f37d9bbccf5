"""Markdown that shows paper and model text as text.

Paper text reaches every Markdown litpipe writes (synthesis.md, plain.md, digests, query
summaries, related work) and the Markdown metadata the Dagster UI renders. Markdown passes raw
HTML through, so a `<script>` or an `<img onerror=…>` copied from a paper would run in whatever
renders the file, and a `[x](javascript:…)` link would run on a click. `safe_markdown` keeps the
Markdown (headings, lists, emphasis, tables, citation markers, links to pages and files) and
makes the rest inert: every `<` is written `&lt;` (so no tag, comment or autolink is left),
and a link to a `javascript:`, `vbscript:` or `data:` URL is replaced by its text, its scheme
read as a browser would (character references decoded: `&#106;avascript:` is one). A character
reference in text decodes to text, never to markup, so it is left as it is: the function is
idempotent, and a preview of a file it wrote shows the file's text. An image may show a
`data:image/…` picture: an `<img>` runs no script, and the UI previews of the relationship
analysis embed their SVGs so.
"""

from __future__ import annotations

import html
import re

_DROPPED_SCHEMES = ("javascript:", "vbscript:", "data:")
_IMAGE_DATA = "data:image/"
# An inline link or image: its text (one level of nested brackets, as in a `[id:page]` marker),
# its destination (`<…>`, or without spaces, with balanced parentheses), an optional title.
# Possessive repeats (`*+`, `++`): what follows each one can never match inside it, so giving
# characters back finds nothing, and a repeat that may give back keeps a backtracking point per
# character: the relationship graph's data URI (megabytes at 5,000 papers) then took over 100
# bytes of memory per character.
_INLINE_LINK = re.compile(
    r"(?P<image>!?)\[(?P<text>(?:[^\[\]\n]++|\[[^\[\]\n]*+\])*+)\]"
    r"\(\s*(?P<destination><[^<>\n]*>|(?:[^\s()]++|\([^\s()]*+\))*+)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)
# A link reference definition (`[label]: destination "title"`), which links `[label]` elsewhere.
_REFERENCE_DEFINITION = re.compile(
    r"^ {0,3}\[[^\]\n]+\]:[ \t]*(?P<destination><[^<>\n]*>|\S+).*$", re.M
)
# What a browser ignores in a URL's scheme (controls, spaces) and Markdown's escapes (`\:`).
_IGNORED_IN_SCHEME = re.compile(r"[\x00-\x20\x7f]|\\(?=[!-/:-@\[-`{-~])")


def _scheme_dropped(destination: str, image: bool) -> bool:
    """Whether a destination, read as a browser would after Markdown decoded it, has a scheme
    that runs code or smuggles a document."""
    url = _IGNORED_IN_SCHEME.sub("", html.unescape(destination.strip("<>"))).lower()
    if image and url.startswith(_IMAGE_DATA):
        return False
    return url.startswith(_DROPPED_SCHEMES)


def _without_unsafe_link(found: re.Match[str]) -> str:
    if _scheme_dropped(found.group("destination"), bool(found.group("image"))):
        return found.group("text")
    return found.group()


def safe_markdown(markdown: str) -> str:
    """`markdown` with raw HTML escaped and links to `javascript:`, `vbscript:` and `data:` URLs
    replaced by their text; everything else as it was."""
    linked = _INLINE_LINK.sub(_without_unsafe_link, markdown)
    defined = _REFERENCE_DEFINITION.sub(
        lambda found: "" if _scheme_dropped(found.group("destination"), False) else found.group(),
        linked,
    )
    return defined.replace("<", "&lt;")
