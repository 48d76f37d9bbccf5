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
from collections.abc import Iterable, Mapping
from pathlib import Path

from litpipe.files import write_atomically
from litpipe.report import notices
from litpipe.report.graphs import FIGURES, analysis_figures
from litpipe.report.markdown import safe_markdown
from litpipe.report.page import (
    GRADE_CSS,
    PAGE_CSS,
    CitationLinks,
    figures_html,
    reference_lines,
    standalone_page,
)
from litpipe.schemas import (
    Answer,
    CrossPaperQuestions,
    Insight,
    PaperAnswers,
    RelationshipAnalysis,
    RetrievedChunk,
    SentenceGrade,
    Synthesis,
)


# Any bracketed span; `markers_in` decides whether it is a citation.
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
        ("plain", "Plain-language summary", _plain_summary_section(plain, links)),
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


def _plain_summary_section(plain: Synthesis, links: CitationLinks) -> str:
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
