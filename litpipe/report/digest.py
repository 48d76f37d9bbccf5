"""A nightly digest's files: `<day>.md` and `<day>.html` in `LITPIPE_HOME/outputs/digests/`.

Both say the same: what changed in each collection's synthesis during the day, the day's new
papers, each with its abstract and key insights (or why it has none yet), then, per collection,
how their insights relate to those of the papers it already held, the works often cited, not in
it, that they cite (newly often cited, or more often), the citations they make or receive and
the rows they added to its comparison table, and the references. The page
is standalone like the synthesis page (inline CSS, no script, every text escaped) and links each
`[paper_id:page]` marker to its passage, shown at the end. Given the papers' citation keys
(`labels`), both cite each paper by its key with the page (`[muller2021rdcosts, p. 4]`), as the
collection's files do: the page keeps the marker in each link's pop-up, the Markdown in its
references.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path

from litpipe.files import write_atomically
from litpipe.ingest.often_cited import MIN_CITING_PAPERS
from litpipe.report import notices
from litpipe.report.answer_diff import digest_lines as answer_digest_lines
from litpipe.report.citations import list_item, work_html, work_markdown
from litpipe.report.comparison import row_html, row_markdown
from litpipe.report.graphs import (
    FIGURES,
    GRAPH_FILE,
    TYPES_FILE,
    relationship_graph_svg,
    type_distribution_svg,
)
from litpipe.report.markdown import safe_markdown
from litpipe.report.page import (
    NO_LABELS,
    PAGE_CSS,
    PAPERS_PER_PAGE,
    CitationLinks,
    Labels,
    figures_html,
    item_pages,
    labelled,
    page_file,
    paper_pages,
    reference_lines,
    standalone_page,
)
from litpipe.report.synthesis_diff import digest_lines
from litpipe.schemas import (
    RELATIONSHIP_TYPES,
    CitationEdge,
    Digest,
    DigestCollection,
    DigestPaper,
    Insight,
    OftenCited,
    Relationship,
)
from litpipe.text import counted

DIGESTS_FOLDER = "digests"
NOT_ANALYSED = (
    "Not yet analysed: its answers were not built when this digest was made. Materialize "
    "this day's nightly_digest partition again once they are."
)
_ORIGINS = {
    "relationship_analysis": "the collection's last relationship analysis",
    "paper_answers": "their answers",
}
_DIGEST_CSS = """
.new { color: #0a7d32; font-weight: 600; font-size: 0.85rem; }
.pending { color: #8a5a00; }
blockquote { margin: 0.5rem 0; padding-left: 0.8rem; border-left: 3px solid #eee; color: #333; }
"""


def nothing_new(day: str) -> str:
    return f"Nothing new on {day}: no paper arrived that day."


def _arrived(stamp: str) -> str:
    """`2026-01-04T10:00:00.000000+00:00` as a reader reads it: `10:00 UTC`."""
    try:
        return datetime.fromisoformat(stamp).strftime("%H:%M UTC")
    except ValueError:
        return stamp


def model_budget_line(digest: Digest) -> str | None:
    """The day's model budget across runs, where it was spent: when, and the calls it
    stopped."""
    spent = digest.model_budget
    if spent is None:
        return None
    refused, budget = spent.calls_not_made, spent.budget_usd
    amount = f"{budget:,.2f}" if budget >= 1 else f"{budget:g}"
    return (
        f"The nightly model budget (${amount}) was spent at "
        f"{_arrived(spent.spent_at)}; {counted(refused, 'call')} after it "
        f"{'was' if refused == 1 else 'were'} not made."
    )


def _budget_lines(digest: Digest) -> list[str]:
    line = model_budget_line(digest)
    return [line, ""] if line else []


def _summary(digest: Digest) -> str:
    per_collection = "; ".join(
        f"{len(c.new_papers)} in {c.collection} ({counted(c.existing_papers, 'paper')} there "
        "before)"
        for c in digest.collections
    )
    pending = sum(not paper.analysed for paper in digest.papers)
    waiting = f", {pending} not yet analysed" if pending else ""
    return (
        f"{counted(len(digest.papers), 'new paper')}{waiting}: {per_collection}. "
        f"Insights and relationships by {digest.engine}."
    )


def _counts(collection: DigestCollection, digest: Digest) -> str:
    types = Counter(r.type for r in collection.relationships)
    listed = ", ".join(f"{n} {kind}" for kind, n in sorted(types.items(), key=lambda t: -t[1]))
    arrived = set(collection.new_papers)
    new = sum(len(p.insights) for p in digest.papers if p.paper_id in arrived)
    count = len(collection.relationships)
    origins = " and ".join(_ORIGINS.get(o, o) for o in collection.existing_insights_from)
    return (
        f"{counted(count, 'relationship')} ({listed}) {'links' if count == 1 else 'link'} the "
        f"new papers' {counted(new, 'insight')} with one another and with those of the "
        f"{counted(collection.existing_papers, 'paper')} {collection.collection} held before"
        + (f" (their insights from {origins})." if origins else ".")
    )


def _no_relationship(collection: DigestCollection, digest: Digest) -> str:
    arrived = set(collection.new_papers)
    new = [p for p in digest.papers if p.paper_id in arrived]
    if not any(p.insights for p in new):
        return "Nothing to relate yet: the new papers are not analysed."
    if collection.existing_papers == 0 and len(new) == 1:
        return f"{collection.collection} held no paper before this day: nothing to relate to yet."
    return (
        f"No relationship found between the new papers' insights and those of the "
        f"{counted(collection.existing_papers, 'paper')} {collection.collection} held before."
    )


def _insights_by_id(digest: Digest, collection: DigestCollection) -> dict[str, Insight]:
    found = {i.insight_id: i for p in digest.papers for i in p.insights}
    found.update({i.insight_id: i for i in collection.insights})
    return found


def collection_figures(digest: Digest, collection: DigestCollection) -> dict[str, str]:
    """The relationship graph of a collection's section (its new papers and the papers they
    relate to) and its type distribution, by base file name; none without relationships."""
    if not collection.relationships:
        return {}
    insights = _insights_by_id(digest, collection)
    named = [
        insights[end].paper_id
        for relation in collection.relationships
        for end in (relation.source, relation.target)
        if end in insights
    ]
    counts = Counter(relation.type for relation in collection.relationships)
    return {
        GRAPH_FILE: relationship_graph_svg(
            list(dict.fromkeys([*collection.new_papers, *named])),
            digest.titles,
            list(insights.values()),
            collection.relationships,
        ),
        TYPES_FILE: type_distribution_svg({kind: counts[kind] for kind in RELATIONSHIP_TYPES}),
    }


def figure_file(digest: Digest, collection: DigestCollection, name: str) -> str:
    """Where a section's picture is written, next to the digest: one day holds several."""
    return f"{digest.day}-{collection.collection}-{name}"


def _new_ids(digest: Digest) -> set[str]:
    return {i.insight_id for p in digest.papers for i in p.insights}


def changes_markdown(digest: Digest) -> list[str]:
    """The digest's opening: per collection, its standing answers that changed during the
    day, each with the papers that brought the change, then what changed in its synthesis."""
    if not digest.changes and not digest.standing:
        return []
    arrived = Counter(c for paper in digest.papers for c in paper.collections)
    syntheses = {diff.collection: diff for diff in digest.changes}
    lines = ["## What changed", ""]
    for collection in dict.fromkeys([*syntheses, *(d.collection for d in digest.standing)]):
        answers = answer_digest_lines([d for d in digest.standing if d.collection == collection])
        if answers:
            answers = ["Standing questions whose answer changed:", "", *answers]
        synthesis = syntheses.get(collection)
        # Under the collection's heading, the answers first.
        heading, *rest = (
            digest_lines(synthesis, arrived[collection])
            if synthesis is not None
            else [f"### {collection}", ""]
        )
        lines += [heading, *rest[:1], *answers, *rest[1:]]
    return lines


def _changes_html(digest: Digest, labels: Labels) -> str:
    """`changes_markdown`'s lines as HTML: its headings, list items and paragraphs, escaped,
    each citation by its key where the paper has one (`labels`)."""
    parts = []
    for line in (labelled(each, labels, markdown=False) for each in changes_markdown(digest)[2:]):
        if not line.strip():
            continue
        item = line.lstrip()
        # A list item's depth is its indent (two spaces a level): nested ones say more of it.
        depth = (len(line) - len(item)) // 2
        if line.startswith("### "):
            parts.append(f"<h3>{html.escape(line[4:])}</h3>")
        elif item.startswith("- ") and depth:
            parts.append(
                f'<p class="meta" style="margin-left:{depth + 1}rem">{html.escape(item[2:])}</p>'
            )
        elif item.startswith("- "):
            parts.append(f'<p style="margin-left:1rem">• {html.escape(item[2:])}</p>')
        else:
            parts.append(f"<p>{html.escape(line)}</p>")
    return "\n".join(parts)


def digest_markdown(digest: Digest, labels: Labels = NO_LABELS) -> str:
    """The digest as a Markdown file (`digest_markdown_pages`' first)."""
    return digest_markdown_pages(digest, labels)[f"{digest.day}.md"]


def digest_markdown_pages(digest: Digest, labels: Labels = NO_LABELS) -> dict[str, str]:
    """The digest as a Markdown file, `<day>.md`, by file name; beyond PAPERS_PER_PAGE new
    papers, they are in files of their own (`<day>-papers-NNN.md`), which it lists and links.
    Given the papers' keys (`labels`), it cites each paper by its key with the page."""
    heading = f"# Nightly digest: {digest.day}"
    main = f"{digest.day}.md"
    if not digest.papers:
        lines = [heading, "", *changes_markdown(digest), *_budget_lines(digest)]
        text = labelled("\n".join([*lines, nothing_new(digest.day), ""]), labels)
        return {main: safe_markdown(text)}
    lines = [
        heading,
        "",
        *notices.markdown_lines(notices.digest_notice(digest)),
        *changes_markdown(digest),
        _summary(digest),
        "",
        *_budget_lines(digest),
        "## New papers",
        "",
    ]
    pages: dict[str, str] = {}
    if len(digest.papers) <= PAPERS_PER_PAGE:
        lines += [line for paper in digest.papers for line in _paper_markdown(paper)]
    else:
        lines += [f"{len(digest.papers)} new papers, in files of at most {PAPERS_PER_PAGE}:", ""]
        for start in range(0, len(digest.papers), PAPERS_PER_PAGE):
            shown = digest.papers[start : start + PAPERS_PER_PAGE]
            span = f"papers {start + 1}-{start + len(shown)} of {len(digest.papers)}"
            name = page_file(digest.day, start // PAPERS_PER_PAGE + 1, ".md")
            pages[name] = safe_markdown(
                "\n".join(
                    [
                        f"{heading}: new {span}",
                        "",
                        f"Of [the digest of {digest.day}]({main}).",
                        "",
                        labelled(
                            "\n".join(line for paper in shown for line in _paper_markdown(paper)),
                            labels,
                        ),
                        "## References",
                        "",
                        *reference_lines(
                            (i.text for p in shown for i in p.insights), digest.titles, None, labels
                        ),
                        "",
                    ]
                )
            )
            lines.append(f"- [{span.capitalize()}]({name}): {shown[0].title} … {shown[-1].title}")
        lines.append("")
    for collection in digest.collections:
        lines += [f"## How they relate to the rest of {collection.collection}", ""]
        lines += _relationships_markdown(collection, digest)
        lines += [
            f"![{FIGURES[name]}]({figure_file(digest, collection, name)})\n"
            for name in collection_figures(digest, collection)
        ]
        lines += _citations_markdown(collection, digest)
        lines += _comparison_markdown(collection, digest)
    # The insights this file quotes (with files of papers, those of the relationships only)
    # and the comparison rows' values.
    referenced = list(_shown_insights(digest)) if not pages else _related_insights(digest)
    values = [
        cell.value
        for c in digest.collections
        for row in c.comparison_rows[:PAPERS_PER_PAGE]
        for cell in row.cells
    ]
    references = reference_lines(
        [*(i.text for i in referenced), *values], digest.titles, None, labels
    )
    text = "\n".join([labelled("\n".join(lines), labels), "## References", "", *references, ""])
    return {main: safe_markdown(text), **pages}


def _related_insights(digest: Digest) -> list[Insight]:
    """The insights the relationships of each collection's section join."""
    found = []
    for collection in digest.collections:
        insights = _insights_by_id(digest, collection)
        ends = dict.fromkeys(e for r in collection.relationships for e in (r.source, r.target))
        found += [insights[end] for end in ends if end in insights]
    return found


def _paper_markdown(paper: DigestPaper) -> list[str]:
    lines = [
        f"### {paper.title}",
        "",
        f"`{paper.paper_id}` · {', '.join(paper.collections)} · arrived "
        f"{_arrived(paper.arrived_at)}",
        "",
    ]
    if paper.abstract.strip():
        lines += [" ".join(paper.abstract.split()), ""]
    if not paper.analysed:
        return [*lines, f"*{NOT_ANALYSED}*", ""]
    if not paper.insights:
        return [*lines, "*Analysed, but no question was answered.*", ""]
    return [*lines, "Key insights:", "", *(f"- {i.text}" for i in paper.insights), ""]


def _relationships_markdown(collection: DigestCollection, digest: Digest) -> list[str]:
    if not collection.relationships:
        return [_no_relationship(collection, digest), ""]
    insights = _insights_by_id(digest, collection)
    new = _new_ids(digest)
    lines = [_counts(collection, digest), ""]
    for relation in collection.relationships:
        lines.append(f"- **{relation.type}**: {relation.explanation}")
        for insight_id in (relation.source, relation.target):
            insight = insights.get(insight_id)
            if insight is not None:
                tag = "new, " if insight_id in new else ""
                title = digest.titles.get(insight.paper_id, insight.paper_id)
                lines.append(f"  - ({tag}*{title}*) {insight.text}")
    return [*lines, ""]


def _newly(work: OftenCited, new: set[str]) -> str:
    """Whether the day's papers made the work often cited, or more often."""
    before = len([p for p in work.citing_paper_ids if p not in new])
    if before < MIN_CITING_PAPERS:
        return "Newly often cited: the papers new today bring it here."
    return f"More often cited: {counted(before, 'paper')} cited it before today."


def _citation_line(edge: CitationEdge, titles: dict[str, str], new: set[str]) -> str:
    """`B, new today, cites A: “sentence” (p. 3)`, as text."""

    def named(paper_id: str) -> str:
        return titles.get(paper_id, paper_id) + (", new today," if paper_id in new else "")

    said = (
        f": “{' '.join(edge.contexts[0].sentence.split())}” (p. {edge.contexts[0].page})"
        if edge.contexts
        else " (in its reference list only)"
    )
    return f"{named(edge.citing)} cites {named(edge.cited).rstrip(',')}{said}"


def _citations_markdown(collection: DigestCollection, digest: Digest) -> list[str]:
    """What the collection's new papers changed in its citation graph: the works often cited
    they cite, the citations they make or receive (each at most PAPERS_PER_PAGE)."""
    new = set(collection.new_papers)
    lines = []
    works = collection.often_cited
    if works:
        lines += [f"### Often cited, not in {collection.collection}: what the new papers add", ""]
        for rank, work in enumerate(works[:PAPERS_PER_PAGE], start=1):
            described, citing, *sentences = work_markdown(work, digest.titles, new)
            lines += list_item(f"{rank}. ", [described, citing, _newly(work, new), *sentences])
        if len(works) > PAPERS_PER_PAGE:
            lines.append(f"\n… and {counted(len(works) - PAPERS_PER_PAGE, 'more work')}.")
        lines.append("")
    if collection.citations:
        lines += [f"### Citations within {collection.collection}, new today", ""]
        lines += [
            f"- {_citation_line(edge, digest.titles, new)}"
            for edge in collection.citations[:PAPERS_PER_PAGE]
        ]
        if len(collection.citations) > PAPERS_PER_PAGE:
            lines.append(f"- … and {len(collection.citations) - PAPERS_PER_PAGE} more.")
        lines.append("")
    return lines


def _citations_html(collection: DigestCollection, digest: Digest) -> str:
    """`_citations_markdown`'s sections, as HTML."""
    new = set(collection.new_papers)

    def paper(paper_id: str) -> str:
        return html.escape(digest.titles.get(paper_id, paper_id))

    parts = []
    works = collection.often_cited
    if works:
        items = "".join(
            work_html(work, paper, new, _newly(work, new)) for work in works[:PAPERS_PER_PAGE]
        )
        more = (
            f"<p>… and {counted(len(works) - PAPERS_PER_PAGE, 'more work')}.</p>"
            if len(works) > PAPERS_PER_PAGE
            else ""
        )
        parts.append(
            f"<h3>Often cited, not in {html.escape(collection.collection)}: what the new papers "
            f'add</h3><ol class="often-cited">{items}</ol>{more}'
        )
    if collection.citations:
        shown = collection.citations[:PAPERS_PER_PAGE]
        lines = "".join(
            f"<li>{html.escape(_citation_line(edge, digest.titles, new))}</li>" for edge in shown
        )
        left = len(collection.citations) - len(shown)
        parts.append(
            f"<h3>Citations within {html.escape(collection.collection)}, new today</h3>"
            f"<ul>{lines}{f'<li>… and {left} more.</li>' if left else ''}</ul>"
        )
    return "".join(parts)


def _comparison_heading(collection: DigestCollection) -> str:
    return f"New rows of the comparison table of {collection.collection}"


def _comparison_markdown(collection: DigestCollection, digest: Digest) -> list[str]:
    """The rows the new papers have in the collection's comparison table (at most
    PAPERS_PER_PAGE), each as its aspects and values."""
    rows = collection.comparison_rows
    if not rows:
        return []
    lines = [f"### {_comparison_heading(collection)}", ""]
    for row in rows[:PAPERS_PER_PAGE]:
        lines += row_markdown(row, digest.titles.get(row.paper_id, row.title))
    if len(rows) > PAPERS_PER_PAGE:
        lines.append(f"- … and {counted(len(rows) - PAPERS_PER_PAGE, 'more row')}.")
    return [*lines, ""]


def _comparison_html(collection: DigestCollection, digest: Digest, links: CitationLinks) -> str:
    """`_comparison_markdown`'s section, as HTML, each value's citations linked."""
    rows = collection.comparison_rows
    if not rows:
        return ""
    items = "".join(
        row_html(row, digest.titles.get(row.paper_id, row.title), links)
        for row in rows[:PAPERS_PER_PAGE]
    )
    left = len(rows) - PAPERS_PER_PAGE
    more = f"<li>… and {html.escape(counted(left, 'more row'))}.</li>" if left > 0 else ""
    return (
        f"<h3>{html.escape(_comparison_heading(collection))}</h3>"
        f'<ul class="comparison-rows">{items}{more}</ul>'
    )


def _shown_insights(digest: Digest) -> Iterable[Insight]:
    for paper in digest.papers:
        yield from paper.insights
    for collection in digest.collections:
        yield from collection.insights


def digest_html(digest: Digest, labels: Labels = NO_LABELS) -> str:
    """The digest's standalone page (`digest_pages`' first)."""
    return digest_pages(digest, labels)[f"{digest.day}.html"]


def digest_pages(digest: Digest, labels: Labels = NO_LABELS) -> dict[str, str]:
    """The digest's standalone page, `<day>.html`, by file name; beyond PAPERS_PER_PAGE new
    papers, they are on pages of their own (`<day>-papers-NNN.html`, each with its passages),
    which the page lists and links. Given the papers' keys (`labels`), its links read as them."""
    title = f"Nightly digest: {digest.day}"
    main = f"{digest.day}.html"
    pool = {c.chunk_id: c for c in digest.passages}
    links = CitationLinks(pool, digest.titles, labels)
    changed = (
        [("changes", "What changed", _changes_html(digest, labels))]
        if digest.changes or digest.standing
        else []
    )
    if not digest.papers:
        sections = [
            *changed,
            ("new", "New papers", f"<p>{html.escape(nothing_new(digest.day))}</p>"),
        ]
        meta = html.escape(nothing_new(digest.day))
        pages: dict[str, str] = {}
    else:
        papers = {paper.paper_id: paper for paper in digest.papers}

        def articles(shown: Sequence[str], span: str) -> str:
            own_links = links if not span else links.anew()
            listed = "\n".join(_paper_article(papers[p], own_links) for p in shown)
            if not span:
                return listed
            return standalone_page(
                f"{title}: {span}",
                f'New papers, {html.escape(span)}, of <a href="{main}">{html.escape(title)}</a>',
                [
                    ("new", f"New papers: {span}", listed),
                    ("passages", "Passages", own_links.passages()),
                ],
                PAGE_CSS + _DIGEST_CSS,
            )

        titles = {paper.paper_id: paper.title for paper in digest.papers}
        new_papers, pages = paper_pages(list(papers), titles, digest.day, articles)
        sections = [*changed, ("new", "New papers", new_papers)]
        for index, collection in enumerate(digest.collections, start=1):
            related, relationship_pages = _relationships_html(collection, digest, links)
            sections.append(
                (
                    f"relations-{index}",
                    f"How they relate to the rest of {collection.collection}",
                    related
                    + _citations_html(collection, digest)
                    + _comparison_html(collection, digest, links),
                )
            )
            pages.update(relationship_pages)
        # Last, once every text has said which passages it links to.
        sections.append(("passages", "Passages", links.passages()))
        meta = html.escape(_summary(digest))
    budget = model_budget_line(digest)
    if budget:
        meta += f"<br>\n{html.escape(budget)}"
    page = standalone_page(
        title, meta, sections, PAGE_CSS + _DIGEST_CSS, notices.digest_notice(digest)
    )
    return {main: page, **pages}


def _paper_article(paper: DigestPaper, links: CitationLinks) -> str:
    abstract = (
        f"<blockquote>{html.escape(' '.join(paper.abstract.split()))}</blockquote>"
        if paper.abstract.strip()
        else ""
    )
    if not paper.analysed:
        body = f'<p class="pending">{html.escape(NOT_ANALYSED)}</p>'
    elif not paper.insights:
        body = "<p>Analysed, but no question was answered.</p>"
    else:
        items = "".join(f"<li>{links.inline(i.text, i.citations)}</li>" for i in paper.insights)
        body = f"<h4>Key insights</h4><ul>{items}</ul>"
    return (
        f'<article id="paper-{html.escape(paper.paper_id)}">'
        f"<h3>{html.escape(paper.title)}</h3>"
        f'<p class="meta"><code>{html.escape(paper.paper_id)}</code> · '
        f"{html.escape(', '.join(paper.collections))} · arrived "
        f"{html.escape(_arrived(paper.arrived_at))}</p>{abstract}{body}</article>"
    )


def _relationships_html(
    collection: DigestCollection, digest: Digest, links: CitationLinks
) -> tuple[str, dict[str, str]]:
    """A collection's section: its counts, pictures and relationships table, or, past
    PAPERS_PER_PAGE relationships, the list of the pages holding them (by file name)."""
    if not collection.relationships:
        return f"<p>{html.escape(_no_relationship(collection, digest))}</p>", {}
    insights = _insights_by_id(digest, collection)
    new = _new_ids(digest)
    relationships = collection.relationships
    title = f"Nightly digest: {digest.day}"

    def named(insight_id: str) -> str:
        insight = insights.get(insight_id)
        return digest.titles.get(insight.paper_id, insight.paper_id) if insight else insight_id

    def table(start: int, stop: int, span: str) -> str:
        own_links = links if not span else links.anew()

        def described(insight_id: str) -> str:
            insight = insights.get(insight_id)
            if insight is None:
                return html.escape(insight_id)
            tag = '<span class="new">new</span> ' if insight_id in new else ""
            return (
                f"{tag}<strong>{html.escape(named(insight_id))}</strong><br>"
                f"{own_links.inline(insight.text, insight.citations)}"
            )

        rows = "".join(_row(relation, described) for relation in relationships[start:stop])
        listed = (
            '<table class="relationship-table"><thead><tr><th>From</th><th>To</th><th>Type</th>'
            f"<th>Explanation</th></tr></thead><tbody>{rows}</tbody></table>"
        )
        if not span:
            return listed
        back = f'<a href="{digest.day}.html">{html.escape(title)}</a>'
        return standalone_page(
            f"{title}: {collection.collection}, {span}",
            f"How the new papers relate to the rest of {html.escape(collection.collection)}, "
            f"{html.escape(span)}, of {back}",
            [
                ("items", f"Relationships: {span}", listed),
                ("passages", "Passages", own_links.passages()),
            ],
            PAGE_CSS + _DIGEST_CSS,
        )

    def label(index: int) -> str:
        relation = relationships[index]
        return f"{named(relation.source)} {relation.type} {named(relation.target)}"

    listing, pages = item_pages(
        len(relationships),
        "relationships",
        f"{digest.day}-{collection.collection}",
        label,
        table,
    )
    section = (
        f"<p>{html.escape(_counts(collection, digest))}</p>"
        f"{figures_html(collection_figures(digest, collection))}{listing}"
    )
    return section, pages


def _row(relation: Relationship, described: Callable[[str], str]) -> str:
    return (
        f"<tr><td>{described(relation.source)}</td><td>{described(relation.target)}</td>"
        f'<td class="type">{html.escape(relation.type)}</td>'
        f"<td>{html.escape(relation.explanation)}</td></tr>"
    )


def write_digest(out_dir: Path, digest: Digest, labels: Labels = NO_LABELS) -> dict[str, Path]:
    """Writes `<day>.md`, `<day>.html` (with its pages of new papers beyond PAPERS_PER_PAGE)
    and each section's pictures into `out_dir`, citing each paper by its key (`labels`) where
    it has one; their paths by file name."""
    contents = {**digest_markdown_pages(digest, labels), **digest_pages(digest, labels)}
    for collection in digest.collections:
        for name, svg in collection_figures(digest, collection).items():
            contents[figure_file(digest, collection, name)] = svg
    out_dir.mkdir(parents=True, exist_ok=True)
    return {name: write_atomically(out_dir / name, text) for name, text in contents.items()}
