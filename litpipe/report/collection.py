"""A collection's output files: `synthesis.md` and `plain.md` (each readable on its own, with its
references), and `synthesis.html`, one standalone page holding everything a reader follows.

The page needs nothing but a browser on a `file://` URL: inline CSS, no external resource, no
script. Every `[paper_id:page]` marker becomes a link to the cited passage, shown in the page's
Passages section (highlighted when targeted); a marker whose passage is not in the page stays
plain text, so every link of the page leads somewhere. A sentence the grading flagged (not
supported, or partially, by the passages it cites) is marked, with the reason as its tooltip.
What the offline engine wrote says so under the title (`litpipe.report.notices`). All text is
escaped.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from litpipe.files import write_atomically
from litpipe.report import notices
from litpipe.report.graphs import FIGURES, GRAPH_FILE, TYPES_FILE, analysis_figures
from litpipe.report.markdown import safe_markdown
from litpipe.schemas import (
    Answer,
    Citation,
    CrossPaperQuestions,
    Insight,
    PaperAnswers,
    RelationshipAnalysis,
    RetrievedChunk,
    SentenceGrade,
    Synthesis,
)
from litpipe.text import marker, markers_in

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s+")
# Any bracketed span; `markers_in` decides whether it is a citation.
_BRACKETED = re.compile(r"\[[^\[\]\n]*\]")
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


@dataclass
class MarkdownBlock:
    """One block of a Markdown text: a heading (its text), a paragraph (its lines joined), or a
    list (one text per item)."""

    kind: Literal["heading", "paragraph", "bullets", "numbered"]
    texts: list[str] = field(default_factory=list)
    level: int = 0


def markdown_blocks(markdown: str) -> list[MarkdownBlock]:
    """The blocks of the Markdown the writers use: ATX headings, paragraphs and flat lists."""
    blocks: list[MarkdownBlock] = []
    current: MarkdownBlock | None = None
    for line in markdown.splitlines():
        heading = _HEADING.match(line)
        item = _LIST_ITEM.match(line)
        if heading:
            blocks.append(MarkdownBlock("heading", [heading.group(2)], len(heading.group(1))))
            current = None
        elif item:
            kind = "numbered" if item.group(1)[0].isdigit() else "bullets"
            if current is None or current.kind != kind:
                current = MarkdownBlock(kind)
                blocks.append(current)
            current.texts.append(line[item.end() :].strip())
        elif not line.strip():
            current = None
        elif current is None or current.kind == "heading":
            current = MarkdownBlock("paragraph", [line.strip()])
            blocks.append(current)
        else:
            # A wrapped line continues the paragraph or the list item above it.
            current.texts[-1] += " " + line.strip()
    return blocks


def synthesis_markdown(
    synthesis: Synthesis,
    titles: Mapping[str, str],
    figures: Mapping[str, str] | None = None,
    analysis: RelationshipAnalysis | None = None,
) -> str:
    """The synthesis as a Markdown file: title, the offline notice when the offline engine wrote
    it or the `analysis` it is built from, how it was written, its text, the pictures in
    `figures` (file name, next to the Markdown, to its alternative text), the papers it leaves
    out (with why), and the references (each cited paper by title, with the pages cited)."""
    pictures = [f"![{alt}]({name})\n" for name, alt in (figures or {}).items()]
    text = "\n".join(
        [
            f"# {synthesis.title}",
            "",
            *notices.markdown_lines(notices.synthesis_notice(synthesis, analysis)),
            f"*{synthesis.audience.capitalize()} synthesis of {synthesis.collection}; written by "
            f"{synthesis.engine}, pattern {synthesis.pattern}.*",
            "",
            synthesis.text.strip(),
            "",
            *(["## Relationships in pictures", "", *pictures] if pictures else []),
            *_left_out_markdown(synthesis, titles),
            "## References",
            "",
            *reference_lines([synthesis.text], titles),
            "",
        ]
    )
    return safe_markdown(text)


def _left_out_markdown(synthesis: Synthesis, titles: Mapping[str, str]) -> list[str]:
    """A section naming the collection's papers the synthesis leaves out, each with why."""
    if not synthesis.left_out:
        return []
    return [
        "## Left out",
        "",
        *(
            f"- **{titles.get(paper.paper_id, paper.paper_id)}** (`{paper.paper_id}`): "
            f"{paper.reason}"
            for paper in synthesis.left_out
        ),
        "",
    ]


def _left_out_html(synthesis: Synthesis, titles: Mapping[str, str]) -> str:
    items = "".join(
        f"<li><strong>{html.escape(titles.get(paper.paper_id, paper.paper_id))}</strong> "
        f"(<code>{html.escape(paper.paper_id)}</code>): {html.escape(paper.reason)}</li>"
        for paper in synthesis.left_out
    )
    return (
        f"<p>This synthesis covers {len(synthesis.papers)} papers of the collection; these "
        f"{len(synthesis.left_out)} it leaves out:</p><ul>{items}</ul>"
    )


def reference_lines(texts: Iterable[str], titles: Mapping[str, str]) -> list[str]:
    """A Markdown reference list: each paper the texts cite, with its cited pages in order of
    first citation."""
    pages: dict[str, dict[int, None]] = {}
    for paper_id, page in (found for text in texts for found in markers_in(text)):
        pages.setdefault(paper_id, {})[page] = None
    if not pages:
        return ["(no citations)"]
    return [
        f"- **{titles.get(paper_id, paper_id)}** (`{paper_id}`): "
        + ", ".join(f"p. {page} `{marker(paper_id, page)}`" for page in cited_pages)
        for paper_id, cited_pages in pages.items()
    ]


def chunk_anchor(chunk_id: str) -> str:
    """The page id of a chunk's passage: letters, digits and `-` kept, every other byte written
    as `_` and two hex digits (so distinct chunk ids never share an id)."""
    return "chunk-" + "".join(
        chr(byte) if byte in _ID_SAFE else f"_{byte:02x}" for byte in chunk_id.encode("utf-8")
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
    linked, in order, so the Passages section shows each of them once."""

    def __init__(self, pool: Mapping[str, RetrievedChunk], titles: Mapping[str, str]) -> None:
        self.pool = pool
        self.titles = titles
        self.linked: dict[str, None] = {}

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
        return _BRACKETED.sub(lambda match: self._bracket(match.group(), by_marker), escaped)

    def _bracket(self, bracket: str, by_marker: Mapping[str, Citation]) -> str:
        found = markers_in(bracket)
        if not found:
            return bracket
        written = [marker(paper_id, page) for paper_id, page in found]
        return "[" + "; ".join(self._link(each, by_marker.get(each)) for each in written) + "]"

    def _link(self, written: str, citation: Citation | None) -> str:
        label = html.escape(written[1:-1])
        chunk_ids = [c for c in citation.chunk_ids if c in self.pool] if citation else []
        if not chunk_ids:
            return f'<span class="unresolved" title="no passage for this citation">{label}</span>'
        self.linked.update(dict.fromkeys(chunk_ids))
        first, *others = chunk_ids
        extra = "".join(
            f'<a class="cite more" href="#{chunk_anchor(other)}" '
            f'title="{self._where(other)}">{number}</a>'
            for number, other in enumerate(others, start=2)
        )
        return (
            f'<a class="cite" href="#{chunk_anchor(first)}" title="{self._where(first)}">'
            f"{label}</a>{extra}"
        )

    def _where(self, chunk_id: str) -> str:
        """Where a passage lies, as a reader names it (escaped for an attribute)."""
        chunk = self.pool[chunk_id]
        return html.escape(
            f"{self.titles.get(chunk.paper_id, chunk.paper_id)}, {_pages(chunk)}, {chunk.section}"
        )

    def passages(self) -> str:
        if not self.linked:
            return "<p>No passage is cited.</p>"
        return "\n".join(self._passage(self.pool[chunk_id]) for chunk_id in self.linked)

    def _passage(self, chunk: RetrievedChunk) -> str:
        title = html.escape(self.titles.get(chunk.paper_id, chunk.paper_id))
        return (
            f'<div class="passage" id="{chunk_anchor(chunk.chunk_id)}">'
            f'<p class="where"><strong>{title}</strong> · {html.escape(chunk.section)} · '
            f"{_pages(chunk)} · <code>{html.escape(chunk.chunk_id)}</code></p>"
            f'<p class="text">{html.escape(" ".join(chunk.text.split()))}</p></div>'
        )


def _pages(chunk: RetrievedChunk) -> str:
    if chunk.page_start == chunk.page_end:
        return f"p. {chunk.page_start}"
    return f"pp. {chunk.page_start}-{chunk.page_end}"


def collection_html(
    synthesis: Synthesis,
    plain: Synthesis,
    analysis: RelationshipAnalysis,
    answers: Mapping[str, PaperAnswers],
    comparative: CrossPaperQuestions | None,
    titles: Mapping[str, str],
    passages: Mapping[str, RetrievedChunk],
) -> str:
    """The collection's standalone page: the expert synthesis, the papers it leaves out (with
    why), the plain-language summary, the relationship map, each paper's Q&A, the comparative
    Q&A, and the cited passages.

    A cited chunk is looked up in `passages`, then in the evidence of the answers.
    """
    pool = {chunk.chunk_id: chunk for chunk in _evidence(answers, analysis, comparative)}
    links = CitationLinks({**pool, **passages}, titles)
    # In page order: the Passages section lists the passages in the order they are first cited.
    sections = [
        (
            "synthesis",
            "Synthesis",
            links.markdown(synthesis.text, synthesis.citations, 3, _sentence_grades(synthesis)),
        ),
        *(
            [("left-out", "Papers left out", _left_out_html(synthesis, titles))]
            if synthesis.left_out
            else []
        ),
        ("plain", "Plain-language summary", _plain(plain, links)),
        ("relationships", "Relationship map", _relationship_map(analysis, titles, links)),
        (
            "papers",
            "Questions and answers by paper",
            _paper_qa(synthesis, answers, analysis, titles, links),
        ),
        ("comparative", "Comparative questions", _comparative(comparative, titles, links)),
    ]
    # Last, once every text has said which passages it links to.
    sections.append(("passages", "Passages", links.passages()))
    meta = (
        f"Collection {html.escape(synthesis.collection)} · {len(synthesis.papers)} papers ·\n"
        f"written by {html.escape(synthesis.engine)} · pattern {html.escape(synthesis.pattern)}"
    )
    notice = notices.collection_notice(synthesis, plain, analysis, answers, comparative)
    return standalone_page(synthesis.title, meta, sections, PAGE_CSS + GRADE_CSS, notice)


def _sentence_grades(written: Synthesis) -> list[SentenceGrade]:
    return written.grades.sentences if written.grades else []


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


def _evidence(
    answers: Mapping[str, PaperAnswers],
    analysis: RelationshipAnalysis,
    comparative: CrossPaperQuestions | None,
) -> Iterable[RetrievedChunk]:
    for answer in _all_answers(answers, analysis, comparative):
        yield from answer.evidence


def _all_answers(
    answers: Mapping[str, PaperAnswers],
    analysis: RelationshipAnalysis,
    comparative: CrossPaperQuestions | None,
) -> Iterable[Answer]:
    for paper in answers.values():
        yield from paper.answers
    for follow_up in analysis.follow_ups:
        yield from follow_up.answers
    if comparative is not None:
        yield from comparative.answers


def _plain(plain: Synthesis, links: CitationLinks) -> str:
    return f"<h3>{html.escape(plain.title)}</h3>\n" + links.markdown(
        plain.text, plain.citations, 4, _sentence_grades(plain)
    )


def _relationship_map(
    analysis: RelationshipAnalysis, titles: Mapping[str, str], links: CitationLinks
) -> str:
    insights = {insight.insight_id: insight for insight in analysis.insights}

    def described(insight_id: str) -> str:
        insight = insights.get(insight_id)
        if insight is None:
            return html.escape(insight_id)
        return (
            f"<strong>{html.escape(_paper_names(insight, titles))}</strong><br>"
            f"{links.inline(insight.text, insight.citations)}"
        )

    rows = (
        "".join(
            f"<tr><td>{described(relation.source)}</td><td>{described(relation.target)}</td>"
            f'<td class="type">{html.escape(relation.type)}</td>'
            f"<td>{html.escape(relation.explanation)}</td></tr>"
            for relation in analysis.relationships
        )
        or '<tr><td colspan="4">No relationship found.</td></tr>'
    )
    total = sum(analysis.type_distribution.values())
    distribution = "".join(
        f"<tr><td>{html.escape(kind)}</td><td>{count}</td>"
        f"<td>{f'{count / total:.0%}' if total else '-'}</td></tr>"
        for kind, count in analysis.type_distribution.items()
    )
    return f"""<p><strong>Theme:</strong> {html.escape(analysis.theme)}</p>
<p>{html.escape(analysis.narrative)}</p>
{figures_html(analysis_figures(analysis, titles))}
<h3>Relationships between insights</h3>
<table class="relationship-table"><thead>
<tr><th>From</th><th>To</th><th>Type</th><th>Explanation</th></tr></thead>
<tbody>{rows}</tbody></table>
<h3>Relationship types</h3>
<table class="type-table"><thead><tr><th>Type</th><th>Relationships</th><th>Share</th></tr>
</thead><tbody>{distribution}</tbody></table>"""


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


def _paper_names(insight: Insight, titles: Mapping[str, str]) -> str:
    papers = [insight.paper_id] if insight.paper_id else insight.papers
    return "; ".join(titles.get(paper_id, paper_id) for paper_id in papers)


def _paper_qa(
    synthesis: Synthesis,
    answers: Mapping[str, PaperAnswers],
    analysis: RelationshipAnalysis,
    titles: Mapping[str, str],
    links: CitationLinks,
) -> str:
    follow_ups = {follow_up.paper_id: follow_up for follow_up in analysis.follow_ups}
    articles: list[str] = []
    for paper_id in dict.fromkeys([*synthesis.papers, *answers]):
        own = answers[paper_id].answers if paper_id in answers else []
        follow_up = follow_ups.get(paper_id)
        asked = [*own, *(follow_up.answers if follow_up else [])]
        note = (
            f'<p class="meta">Asked again: {html.escape(follow_up.reason)}</p>' if follow_up else ""
        )
        articles.append(
            f"<article><h3>{html.escape(titles.get(paper_id, paper_id))}</h3>"
            f'<p class="meta"><code>{html.escape(paper_id)}</code></p>{note}'
            f"{_qa_list(asked, links)}</article>"
        )
    return "\n".join(articles) or "<p>No paper has answers.</p>"


def _qa_list(answers: list[Answer], links: CitationLinks) -> str:
    if not answers:
        return "<p>No answers.</p>"
    pairs = "".join(
        f"<dt>{html.escape(answer.question.text)} "
        f'<span class="style">({html.escape(answer.question.style.replace("_", " "))})</span>'
        f"</dt><dd>{links.inline(answer.text, answer.citations)}</dd>"
        for answer in answers
    )
    return f"<dl>{pairs}</dl>"


def _comparative(
    comparative: CrossPaperQuestions | None, titles: Mapping[str, str], links: CitationLinks
) -> str:
    if comparative is None or not comparative.answers:
        return "<p>No comparative questions were asked.</p>"
    compared = "".join(
        f"<dt>{html.escape(answer.question.text)}</dt>"
        f'<dd><p class="meta">Compares: '
        f"{html.escape('; '.join(titles.get(p, p) for p in answer.question.papers))}</p>"
        f"{links.inline(answer.text, answer.citations)}</dd>"
        for answer in comparative.answers
    )
    return f"<dl>{compared}</dl>"


def write_collection_outputs(
    out_dir: Path,
    synthesis: Synthesis,
    plain: Synthesis,
    analysis: RelationshipAnalysis,
    answers: Mapping[str, PaperAnswers],
    comparative: CrossPaperQuestions | None,
    titles: Mapping[str, str],
    passages: Mapping[str, RetrievedChunk],
) -> dict[str, Path]:
    """Writes `synthesis.md`, `plain.md`, `synthesis.html` and the pictures the Markdown shows
    (`relationships.svg`, `relationship_types.svg`) into `out_dir`; their paths by file name."""
    contents = {
        "synthesis.md": synthesis_markdown(synthesis, titles, FIGURES, analysis),
        "plain.md": synthesis_markdown(plain, titles, analysis=analysis),
        "synthesis.html": collection_html(
            synthesis, plain, analysis, answers, comparative, titles, passages
        ),
        **analysis_figures(analysis, titles),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    return {name: write_atomically(out_dir / name, text) for name, text in contents.items()}
