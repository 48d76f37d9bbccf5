"""A collection's output files: `synthesis.md` and `plain.md` (each readable on its own, with its
references), and `synthesis.html`, one standalone page holding everything a reader follows.

The page needs nothing but a browser on a `file://` URL: inline CSS, no external resource, no
script. Every `[paper_id:page]` marker becomes a link to the cited passage, shown in the page's
Passages section (highlighted when targeted); a marker whose passage is not in the page stays
plain text, so every link of the page leads somewhere. A sentence the grading flagged (not
supported, or partially, by the passages it cites) is marked, with the reason as its tooltip.
What the offline engine wrote says so under the title (`litpipe.report.notices`). All text is
escaped.

Given the collection's citation graph, the files say how its papers cite one another (a table
beside the relationship map, each paper's "cites" and "cited by" lines) and which works they
keep citing that it lacks ("Often cited, not in your library", `report.citations`), and
`citations.json`, `often_cited.bib` and `often_cited.ris` are written beside them; without
it they are what they were before citations were read.

Given the papers' citation keys (`CollectionContent.keys`), every file cites a paper as the
reader knows it, by its key with the page (`[muller2021rdcosts, p. 4]`): the page keeps the
marker in each link's pop-up, the Markdown in its references, where each key leads its paper's
line and the paper's id follows.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from litpipe.files import write_atomically
from litpipe.report import notices
from litpipe.report.citations import (
    citation_files,
    citation_neighbours,
    citation_rows,
    citation_table,
    citations_markdown,
    often_cited_html,
    often_cited_markdown,
    paper_citations_html,
    row_label,
)
from litpipe.report.comparison import (
    COMPARISON_CSS,
    comparison_files,
    comparison_html,
    comparison_passages,
)
from litpipe.report.graphs import FIGURES, analysis_figures
from litpipe.report.markdown import safe_markdown
from litpipe.report.page import (
    GRADE_CSS,
    NO_LABELS,
    PAGE_CSS,
    PAPERS_PER_PAGE,
    CitationLinks,
    Labels,
    figures_html,
    item_pages,
    labelled,
    page_file,
    paper_anchor,
    paper_pages,
    reference_lines,
    standalone_page,
)
from litpipe.schemas import (
    Answer,
    CitationGraph,
    ComparisonTable,
    CrossPaperQuestions,
    FollowUp,
    Insight,
    PaperAnswers,
    Relationship,
    RelationshipAnalysis,
    RetrievedChunk,
    SentenceGrade,
    StepNotRun,
    Synthesis,
)
from litpipe.text import counted


def synthesis_markdown(
    synthesis: Synthesis,
    titles: Mapping[str, str],
    figures: Mapping[str, str] | None = None,
    analysis: RelationshipAnalysis | None = None,
    not_run: Sequence[StepNotRun] = (),
    citations: CitationGraph | None = None,
    labels: Labels = NO_LABELS,
) -> str:
    """The synthesis as a Markdown file: title, the offline notice when the offline engine wrote
    it or the `analysis` it is built from, how it was written, its text, the pictures in
    `figures` (file name, next to the Markdown, to its alternative text), given the collection's
    `citations` its papers citing one another and the works often cited, the papers it leaves
    out (with why), the optional steps that did not run (`not_run`, with why), and the
    references (each cited paper by title, with the pages cited, led by its author-year
    label where the `analysis` knows its authors and year). Given the papers' keys (`labels`),
    the text cites each paper by its key with the page, and its reference is led by it."""
    pictures = [f"![{alt}]({name})\n" for name, alt in (figures or {}).items()]
    cited = _citations_markdown(citations, analysis, titles) if citations is not None else []
    body = "\n".join(
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
            *cited,
            *_left_out_markdown(synthesis, titles),
            *_not_run_markdown(not_run),
        ]
    )
    references = reference_lines(
        [synthesis.text, *cited],
        titles,
        analysis.references if analysis is not None else None,
        labels,
    )
    text = "\n".join([labelled(body, labels), "## References", "", *references, ""])
    return safe_markdown(text)


def _citations_markdown(
    citations: CitationGraph, analysis: RelationshipAnalysis | None, titles: Mapping[str, str]
) -> list[str]:
    """The sections of the collection's papers citing one another and of the works often
    cited, each of at most PAPERS_PER_PAGE items (the page and `citations.json` hold all)."""
    rows = citation_rows(citations, analysis.cited_relationships if analysis is not None else [])
    listed = citations_markdown(rows[:PAPERS_PER_PAGE], titles) or [
        "No paper of the collection cites another."
    ]
    if len(rows) > PAPERS_PER_PAGE:
        listed.append(f"- … and {len(rows) - PAPERS_PER_PAGE} more, on {COLLECTION_PAGE}.")
    return [
        "## Citations within the collection",
        "",
        *listed,
        "",
        "## Often cited, not in your library",
        "",
        *often_cited_markdown(citations, titles, PAPERS_PER_PAGE),
        "",
    ]


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
        f"<p>This synthesis covers {counted(len(synthesis.papers), 'paper')} of the "
        f"collection; these {len(synthesis.left_out)} it leaves out:</p><ul>{items}</ul>"
    )


def steps_not_run(
    plain: Synthesis, analysis: RelationshipAnalysis, comparative: CrossPaperQuestions | None
) -> list[StepNotRun]:
    """The collection's optional steps that did not run, in the graph's order, each with why."""
    return [
        *([comparative.not_run] if comparative is not None and comparative.not_run else []),
        *analysis.follow_ups_not_run,
        *([plain.not_run] if plain.not_run else []),
    ]


def _not_run_markdown(not_run: Sequence[StepNotRun]) -> list[str]:
    """A section naming the optional steps that did not run, each with why."""
    if not not_run:
        return []
    return [
        "## Not run",
        "",
        "Optional steps that did not run; this is written without them:",
        "",
        *(f"- {record.line()}" for record in not_run),
        "",
    ]


def _not_run_html(not_run: Sequence[StepNotRun]) -> str:
    items = "".join(f"<li>{html.escape(record.line())}</li>" for record in not_run)
    return (
        "<p>Optional steps that did not run; this page is written without them:</p>"
        f"<ul>{items}</ul>"
    )


# The collection's page, beside `synthesis.md`; its pages of papers are `synthesis-papers-NNN.html`.
COLLECTION_PAGE = "synthesis.html"


@dataclass(frozen=True)
class CollectionContent:
    """What a collection's output files show: its two syntheses, the analysis they are written
    from, each paper's answers, the comparative answers, the papers' titles, the passages
    cited (beyond those of the answers), the collection's citation graph (None: the files
    say nothing of citations), its comparison table (None: none is shown) and the papers'
    citation keys the files cite them by."""

    synthesis: Synthesis
    plain: Synthesis
    analysis: RelationshipAnalysis
    answers: Mapping[str, PaperAnswers]
    comparative: CrossPaperQuestions | None
    titles: Mapping[str, str]
    passages: Mapping[str, RetrievedChunk]
    citations: CitationGraph | None = None
    comparison: ComparisonTable | None = None
    keys: Labels = field(default_factory=dict)
    """Each paper's citation key, by paper id (none: the files cite by the markers)."""


def collection_pages(content: CollectionContent) -> dict[str, str]:
    """The collection's standalone page, by file name (COLLECTION_PAGE): the expert synthesis,
    the papers it leaves out (with why), the optional steps that did not run (with why), the
    plain-language summary, the relationship map, given the citation graph the table of
    citations within the collection and the works often cited, each
    paper's Q&A, the comparative Q&A, and the cited passages. Beyond PAPERS_PER_PAGE papers
    the Q&A are on pages of their own, each with its passages, which the page lists and links
    (and so are the citations beyond PAPERS_PER_PAGE).

    A cited chunk is looked up in `passages`, then in the evidence of the answers and the
    passages holding the analysis' citing sentences.
    """
    synthesis, plain, analysis = content.synthesis, content.plain, content.analysis
    answers, comparative, titles = content.answers, content.comparative, content.titles
    citations = content.citations
    pool = {chunk.chunk_id: chunk for chunk in _evidence(answers, analysis, comparative)}
    pool.update(content.passages)
    comparison = content.comparison
    if comparison is not None:
        pool.update(comparison_passages(comparison))
    links = CitationLinks(pool, titles, content.keys)
    follow_ups = {follow_up.paper_id: follow_up for follow_up in analysis.follow_ups}
    stem = COLLECTION_PAGE.removesuffix(".html")
    papers = list(dict.fromkeys([*synthesis.papers, *answers]))
    paper_link = _paper_links(papers, titles, stem)
    # From a page beside the collection's, where its anchors are not.
    away_link = _paper_links(papers, titles, stem, COLLECTION_PAGE)
    cites, cited_by = citation_neighbours(citations) if citations is not None else ({}, {})

    back = f'<a href="{COLLECTION_PAGE}">{html.escape(synthesis.title)}</a>'

    def page_of(span: str, what: str, content: str, own_links: CitationLinks) -> str:
        """A page of `span` beside the collection's: its `what`, then its passages."""
        return standalone_page(
            f"{synthesis.title}: {span}",
            f"{html.escape(what)}, {html.escape(span)}, of {back}",
            [
                ("items", f"{what}: {span}", content),
                ("passages", "Passages", own_links.passages()),
            ],
            PAGE_CSS,
        )

    def qa(papers: Sequence[str], span: str) -> str:
        own_links = links if not span else links.anew()
        articles = "\n".join(
            _paper_article(
                paper_id,
                answers,
                follow_ups.get(paper_id),
                titles,
                own_links,
                None
                if citations is None
                else paper_citations_html(
                    cites.get(paper_id, []), cited_by.get(paper_id, []), paper_link
                ),
            )
            for paper_id in papers
        )
        if not span:
            return articles or "<p>No paper has answers.</p>"
        return page_of(span, "Questions and answers by paper", articles, own_links)

    insights = {insight.insight_id: insight for insight in analysis.insights}
    relationships = analysis.relationships

    def relationship_rows(start: int, stop: int, span: str) -> str:
        own_links = links if not span else links.anew()
        rows = _relationship_rows(relationships[start:stop], insights, titles, own_links)
        if not span:
            return _relationship_table(
                rows or '<tr><td colspan="4">No relationship found.</td></tr>'
            )
        return page_of(span, "Relationships between insights", _relationship_table(rows), own_links)

    def relationship_label(index: int) -> str:
        relation = relationships[index]
        ends = [insights.get(relation.source), insights.get(relation.target)]
        named = [_paper_names(end, titles) if end else "?" for end in ends]
        return f"{named[0]} {relation.type} {named[1]}"

    not_run = steps_not_run(plain, analysis, comparative)
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
        *([("not-run", "Steps not run", _not_run_html(not_run))] if not_run else []),
        ("plain", "Plain-language summary", _plain_summary_section(plain, links)),
        *(
            [("comparison", "Papers side by side", comparison_html(comparison, links, paper_link))]
            if comparison is not None
            else []
        ),
    ]
    table, relationship_files = item_pages(
        len(relationships),
        "relationships",
        COLLECTION_PAGE.removesuffix(".html"),
        relationship_label,
        relationship_rows,
    )
    sections.append(
        ("relationships", "Relationship map", _relationship_map(analysis, titles, table))
    )
    table_files: dict[str, str] = {}
    if citations is not None:
        rows = citation_rows(citations, analysis.cited_relationships)

        def citation_pages(start: int, stop: int, span: str) -> str:
            own_links = links if not span else links.anew()
            if not rows:
                return "<p>No paper of the collection cites another.</p>"
            listed = citation_table(rows[start:stop], away_link if span else paper_link, own_links)
            if not span:
                return listed
            return page_of(span, "Citations within the collection", listed, own_links)

        listing, table_files = item_pages(
            len(rows),
            "citations",
            stem,
            lambda index: row_label(rows[index], titles),
            citation_pages,
        )
        sections += [
            ("citations", "Citations within the collection", listing),
            (
                "often-cited",
                "Often cited, not in your library",
                often_cited_html(citations, paper_link, PAPERS_PER_PAGE),
            ),
        ]
    by_paper, paper_files = paper_pages(papers, titles, stem, qa)
    sections += [
        ("papers", "Questions and answers by paper", by_paper),
        ("comparative", "Comparative questions", _comparative(comparative, titles, links)),
    ]
    # Last, once every text has said which passages it links to.
    sections.append(("passages", "Passages", links.passages()))
    meta = (
        f"Collection {html.escape(synthesis.collection)} · "
        f"{counted(len(synthesis.papers), 'paper')} ·\n"
        f"written by {html.escape(synthesis.engine)} · pattern {html.escape(synthesis.pattern)}"
    )
    notice = notices.collection_notice(synthesis, plain, analysis, answers, comparative)
    css = PAGE_CSS + GRADE_CSS + (COMPARISON_CSS if comparison is not None else "")
    page = standalone_page(synthesis.title, meta, sections, css, notice)
    return {COLLECTION_PAGE: page, **relationship_files, **table_files, **paper_files}


def _paper_links(
    papers: Sequence[str], titles: Mapping[str, str], stem: str, main: str = ""
) -> Callable[[str], str]:
    """A paper's title as HTML, linked to its article: on the collection's page (`main`, its
    file, from a page beside it), or on the page of papers holding it beyond PAPERS_PER_PAGE
    (`paper_pages`' order); a paper with no article (neither in the synthesis nor answered)
    is its title alone."""
    paged = len(papers) > PAPERS_PER_PAGE
    where = {
        paper_id: (page_file(stem, index // PAPERS_PER_PAGE + 1) if paged else main)
        + f"#{paper_anchor(paper_id)}"
        for index, paper_id in enumerate(papers)
    }

    def link(paper_id: str) -> str:
        title = html.escape(titles.get(paper_id, paper_id))
        href = where.get(paper_id)
        return f'<a href="{html.escape(href)}">{title}</a>' if href is not None else title

    return link


def _sentence_grades(written: Synthesis) -> list[SentenceGrade]:
    return written.grades.sentences if written.grades else []


def _evidence(
    answers: Mapping[str, PaperAnswers],
    analysis: RelationshipAnalysis,
    comparative: CrossPaperQuestions | None,
) -> Iterable[RetrievedChunk]:
    for answer in _all_answers(answers, analysis, comparative):
        yield from answer.evidence
    # A citing sentence cites the chunk holding it (`[citing:page]`), as a synthesis may.
    for cited in analysis.cited_relationships:
        if cited.passage is not None:
            yield cited.passage


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
    if plain.not_run is not None:
        return f"<p>{html.escape(plain.not_run.line())}</p>"
    return f"<h3>{html.escape(plain.title)}</h3>\n" + links.markdown(
        plain.text, plain.citations, 4, _sentence_grades(plain)
    )


def _relationship_rows(
    relationships: Sequence[Relationship],
    insights: Mapping[str, Insight],
    titles: Mapping[str, str],
    links: CitationLinks,
) -> str:
    """The relationships' table rows: each end's paper and insight, the type, the explanation."""

    def described(insight_id: str) -> str:
        insight = insights.get(insight_id)
        if insight is None:
            return html.escape(insight_id)
        return (
            f"<strong>{html.escape(_paper_names(insight, titles))}</strong><br>"
            f"{links.inline(insight.text, insight.citations)}"
        )

    return "".join(
        f"<tr><td>{described(relation.source)}</td><td>{described(relation.target)}</td>"
        f'<td class="type">{html.escape(relation.type)}</td>'
        f"<td>{html.escape(relation.explanation)}</td></tr>"
        for relation in relationships
    )


def _relationship_table(rows: str) -> str:
    return (
        '<table class="relationship-table"><thead>\n'
        "<tr><th>From</th><th>To</th><th>Type</th><th>Explanation</th></tr></thead>\n"
        f"<tbody>{rows}</tbody></table>"
    )


def _relationship_map(analysis: RelationshipAnalysis, titles: Mapping[str, str], table: str) -> str:
    """The theme, the narrative, the pictures, the relationships' `table` (or the list of its
    pages), the type distribution."""
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
{table}
<h3>Relationship types</h3>
<table class="type-table"><thead><tr><th>Type</th><th>Relationships</th><th>Share</th></tr>
</thead><tbody>{distribution}</tbody></table>"""


def _paper_names(insight: Insight, titles: Mapping[str, str]) -> str:
    papers = [insight.paper_id] if insight.paper_id else insight.papers
    return "; ".join(titles.get(paper_id, paper_id) for paper_id in papers)


def _paper_article(
    paper_id: str,
    answers: Mapping[str, PaperAnswers],
    follow_up: FollowUp | None,
    titles: Mapping[str, str],
    links: CitationLinks,
    citing: str | None = None,
) -> str:
    """A paper's article; given its lines of `citing` (HTML; None without a citation graph), it
    shows them and gets its anchor, which those lines and the citations table link to."""
    own = answers[paper_id].answers if paper_id in answers else []
    asked = [*own, *(follow_up.answers if follow_up else [])]
    note = f'<p class="meta">Asked again: {html.escape(follow_up.reason)}</p>' if follow_up else ""
    anchor = f' id="{paper_anchor(paper_id)}"' if citing is not None else ""
    return (
        f"<article{anchor}><h3>{html.escape(titles.get(paper_id, paper_id))}</h3>"
        f'<p class="meta"><code>{html.escape(paper_id)}</code></p>{citing or ""}{note}'
        f"{_qa_list(asked, links)}</article>"
    )


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
    if comparative is not None and comparative.not_run is not None:
        return f"<p>{html.escape(comparative.not_run.line())}</p>"
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


def write_collection_outputs(out_dir: Path, content: CollectionContent) -> dict[str, Path]:
    """Writes `synthesis.md`, `plain.md`, `synthesis.html` (with its pages of papers beyond
    PAPERS_PER_PAGE) and the pictures the Markdown shows (`relationships.svg`,
    `relationship_types.svg`) into `out_dir`, and given the citation graph `citations.json`
    (with `often_cited.bib` and `often_cited.ris` when a work is often cited); their paths by
    file name."""
    synthesis, plain, analysis = content.synthesis, content.plain, content.analysis
    titles = content.titles
    contents = {
        "synthesis.md": synthesis_markdown(
            synthesis,
            titles,
            FIGURES,
            analysis,
            steps_not_run(plain, analysis, content.comparative),
            content.citations,
            content.keys,
        ),
        "plain.md": synthesis_markdown(
            plain,
            titles,
            analysis=analysis,
            not_run=[plain.not_run] if plain.not_run else [],
            labels=content.keys,
        ),
        **collection_pages(content),
        **analysis_figures(analysis, titles),
        **(citation_files(content.citations) if content.citations is not None else {}),
        **(comparison_files(content.comparison) if content.comparison is not None else {}),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    return {name: write_atomically(out_dir / name, text) for name, text in contents.items()}
