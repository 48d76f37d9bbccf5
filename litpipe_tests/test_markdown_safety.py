"""`safe_markdown` leaves no link or image to a script or a document for any renderer a user may
open litpipe's Markdown with (Python-Markdown, as in MkDocs, and CommonMark, as markdown-it
reads it), however the paper spells the link, and leaves ordinary text as it was."""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser

import markdown as python_markdown
import pytest
from hypothesis import example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from litpipe.report.markdown import safe_markdown

SAFE_SCHEMES = {"http", "https", "mailto"}


def commonmark(text: str) -> str:
    # markdown-it's own link filter would hide what safe_markdown let through: off, as in a
    # renderer that trusts the file.
    renderer = MarkdownIt("commonmark").enable("table")
    renderer.validateLink = lambda url: True
    return renderer.render(text)


RENDERERS: dict[str, Callable[[str], str]] = {
    "Python-Markdown": python_markdown.markdown,
    "CommonMark": commonmark,
}


class _Page(HTMLParser):
    """A rendered page's URLs (as a browser decodes the attribute) and its visible text."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [(tag, name, value or "") for name, value in attrs if name in ("href", "src")]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def read(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def unsafe_urls(html: str) -> list[str]:
    """The page's URLs whose scheme, read as a browser reads it (no whitespace or control
    characters, any case), is not http, https or mailto: a `data:image/…` picture is allowed."""
    unsafe = []
    for tag, attribute, value in read(html).urls:
        url = re.sub(r"[\x00-\x20\x7f\s]", "", value).lower()
        scheme = re.match(r"([a-z][a-z0-9+.\-]*):", url)
        picture = tag == "img" and attribute == "src" and url.startswith("data:image/")
        if scheme and scheme.group(1) not in SAFE_SCHEMES and not picture:
            unsafe.append(f"<{tag} {attribute}={value!r}>")
    return unsafe


def assert_no_unsafe_url(markdown: str) -> None:
    found = {name: unsafe_urls(render(markdown)) for name, render in RENDERERS.items()}
    assert found == {name: [] for name in RENDERERS}


# How a paper may spell each character of a scheme: as it is, in capitals, as a decimal or hex
# character reference (with or without its `;`), percent-encoded, backslash-escaped, as a code
# span (whose text Python-Markdown writes into the URL).
def spellings(char: str) -> list[str]:
    code = ord(char)
    forms = [char, char.upper(), f"&#{code};", f"&#x{code:x};", f"&#X{code:04X};", f"&#{code}"]
    forms += [f"%{code:02X}", f"\\{char}", f"`{char}`"]
    return forms + ["&colon;"] * (char == ":")


# What may sit before or inside a scheme and be gone by the time a browser reads it.
BETWEEN = ["\t", "\n", "\r\n", "\x00", "\x01", "\x1f", "\x7f", "&Tab;", "&NewLine;", "&#9;"]
BETWEEN += ["&#x0A;", "`", "``", "\n> ", "\n   ", " ", "\u00a0", "\x02", "\u2028"]
LEADING = [" ", "  ", "\n", "\t", "\x01", "&#32;", "&#x20;", "\u00a0", "<", "\n> "]
PAYLOADS = {
    "javascript": ["alert(1)", "void(alert(1))", "alert(document.cookie)"],
    "vbscript": ["msgbox(1)"],
    "data": [
        "text/html,<script>alert(1)</script>",
        "text/html;base64,PHNjcmlwdD4=",
        "image/svg+xml,<svg onload=alert(1)>",
    ],
}


@st.composite
def unsafe_destination(draw: st.DrawFn) -> str:
    """A script or document URL with up to three tricks in its scheme: each one spells a
    character otherwise or puts something after it (most tricks a renderer undoes, some break
    the URL: a few at a time, so that most URLs still run)."""
    scheme = draw(st.sampled_from(sorted(PAYLOADS)))
    plain = f"{scheme}:"
    spelled = [*plain]
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(plain) - 1))
        if draw(st.booleans()):
            spelled[at] = draw(st.sampled_from(spellings(plain[at])))
        else:
            spelled[at] += draw(st.sampled_from(BETWEEN))
    leading = draw(st.sampled_from(["", *LEADING]))
    return leading + "".join(spelled) + draw(st.sampled_from(PAYLOADS[scheme]))


LINK_TEXT = st.lists(
    st.sampled_from(["x", "a paper", " ", "\n", "[", "]", "[[x]]", "[a:1]", "*", "`", "!", "\\"]),
    max_size=6,
).map("".join)
# Each way to give a link its destination, `{text}` and `{url}` filled in.
FORMS = [
    "[{text}]({url})",
    "![{text}]({url})",
    "[{text}](<{url}>)",
    '[{text}]({url} "a title")',
    "[{text}](\n  {url})",
    "[{text}]({url}(nested(parens)))",
    "[[[{text}]]]({url})",
    "[{text}][r]\n\n[r]: {url}",
    "![{text}][r]\n\n[r]: <{url}>",
    "[r]\n\n[r]:\n   {url} 'a title'",
    "[{text}][]\n\n[{text}]: {url}",
    "[a\\]b]\n\n[a\\]b]: {url}",
    "A line.\n[r]: {url}\n\n[r]",
    "- [{text}]({url})\n- [r]\n\n  [r]: {url}",
    "<{url}>",
    # Python-Markdown deletes \x02 (joining `]` to `(`) and reads a lone \r as a line break;
    # CommonMark ends no destination at \u2028.
    "[{text}]\x02({url})",
    "A line.\r[r]: {url}\r\r[r]",
    "[r]: {url}\u2028more\n\n[r]",
]


@st.composite
def links(draw: st.DrawFn) -> str:
    form = draw(st.sampled_from(FORMS))
    link = form.format(text=draw(LINK_TEXT), url=draw(unsafe_destination()))
    if draw(st.booleans()):  # in a block quote
        link = "\n".join(f"> {line}" for line in link.split("\n"))
    return draw(st.sampled_from(["", "Results hold ", "1. ", "| a | "])) + link


# Link syntax in any order, around unsafe destinations: what no form above thought of.
SYNTAX = ["[", "]", "](", "]:", "]: ", "(", ")", "<", ">", "!", "\\", "\n", "\n\n", "> ", "- "]
SYNTAX += ["`", " ", "x", "[r]", "[r]: ", '"t"', "|", "http://example.org/", "\r", "\x02", "\u2028"]
FRAGMENTS = st.lists(
    st.one_of(unsafe_destination(), st.sampled_from(SYNTAX), st.text(max_size=2)),
    min_size=1,
    max_size=12,
).map("".join)


@hypothesis_settings(max_examples=400, deadline=None)
@given(text=st.one_of(links(), FRAGMENTS))
@example(text="[x](javascript:void(alert(1)))")
@example(text="[[[x]]](javascript:alert(2))")
@example(text="[a\nlink](javascript:alert(3))")
# Escaping the second label's `[` made `[\n\[]` one label for CommonMark: a new definition.
@example(text="[\n[][]\n\n[\n[]: data:text/html,<script>alert(1)</script>")
# A picture's URI for CommonMark, but not for Python-Markdown, which keeps the backtick.
@example(text="![](data:`image/svg+xml,<svg onload=alert(1)>)")
# Python-Markdown ends the destination at `(`, a title to the end of the line.
@example(text="[r]: data:text/html,<b>alert(1)</b>v\tb\n[r]")
def test_no_renderer_finds_a_script_or_document_url_in_safe_markdown(text: str) -> None:
    safe = safe_markdown(text)
    assert_no_unsafe_url(safe)
    assert safe_markdown(safe) == safe  # a file it wrote is left as it is


@pytest.mark.parametrize(
    ("paper_text", "shown"),
    [
        ("[x](javascript:void(alert(1)))", "[x](javascript:void(alert(1)))"),
        ("[[[x]]](javascript:alert(2))", "[[[x]]](javascript:alert(2))"),
        ("[a\nlink](javascript:alert(3))", "[a\nlink](javascript:alert(3))"),
        ("[x](<javascript:alert(4)>)", "[x](<javascript:alert(4)>)"),
        ("[x](jav&#x61;script:alert(5))", "[x](javascript:alert(5))"),
        ("[x](java\nscript:alert(6))", "[x](java\nscript:alert(6))"),
        ("[x]( \x01vbscript:msgbox(7))", "[x]( \x01vbscript:msgbox(7))"),
        ("[x](data:text/html,<b>8</b>)", "[x](data:text/html,<b>8</b>)"),
        ("[x](file:///etc/passwd)", "[x](file:///etc/passwd)"),
        ("[x][r]\n\n[r]: javascript:alert(9)", "[x][r]\n[r]: javascript:alert(9)"),
        ("> [x](\n> javascript:alert(10))", "[x](javascript:alert(10))"),
        ("<javascript:alert(11)>", "<javascript:alert(11)>"),
        ("[x](`java`script:alert(12))", "[x](javascript:alert(12))"),
        ("[x]\x02(javascript:alert(13))", "[x](javascript:alert(13))"),
        ("> [x](java\n> script:alert(14))", "[x](javascript:alert(14))"),
    ],
)
def test_a_script_link_is_shown_as_the_text_the_paper_wrote(paper_text: str, shown: str) -> None:
    safe = safe_markdown(paper_text)
    assert_no_unsafe_url(safe)
    for render in RENDERERS.values():
        page = read(render(safe))
        assert not [url for url in page.urls if url[0] in ("a", "img")]
        assert shown.replace("\n", "") in "".join(page.text).replace("\n", "")


def test_a_picture_may_be_a_data_uri_and_a_link_may_not() -> None:
    picture = "![chart](data:image/svg+xml;base64,PHN2Zz4=)"
    assert safe_markdown(picture) == picture
    for spelled_as_a_link in ["[chart](data:image/svg+xml;base64,PHN2Zz4=)", f"\\{picture}"]:
        assert "href" not in commonmark(safe_markdown(spelled_as_a_link))
        assert "href" not in python_markdown.markdown(safe_markdown(spelled_as_a_link))


ORDINARY = (
    "# Synthesis\n\n"
    "REV1 loss sensitises cells [paper_id:3], as two studies agree [a:1; b:2]. "
    "See [the docs](https://example.org/a_(b)), [the data](http://example.org/x?a=1&b=2), "
    "[write to us](mailto:team@example.org), ![figure](relationships.svg), "
    "[the next page](synthesis-papers-001.html) and [methods](#methods).\n\n"
    "- **Finding** [10.1093_nar_gkae252:4]: holds in vivo; R&D costs fell (p < 0.05 was not).\n"
    "- Table: | a | b |\n\n"
    "[paper_id:3]: a marker then a colon, opening a line\n"
    "[paper_id:3]: Finding: a word and a colon after it, then more text\n"
    "- [rev1fly:3]: `rev1fly:2` (a query summary's citation and its passages)\n"
)


def test_ordinary_text_with_safe_links_is_unchanged() -> None:
    # `<` is written `&lt;` (raw HTML never passes); everything else stays byte for byte.
    assert safe_markdown(ORDINARY) == ORDINARY.replace("<", "&lt;")


ORDINARY_PIECES = ["REV1", "loss", " ", ", ", ". ", "; ", "\n", "\n\n", "# ", "- ", "> ", "**"]
ORDINARY_PIECES += ["`code`", " (p. 3)", "[paper_id:3]", "[a:1; b:2]", "R&D", "&amp;", "x: y"]
ORDINARY_PIECES += ["[docs](https://example.org/a_(b))", "[mail](mailto:a@example.org)"]
ORDINARY_PIECES += ["![fig](relationships.svg)", "[next](synthesis-papers-001.html)", "|"]
ORDINARY_PIECES += ["[sec](#methods)", "![chart](data:image/svg+xml;base64,PHN2Zz4=)", "]:"]


@hypothesis_settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(ORDINARY_PIECES), max_size=20).map("".join))
def test_text_of_words_markers_and_safe_links_is_unchanged(text: str) -> None:
    assert safe_markdown(text) == text
