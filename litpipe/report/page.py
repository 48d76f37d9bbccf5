"""The page kit: what every standalone HTML page of litpipe shares (the collection's, the
digest's, a query summary's, a related-work section's).

A page needs nothing but a browser on a `file://` URL: inline CSS, no external resource, no
script but the few inline lines that sort a comparison table's columns (`report.comparison`).
`CitationLinks` turns `[paper_id:page]` markers into links to the cited passages (a marker
whose passage is not in the page stays plain text); `SentenceMarks` marks the sentences
the grading flagged, with the reason as a tooltip. All text is escaped.

A page (and a Markdown file, `labelled`) cites each paper as the reader knows it, by its
citation key with the page (`[muller2021rdcosts, p. 4]`), given the keys (`Labels`, from the
layer that holds the catalog); the litpipe marker (`refs.muller2021:4`) stays in the link's
pop-up, and a paper without a key is cited by its marker, as a page without keys cites all.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from litpipe.report.graphs import FIGURES, GRAPH_FILE, TYPES_FILE
from litpipe.schemas import Citation, PaperReference, RetrievedChunk, SentenceGrade
from litpipe.text import BRACKETED, markdown_blocks, marker, markers_in, replace_markers

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ID_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-")

PAGE_CSS = """
body { font: 16px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d1d1f;
  max-width: 52rem; margin: 0 auto; padding: 1rem 1.5rem 4rem; }
header { border-bottom: 1px solid #ddd; margin-bottom: 1.5rem; }
nav a { margin-right: 1rem; }
.meta { color: #666; font-size: 0.9rem; }
.notice { background: #fff4d6; border-left: 4px solid #b07800; padding: 0.5rem 0.8rem; }
section { margin-top: 2.5rem; }
a.cite { font-size: 0.85em; text-decoration: none; color: #0b57d0; }
a.cite.more { vertical-align: super; font-size: 0.7em; margin-left: 0.1em; }
.unresolved { font-size: 0.85em; color: #a00; }
table { border-collapse: collapse; width: 100%; font-size: 0.95rem; }
th, td { border: 1px solid #ddd; padding: 0.35rem 0.5rem; vertical-align: top; text-align: left; }
th { background: #f5f5f7; }
.type { white-space: nowrap; font-weight: 600; }
dt { font-weight: 600; margin-top: 1rem; }
dd { margin: 0.3rem 0 0 1rem; }
.style { color: #666; font-weight: normal; font-size: 0.85rem; }
.passage { border-left: 4px solid #ddd; padding: 0.4rem 0.8rem; margin: 1rem 0; }
.passage:target { border-left-color: #e8a400; background: #fff6d6; }
.passage .where { color: #555; font-size: 0.9rem; margin: 0 0 0.3rem; }
.passage .text { margin: 0; }
figure { margin: 1.5rem 0; }
figure svg { display: block; max-width: 100%; height: auto; }
figcaption { color: #666; font-size: 0.9rem; }
"""
# The marks of graded sentences, for any page that shows grades (see `SentenceMarks`).
GRADE_CSS = """
.graded { border-bottom: 2px dotted; cursor: help; }
.graded.unsupported { background: #fde8e8; border-bottom-color: #c00; }
.graded.partially_supported { background: #fff4d6; border-bottom-color: #b07800; }
.grade-mark { font-size: 0.75em; font-weight: 600; margin-left: 0.15em; }
.unsupported .grade-mark { color: #c00; }
.partially_supported .grade-mark { color: #b07800; }
.legend { font-size: 0.9rem; color: #444; }
"""
_GRADE_MARKS = {"unsupported": "✗", "partially_supported": "≈"}


# Each paper's citation key, by paper id: what the pages and the Markdown cite it by.
Labels = Mapping[str, str]
NO_LABELS: Labels = {}  # no keys: every citation by its marker
# What Markdown would read as markup in a key (`[`, `]` end a bracket, `*` and `` ` `` emphasis
# and code): escaped, so the key reads as written.
_MARKDOWN_SPECIAL = re.compile(r"([\\\[\]*`])")


def citation_label(paper_id: str, page: int, labels: Labels) -> str:
    """How a reader sees a citation: `muller2021rdcosts, p. 4` for a paper with a key, else
    its marker's text, `refs.muller2021:4` (text: escape it for HTML or Markdown)."""
    key = labels.get(paper_id)
    return f"{key}, p. {page}" if key else f"{paper_id}:{page}"


def labelled(text: str, labels: Labels, markdown: bool = True) -> str:
    """Markdown (or plain `text`, `markdown=False`) with each bracket of markers written as the
    reader cites: `[refs.a:4; b:7]` as `[muller2021rdcosts, p. 4; smith2020deep, p. 7]`
    (`citation_label`; a paper without a key keeps its marker), the keys' Markdown characters
    escaped in Markdown. The same text without keys."""
    if not labels:
        return text
    label = _markdown_label if markdown else citation_label

    def shown(cited: list[tuple[str, int]]) -> str:
        return "[" + "; ".join(label(paper, page, labels) for paper, page in cited) + "]"

    return replace_markers(text, shown)


def cited_as(citation: Citation, labels: Labels) -> str:
    """A citation as a Markdown list of citations names it: `muller2021rdcosts, p. 4
    (`[refs.muller2021:4]`)` for a paper with a key, else its marker."""
    if not labels.get(citation.paper_id):
        return citation.marker
    return f"{_markdown_label(citation.paper_id, citation.page, labels)} (`{citation.marker}`)"


def reference_lines(
    texts: Iterable[str],
    titles: Mapping[str, str],
    references: Mapping[str, PaperReference] | None = None,
    labels: Labels = NO_LABELS,
) -> list[str]:
    """A Markdown reference list: each paper the texts cite, with its cited pages in order of
    first citation; a paper whose authors, year, venue or DOI are known (`references`, from the
    user's reference manager) is led by its author-year label and followed by its venue and
    DOI. A paper with a key (`labels`) is led by it, as the text cites it, and its id follows
    (`muller2021rdcosts: Müller et al. (2021). **Title**. (`refs.muller2021`): p. 4, p. 7`);
    one without is listed with its markers."""
    pages: dict[str, dict[int, None]] = {}
    for paper_id, page in (found for text in texts for found in markers_in(text)):
        pages.setdefault(paper_id, {})[page] = None
    if not pages:
        return ["(no citations)"]
    known = references or {}
    return [
        f"- {_key_prefix(paper_id, labels)}"
        f"{described_reference(titles.get(paper_id, paper_id), known.get(paper_id))} "
        f"(`{paper_id}`): "
        + ", ".join(
            f"p. {page}" if labels.get(paper_id) else f"p. {page} `{marker(paper_id, page)}`"
            for page in cited_pages
        )
        for paper_id, cited_pages in pages.items()
    ]


def _markdown_label(paper_id: str, page: int, labels: Labels) -> str:
    """`citation_label` as Markdown: a key's Markdown characters escaped."""
    key = labels.get(paper_id)
    return f"{markdown_key(key)}, p. {page}" if key else citation_label(paper_id, page, labels)


def _key_prefix(paper_id: str, labels: Labels) -> str:
    key = labels.get(paper_id)
    return f"{markdown_key(key)}: " if key else ""


def markdown_key(key: str) -> str:
    """A key as Markdown text: its `[`, `]`, `*`, `` ` `` and backslashes escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", key)


def described_reference(title: str, reference: PaperReference | None) -> str:
    """A reference's text before its id: `Müller et al. (2021). **Title**. *Venue*.
    https://doi.org/…` (`**Title** (2021).` without authors), or the bold title alone when
    nothing more is known."""
    if reference is None:
        return f"**{title}**"
    if reference.authors:
        parts = [f"{reference.label()}.", f"**{title.rstrip('.')}**."]
    else:
        parts = [f"**{title.rstrip('.')}**" + (f" ({reference.year})." if reference.year else ".")]
    if reference.venue:
        parts.append(f"*{reference.venue.rstrip('.')}*.")
    if reference.doi:
        parts.append(f"https://doi.org/{reference.doi}")
    return " ".join(parts)


def chunk_anchor(chunk_id: str) -> str:
    """The page id of a chunk's passage: letters, digits and `-` kept, every other byte written
    as `_` and two hex digits (so distinct chunk ids never share an id)."""
    return "chunk-" + _id_safe(chunk_id)


def paper_anchor(paper_id: str) -> str:
    """The page id of a paper's article, written as `chunk_anchor` writes a chunk's."""
    return "paper-" + _id_safe(paper_id)


def _id_safe(text: str) -> str:
    return "".join(
        chr(byte) if byte in _ID_SAFE else f"_{byte:02x}" for byte in text.encode("utf-8")
    )


class SentenceMarks:
    """Marks the flagged sentences of one graded text as its blocks are rendered.

    `grades` are the text's sentence grades in text order (`OutputGrades.sentences`); those
    not fully supported are marked. Render the text's blocks in order through `render`: each
    flagged sentence is found in the block that holds it (spacing aside), rendered by the
    caller's function like the rest, and wrapped in a `<span class="graded <verdict>">` whose
    title gives the reason, followed by a visible mark (✗ unsupported, ≈ partially supported).
    Pages using it add `GRADE_CSS` and `legend()`.
    """

    def __init__(self, grades: Iterable[SentenceGrade]) -> None:
        self.pending = [g for g in grades if g.verdict in _GRADE_MARKS]
        self.count = len(self.pending)

    def render(self, text: str, inline: Callable[[str], str]) -> str:
        """`text` rendered by `inline`, its flagged sentences marked."""
        pieces: list[str] = []
        cursor = 0
        while self.pending:
            words = self.pending[0].sentence.split()
            found = re.compile(r"\s+".join(map(re.escape, words))).search(text, cursor)
            if not words or found is None:
                break  # in a later block
            grade = self.pending.pop(0)
            pieces.append(inline(text[cursor : found.start()]))
            pieces.append(graded_span(inline(found.group()), grade))
            cursor = found.end()
        pieces.append(inline(text[cursor:]))
        return "".join(pieces)

    def legend(self) -> str:
        """A line saying what the marks mean; empty when nothing is flagged."""
        if not self.count:
            return ""
        return (
            f'<p class="legend">{self.count} sentence(s) marked: <span class="graded '
            f'unsupported">✗ unsupported</span> or <span class="graded partially_supported">'
            "≈ partially supported</span> by the passages they cite; hover one for the "
            "reason.</p>"
        )


def graded_span(inner: str, grade: SentenceGrade) -> str:
    """A flagged sentence's HTML (`inner`), wrapped and marked; its title (the tooltip) gives
    each flagged segment's verdict and reason."""
    title = html.escape(
        "; ".join(
            f"{segment.verdict.replace('_', ' ')}: {segment.reason}"
            for segment in grade.segments
            if segment.verdict != "supported"
        )
    )
    return (
        f'<span class="graded {grade.verdict}" title="{title}">{inner}'
        f'<sup class="grade-mark">{_GRADE_MARKS[grade.verdict]}</sup></span>'
    )


class CitationLinks:
    """Renders the page's texts with their markers linked, and remembers which passages were
    linked, in order, so the Passages section shows each of them once.

    A link reads as the reader cites the paper (`citation_label`: its key with the page, given
    `labels`, else its marker's text); its pop-up names the marker and the passage."""

    def __init__(
        self,
        pool: Mapping[str, RetrievedChunk],
        titles: Mapping[str, str],
        labels: Labels = NO_LABELS,
    ) -> None:
        self.pool = pool
        self.titles = titles
        self.labels = labels
        self.linked: dict[str, None] = {}

    def anew(self) -> CitationLinks:
        """Links of the same passages, titles and labels, for a page of its own: none linked
        yet."""
        return CitationLinks(self.pool, self.titles, self.labels)

    def markdown(
        self,
        text: str,
        cited: list[Citation],
        top_level: int,
        grades: list[SentenceGrade] | None = None,
    ) -> str:
        """The Markdown as HTML, its markers linked and, given its sentence `grades`, its
        flagged sentences marked under a legend."""
        marks = SentenceMarks(grades or [])

        def prose(part: str) -> str:
            return marks.render(part, lambda piece: self.inline(piece, cited))

        rendered: list[str] = []
        for block in markdown_blocks(text):
            if block.kind == "heading":
                level = min(block.level + top_level - 1, 6)
                rendered.append(f"<h{level}>{self.inline(block.texts[0], cited)}</h{level}>")
            elif block.kind == "paragraph":
                rendered.append(f"<p>{prose(block.texts[0])}</p>")
            else:
                tag = "ol" if block.kind == "numbered" else "ul"
                items = "".join(f"<li>{prose(item)}</li>" for item in block.texts)
                rendered.append(f"<{tag}>{items}</{tag}>")
        return "\n".join([marks.legend(), *rendered] if marks.count else rendered)

    def inline(self, text: str, cited: list[Citation]) -> str:
        by_marker = {citation.marker: citation for citation in cited}
        escaped = _BOLD.sub(r"<strong>\1</strong>", html.escape(text))
        return BRACKETED.sub(lambda match: self._bracket(match.group(), by_marker), escaped)

    def _bracket(self, bracket: str, by_marker: Mapping[str, Citation]) -> str:
        found = markers_in(bracket)
        if not found:
            return bracket
        return (
            "["
            + "; ".join(
                self._link(paper_id, page, by_marker.get(marker(paper_id, page)))
                for paper_id, page in found
            )
            + "]"
        )

    def _link(self, paper_id: str, page: int, citation: Citation | None) -> str:
        label = html.escape(citation_label(paper_id, page, self.labels))
        # The marker in the pop-up where the link reads otherwise: the id stays one hover away.
        named = f"{paper_id}:{page}" if self.labels.get(paper_id) else ""
        chunk_ids = [c for c in citation.chunk_ids if c in self.pool] if citation else []
        if not chunk_ids:
            why = "no passage for this citation"
            title = html.escape(f"{named}: {why}" if named else why)
            return f'<span class="unresolved" title="{title}">{label}</span>'
        self.linked.update(dict.fromkeys(chunk_ids))
        first, *others = chunk_ids
        extra = "".join(
            f'<a class="cite more" href="#{chunk_anchor(other)}" '
            f'title="{self._where(other)}">{number}</a>'
            for number, other in enumerate(others, start=2)
        )
        where = self._where(first)
        title = f"{html.escape(named)} · {where}" if named else where
        return f'<a class="cite" href="#{chunk_anchor(first)}" title="{title}">{label}</a>{extra}'

    def _where(self, chunk_id: str) -> str:
        """Where a passage lies, as a reader names it (escaped for an attribute)."""
        chunk = self.pool[chunk_id]
        title = self.titles.get(chunk.paper_id, chunk.paper_id)
        return html.escape(f"{title}, {pages_label(chunk)}, {chunk.section}")

    def passages(self) -> str:
        if not self.linked:
            return "<p>No passage is cited.</p>"
        return "\n".join(self._passage(self.pool[chunk_id]) for chunk_id in self.linked)

    def _passage(self, chunk: RetrievedChunk) -> str:
        title = html.escape(self.titles.get(chunk.paper_id, chunk.paper_id))
        key = self.labels.get(chunk.paper_id)
        keyed = f" · {html.escape(key)}" if key else ""
        return (
            f'<div class="passage" id="{chunk_anchor(chunk.chunk_id)}">'
            f'<p class="where"><strong>{title}</strong>{keyed} · {html.escape(chunk.section)} · '
            f"{pages_label(chunk)} · <code>{html.escape(chunk.chunk_id)}</code></p>"
            f'<p class="text">{html.escape(" ".join(chunk.text.split()))}</p></div>'
        )


def pages_label(chunk: RetrievedChunk) -> str:
    """Where a passage lies in its paper: `p. 3` or `pp. 3-4`."""
    if chunk.page_start == chunk.page_end:
        return f"p. {chunk.page_start}"
    return f"pp. {chunk.page_start}-{chunk.page_end}"


def standalone_page(
    title: str,
    meta: str,
    sections: list[tuple[str, str, str]],
    css: str,
    notice: str | None = None,
) -> str:
    """A page that needs nothing beside it: the title, a line of `meta` (HTML), the offline
    `notice` (text) when there is one, a navigation bar, then each (anchor, heading, HTML
    content) section."""
    shown = f'<p class="notice" role="note">{html.escape(notice)}</p>\n' if notice else ""
    nav = "".join(
        f'<a href="#{anchor}">{html.escape(heading)}</a>' for anchor, heading, _ in sections
    )
    body = "\n".join(
        f'<section id="{anchor}">\n<h2>{html.escape(heading)}</h2>\n{content}\n</section>'
        for anchor, heading, content in sections
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{css}</style>
</head>
<body>
<header>
<h1>{html.escape(title)}</h1>
<p class="meta">{meta}</p>
{shown}<nav>{nav}</nav>
</header>
{body}
</body>
</html>
"""


def figures_html(figures: Mapping[str, str]) -> str:
    """The pictures (SVG by file name, as `analysis_figures` gives them), inline: the page
    stays one file, and their tooltips (full titles, counts by type) work, which they would not
    through an <img>."""
    captions = {
        GRAPH_FILE: "Papers as nodes, each related pair joined by one line: its colour "
        "and dashes give the pair's most frequent relationship type, its width how many "
        "relationships join them. Hover a paper or a line for its title or its counts.",
        TYPES_FILE: "Relationships of each type (a collection where one type "
        "holds them all is a sign the analysis did not tell the papers apart).",
    }
    return "\n".join(
        f'<figure class="chart">{svg}<figcaption>{html.escape(captions.get(name, FIGURES[name]))}'
        "</figcaption></figure>"
        for name, svg in figures.items()
    )


# A page lists at most this many papers (or relationships): a collection or a day of thousands
# gets a page that links to pages of them (`paper_pages`), never one wall of every paper.
PAPERS_PER_PAGE = 100


def page_file(stem: str, number: int, suffix: str = ".html", kind: str = "papers") -> str:
    """The file of the `number`th page (from 1) of `kind` of a page saved as `stem`.html."""
    return f"{stem}-{kind}-{number:03d}{suffix}"


def item_pages(
    count: int,
    kind: str,
    stem: str,
    label: Callable[[int], str],
    render: Callable[[int, int, str], str],
) -> tuple[str, dict[str, str]]:
    """(the items' section of the main page, the other pages by file name): all `count` items
    on the main page (`render(0, count, "")`) when they are at most PAPERS_PER_PAGE; else a list
    of pages, each linked with the labels (text) of its first and last item, and each page
    (`render(start, stop, its range)`) standing alone beside the main page."""
    if count <= PAPERS_PER_PAGE:
        return render(0, count, ""), {}
    pages: dict[str, str] = {}
    items = []
    for start in range(0, count, PAPERS_PER_PAGE):
        stop = min(start + PAPERS_PER_PAGE, count)
        span = f"{kind} {start + 1}-{stop} of {count}"
        name = page_file(stem, start // PAPERS_PER_PAGE + 1, kind=kind)
        pages[name] = render(start, stop, span)
        first, last = html.escape(label(start)), html.escape(label(stop - 1))
        items.append(
            f'<li><a href="{name}">{html.escape(span.capitalize())}</a>: {first} … {last}</li>'
        )
    listing = (
        f"<p>{count} {kind}, on {len(pages)} pages of at most {PAPERS_PER_PAGE} "
        f'(in the order of this page):</p>\n<ol class="pages">{"".join(items)}</ol>'
    )
    return listing, pages


def paper_pages(
    papers: Sequence[str],
    titles: Mapping[str, str],
    stem: str,
    render: Callable[[Sequence[str], str], str],
) -> tuple[str, dict[str, str]]:
    """`item_pages` of papers, labelled by their titles: `render(papers, range)`."""
    return item_pages(
        len(papers),
        "papers",
        stem,
        lambda index: titles.get(papers[index], papers[index]),
        lambda start, stop, span: render(papers[start:stop], span),
    )
