"""A collection's citation graph as its reader meets it: the files beside `synthesis.md`
(`citations.json`; `often_cited.bib` and `often_cited.ris`, which a reference manager imports),
and the pieces `report.collection` and `report.digest` place in their pages and Markdown: the
table of the collection's papers citing one another, each paper's "cites" and "cited by"
lines, and the works "Often cited, not in your library".

Everything here is text from PDFs (titles, sentences, reference entries): escaped on the pages,
made inert in the Markdown by `safe_markdown`, which every Markdown file goes through.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from litpipe.report.bibliography import ARXIV_ABS, bibtex, ris
from litpipe.report.page import CitationLinks, described_reference
from litpipe.schemas import (
    Citation,
    CitationContext,
    CitationGraph,
    CitedRelationship,
    OftenCited,
    PaperReference,
    ReferenceRecord,
    RetrievedChunk,
)
from litpipe.text import counted, marker

CITATIONS_JSON = "citations.json"
OFTEN_CITED_BIB = "often_cited.bib"
OFTEN_CITED_RIS = "often_cited.ris"
REFERENCE_LIST_ONLY = "cites (reference list only)"
# A work many papers cite has as many sentences: its entry shows the first few and counts the
# rest, which `citations.json` holds.
SENTENCES_SHOWN = 3

# A paper's title as HTML, linked to where its article is when the page has one.
PaperLink = Callable[[str], str]


def citation_files(graph: CitationGraph) -> dict[str, str]:
    """`citations.json`, and, when some work is often cited, `often_cited.bib` and
    `often_cited.ris`, by file name."""
    records = [work.reference for work in graph.often_cited]
    return {
        CITATIONS_JSON: citations_json(graph),
        **({OFTEN_CITED_BIB: bibtex(records), OFTEN_CITED_RIS: ris(records)} if records else {}),
    }


def citations_json(graph: CitationGraph) -> str:
    """The graph as JSON for another program: its edges by paper id, each with its citing
    sentences (their intent by label), the works often cited, the references left unmatched
    as ambiguous, and per paper what of its references could not be used. Offsets into the
    papers' text are left out: they mean nothing without the parsed documents."""
    shape = {
        "collection": graph.collection,
        "papers": graph.papers,
        "edges": [
            {
                "citing": edge.citing,
                "cited": edge.cited,
                "rule": edge.rule,
                "contexts": [_context_json(context) for context in edge.contexts],
            }
            for edge in graph.edges
        ],
        "often_cited": [work.model_dump(mode="json") for work in graph.often_cited],
        "ambiguous": [reference.model_dump(mode="json") for reference in graph.ambiguous],
        "counts": [counts.model_dump(mode="json") for counts in graph.counts],
    }
    return json.dumps(shape, indent=2, ensure_ascii=False) + "\n"


def _context_json(context: CitationContext) -> dict[str, object]:
    return {
        "sentence": context.sentence,
        "page": context.page,
        "section": context.section,
        "marker": context.marker,
        "intent": context.intent.label if context.intent is not None else None,
    }


@dataclass(frozen=True)
class CitationRow:
    """One line of the table of citations within the collection: a typed relationship, or a
    citation its reference list alone makes."""

    citing: str
    cited: str
    type: str
    context: CitationContext | None = None
    passage: RetrievedChunk | None = None
    why: str = ""

    def quoted(self) -> str:
        """The citing sentence in quotes, on one line; empty for a citation of the list only."""
        return f"“{' '.join(self.context.sentence.split())}”" if self.context is not None else ""

    def citation(self) -> Citation | None:
        """The sentence's `[citing:page]`, citing the passage holding it (none known: the
        marker stays plain); None for a citation of the list only."""
        if self.context is None:
            return None
        return Citation(
            marker=marker(self.citing, self.context.page),
            paper_id=self.citing,
            page=self.context.page,
            chunk_ids=[self.passage.chunk_id] if self.passage is not None else [],
        )


def citation_rows(graph: CitationGraph, cited: Sequence[CitedRelationship]) -> list[CitationRow]:
    """The relationships the citing sentences type (`cited`, the analysis'), then each citing
    pair of the graph they do not cover, once: by its reference list only, or (an analysis
    made before the graph) by its first citing sentence, untyped."""
    rows = [CitationRow(r.citing, r.cited, r.type, r.context, r.passage, r.why) for r in cited]
    covered = {(row.citing, row.cited) for row in rows}
    for edge in graph.edges:
        if (edge.citing, edge.cited) in covered:
            continue
        covered.add((edge.citing, edge.cited))
        first = edge.contexts[0] if edge.contexts else None
        rows.append(
            CitationRow(edge.citing, edge.cited, "cites" if first else REFERENCE_LIST_ONLY, first)
        )
    return rows


def row_label(row: CitationRow, titles: Mapping[str, str]) -> str:
    """A row as text, to name the first and last of a page of them."""
    return f"{titles.get(row.citing, row.citing)} → {titles.get(row.cited, row.cited)}"


def citation_table(rows: Sequence[CitationRow], paper: PaperLink, links: CitationLinks) -> str:
    """The rows as a table: citing → cited paper, the type, the citing sentence with its
    citation linked to its passage (`links`), its section, why the type."""
    body = "".join(_table_row(row, paper, links) for row in rows)
    return (
        '<table class="citation-table"><thead>\n<tr><th>Citing → cited</th><th>Type</th>'
        "<th>Citing sentence</th><th>Section</th><th>Why</th></tr></thead>\n"
        f"<tbody>{body}</tbody></table>"
    )


def _table_row(row: CitationRow, paper: PaperLink, links: CitationLinks) -> str:
    cited = row.citation()
    sentence = links.inline(f"{row.quoted()} {cited.marker}", [cited]) if cited else ""
    section = html.escape(row.context.section) if row.context is not None else ""
    return (
        f"<tr><td>{paper(row.citing)} → {paper(row.cited)}</td>"
        f'<td class="type">{html.escape(row.type)}</td><td>{sentence}</td><td>{section}</td>'
        f"<td>{html.escape(row.why)}</td></tr>"
    )


def citations_markdown(rows: Sequence[CitationRow], titles: Mapping[str, str]) -> list[str]:
    """The rows as Markdown list items."""
    lines = []
    for row in rows:
        ends = f"*{titles.get(row.citing, row.citing)}* → *{titles.get(row.cited, row.cited)}*"
        cited = row.citation()
        if cited is None or row.context is None:
            lines.append(f"- {ends}: {row.type}.")
            continue
        where = f"{row.context.section}, " if row.context.section else ""
        why = f" {row.why}" if row.why else ""
        lines.append(f"- {ends} (**{row.type}**): {row.quoted()} ({where}{cited.marker}).{why}")
    return lines


def citation_neighbours(graph: CitationGraph) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(the papers each paper cites, the papers citing each), each once, in the edges' order:
    built in one pass, where asking the graph paper by paper would read every edge for each."""
    cites: dict[str, dict[str, None]] = {}
    cited_by: dict[str, dict[str, None]] = {}
    for edge in graph.edges:
        cites.setdefault(edge.citing, {})[edge.cited] = None
        cited_by.setdefault(edge.cited, {})[edge.citing] = None
    return (
        {paper: list(found) for paper, found in cites.items()},
        {paper: list(found) for paper, found in cited_by.items()},
    )


def paper_citations_html(cites: Sequence[str], cited_by: Sequence[str], paper: PaperLink) -> str:
    """A paper's two lines, each only when it names a paper: the papers of the collection it
    cites, and those citing it."""
    lines = [
        f'<p class="meta">{label}, in this collection: {"; ".join(map(paper, papers))}</p>'
        for label, papers in (("Cites", cites), ("Cited by", cited_by))
        if papers
    ]
    return "".join(lines)


def _reference_of(record: ReferenceRecord) -> PaperReference:
    """A record's authors, year, venue and DOI, as a reference list shows a paper's."""
    return PaperReference(
        authors=record.authors, year=record.year, venue=record.venue, doi=record.doi
    )


def _untitled(record: ReferenceRecord) -> str:
    return record.title or " ".join(record.raw.split())


def work_markdown(
    work: OftenCited, titles: Mapping[str, str], new_today: Collection[str] = ()
) -> list[str]:
    """A work of "Often cited, not in your library" as the lines of a list item, the caller
    indenting all but the first: its reference, the papers citing it (those `new_today`
    marked), a sub-list of the first of its citing sentences."""
    described = described_reference(_untitled(work.reference), _reference_of(work.reference))
    if work.reference.arxiv_id and not work.reference.doi:
        described += f" {ARXIV_ABS}{work.reference.arxiv_id}"
    citing = "; ".join(
        f"*{titles.get(p, p)}*" + (" (new today)" if p in new_today else "")
        for p in work.citing_paper_ids
    )
    lines = [
        described,
        f"Cited by {counted(len(work.citing_paper_ids), 'paper')} of this collection: {citing}.",
    ]
    for context in work.contexts[:SENTENCES_SHOWN]:
        sentence = " ".join(context.sentence.split())
        paper = titles.get(context.paper_id, context.paper_id)
        lines.append(f"- “{sentence}” (*{paper}*, p. {context.page})")
    if len(work.contexts) > SENTENCES_SHOWN:
        lines.append(f"- … and {len(work.contexts) - SENTENCES_SHOWN} more sentences.")
    return lines


def list_item(opening: str, lines: Sequence[str]) -> list[str]:
    """`lines` as one Markdown list item opened by `opening` (`- `, `12. `): the lines after
    the first indented as wide as it, so they stay inside the item."""
    first, *rest = lines
    return [opening + first, *(" " * len(opening) + line for line in rest)]


def work_html(
    work: OftenCited, paper: PaperLink, new_today: Collection[str] = (), note: str = ""
) -> str:
    """A work of "Often cited, not in your library" as a list item: title, authors, year,
    venue, DOI (a link), the papers citing it (those `new_today` marked), a `note` (text),
    the first of its citing sentences with paper and page."""
    record = work.reference
    details = []
    if record.authors:
        details.append(html.escape(", ".join(record.authors)))
    if record.year is not None:
        details.append(str(record.year))
    if record.venue:
        details.append(f"<em>{html.escape(record.venue)}</em>")
    if record.doi:
        url = html.escape("https://doi.org/" + quote(record.doi, safe="/"))
        details.append(f'<a href="{url}">doi:{html.escape(record.doi)}</a>')
    elif record.arxiv_id:
        url = html.escape(ARXIV_ABS + quote(record.arxiv_id, safe="/"))
        details.append(f'<a href="{url}">arXiv:{html.escape(record.arxiv_id)}</a>')
    citing = "; ".join(
        paper(p) + (' <span class="new">new today</span>' if p in new_today else "")
        for p in work.citing_paper_ids
    )
    sentences = "".join(
        f"<li>“{html.escape(' '.join(context.sentence.split()))}” "
        f'<span class="meta">({paper(context.paper_id)}, p. {context.page})</span></li>'
        for context in work.contexts[:SENTENCES_SHOWN]
    )
    if len(work.contexts) > SENTENCES_SHOWN:
        sentences += f"<li>… and {len(work.contexts) - SENTENCES_SHOWN} more sentences.</li>"
    return (
        f'<li class="often-cited"><strong>{html.escape(_untitled(record))}</strong>'
        + (f'<br><span class="meta">{" · ".join(details)}</span>' if details else "")
        + f"<br>Cited by {counted(len(work.citing_paper_ids), 'paper')} of this collection: "
        f"{citing}"
        + (f'<br><span class="new">{html.escape(note)}</span>' if note else "")
        + (f"<ul>{sentences}</ul>" if sentences else "")
        + "</li>"
    )


def often_cited_html(graph: CitationGraph, paper: PaperLink, shown: int) -> str:
    """The section "Often cited, not in your library": the first `shown` works ranked, the
    count of the others, and links to the `.bib` and RIS files holding them all."""
    works = graph.often_cited
    if not works:
        return (
            "<p>No work is cited by two or more papers of this collection without being one "
            "of its papers.</p>"
        )
    items = "".join(work_html(work, paper) for work in works[:shown])
    more = (
        f"<p>… and {counted(len(works) - shown, 'more work')}, in the files below.</p>"
        if len(works) > shown
        else ""
    )
    return (
        f"<p>{counted(len(works), 'work')} that at least two papers of this collection cite "
        "and none of its papers is, most cited first. For your reference manager: "
        f'<a href="{OFTEN_CITED_BIB}">{OFTEN_CITED_BIB}</a> (BibTeX) · '
        f'<a href="{OFTEN_CITED_RIS}">{OFTEN_CITED_RIS}</a> (RIS).</p>'
        f'<ol class="often-cited">{items}</ol>{more}'
    )


def often_cited_markdown(graph: CitationGraph, titles: Mapping[str, str], shown: int) -> list[str]:
    """ "Often cited, not in your library" as a numbered list: the first `shown` works, the
    count of the others, and the files holding them all."""
    works = graph.often_cited
    if not works:
        return [
            "No work is cited by two or more papers of this collection without being one of "
            "its papers."
        ]
    lines = [
        f"{counted(len(works), 'work')} that at least two papers of this collection cite and "
        f"none of its papers is, most cited first; all of them in [{OFTEN_CITED_BIB}]"
        f"({OFTEN_CITED_BIB}) and [{OFTEN_CITED_RIS}]({OFTEN_CITED_RIS}).",
        "",
    ]
    for rank, work in enumerate(works[:shown], start=1):
        lines += list_item(f"{rank}. ", work_markdown(work, titles))
    if len(works) > shown:
        lines += ["", f"… and {counted(len(works) - shown, 'more work')}, in the files."]
    return lines
