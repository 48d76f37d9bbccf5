"""A collection's comparison table as people read it: `comparison.md` and `comparison.csv`
beside the synthesis (one row per paper, its id and title first, then one column per aspect,
every value with its `[paper_id:page]` markers), and a section of `synthesis.html`.

The section is a `<table>` whose columns sort on a click of their header (a few lines of inline
script, the one script of the page: sorting is what a comparison table is read by, and the page
must still need nothing beside it), each cell's citation linked to its passage through the
page's `CitationLinks`, each title to its paper's article; "not reported" cells are greyed (and
sort last either way), and a cell the support check flagged is marked as a flagged sentence
is, its reason in the tooltip. The nightly digest lists a new paper's row as its aspects and
values (`row_markdown`, `row_html`).
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Callable

from litpipe.report.markdown import safe_markdown
from litpipe.report.page import CitationLinks, graded_span
from litpipe.schemas import (
    NOT_REPORTED,
    ComparisonCell,
    ComparisonRow,
    ComparisonTable,
    RetrievedChunk,
)
from litpipe.text import strip_markers

COMPARISON_MARKDOWN = "comparison.md"
COMPARISON_CSV = "comparison.csv"
# A paper's title as HTML, linked to its article (the collection page's `_paper_links`).
PaperLink = Callable[[str], str]

COMPARISON_CSS = """
table.comparison-table th { cursor: pointer; user-select: none; }
table.comparison-table th[aria-sort="ascending"]::after { content: " ▲"; }
table.comparison-table th[aria-sort="descending"]::after { content: " ▼"; }
td.not-reported { color: #999; font-style: italic; }
"""
# On a header's click: the rows by that column's `data-sort` text (numbers by value), ascending
# then descending, "not reported" cells last either way.
SORT_SCRIPT = """<script>
document.querySelectorAll("table.comparison-table").forEach(function (table) {
  var headers = table.querySelectorAll("th");
  headers.forEach(function (header, column) {
    header.addEventListener("click", function () {
      var ascending = header.getAttribute("aria-sort") !== "ascending";
      headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column], y = b.cells[column];
        var silent = x.classList.contains("not-reported") - y.classList.contains("not-reported");
        if (silent) { return silent; }
        var order = x.dataset.sort.localeCompare(y.dataset.sort, undefined, {numeric: true});
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
</script>"""


def comparison_files(table: ComparisonTable) -> dict[str, str]:
    """`comparison.md` and `comparison.csv`, by file name."""
    return {COMPARISON_MARKDOWN: comparison_markdown(table), COMPARISON_CSV: comparison_csv(table)}


def _markdown_cell(text: str) -> str:
    """Text as one cell of a Markdown table: on one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def comparison_markdown(table: ComparisonTable) -> str:
    """The table in Markdown: a heading, who chose the aspects and wrote the cells, then a row
    per paper (id, title, a column per aspect), every value with its markers."""
    writers = sorted({cell.engine for row in table.rows for cell in row.cells})
    header = ["id", "title", *table.aspects]
    lines = [
        f"# Comparison of {table.collection}",
        "",
        f"Aspects chosen by {table.aspects_engine}; cells written by "
        f"{', '.join(writers) if writers else 'nobody (no paper)'}. A cell reads "
        f'"{NOT_REPORTED}" where the paper\'s passages retrieved for the aspect do not give it.',
        "",
        "| " + " | ".join(map(_markdown_cell, header)) + " |",
        "|" + "---|" * len(header),
    ]
    for row in table.rows:
        cells = [row.paper_id, row.title, *(cell.value for cell in row.cells)]
        lines.append("| " + " | ".join(map(_markdown_cell, cells)) + " |")
    return safe_markdown("\n".join(lines) + "\n")


def comparison_csv(table: ComparisonTable) -> str:
    """The table as CSV: `id`, `title`, then a column per aspect, each value with its
    markers."""
    written = io.StringIO()
    rows = csv.writer(written)
    rows.writerow(["id", "title", *table.aspects])
    for row in table.rows:
        rows.writerow([row.paper_id, row.title, *(cell.value for cell in row.cells)])
    return written.getvalue()


def comparison_passages(table: ComparisonTable) -> dict[str, RetrievedChunk]:
    """The passages the table's rows were written from, by chunk id: what the page's
    `CitationLinks` pool needs for the cells' links to resolve."""
    return {chunk.chunk_id: chunk for row in table.rows for chunk in row.passages}


def comparison_html(table: ComparisonTable, links: CitationLinks, paper: PaperLink) -> str:
    """The section of `synthesis.html`: what of it the model failed (with why), who chose the
    aspects, then the sortable table, its script after it."""
    failed = "".join(
        f'<p class="meta">{html.escape(record.line())}</p>\n' for record in table.not_run
    )
    if not table.rows:
        return failed or "<p>No paper to compare.</p>"
    headers = "".join(
        f'<th scope="col">{html.escape(name)}</th>' for name in ["Paper", *table.aspects]
    )
    body = "".join(
        f'<tr><td data-sort="{html.escape(row.title)}">{paper(row.paper_id)}</td>'
        + "".join(_cell_html(cell, links) for cell in row.cells)
        + "</tr>"
        for row in table.rows
    )
    return failed + (
        f'<p class="meta">Aspects chosen by {html.escape(table.aspects_engine)}. Click a '
        "column's header to sort by it; a citation shows its passage.</p>\n"
        f'<table class="comparison-table"><thead><tr>{headers}</tr></thead>\n'
        f"<tbody>{body}</tbody></table>\n{SORT_SCRIPT}"
    )


def _cell_html(cell: ComparisonCell, links: CitationLinks) -> str:
    if cell.not_reported:
        return f'<td class="not-reported" data-sort="">{html.escape(NOT_REPORTED)}</td>'
    inner = links.inline(cell.value, cell.citations)
    grade = cell.grade
    if grade is not None and grade.verdict in ("unsupported", "partially_supported"):
        inner = graded_span(inner, grade)
    return f'<td data-sort="{html.escape(strip_markers(cell.value))}">{inner}</td>'


def row_markdown(row: ComparisonRow, title: str) -> list[str]:
    """A row as a Markdown list item: the paper's title, then each aspect with its value."""
    cells = [f"  - {cell.aspect}: {' '.join(cell.value.split())}" for cell in row.cells]
    return [f"- *{title}* (`{row.paper_id}`)", *cells]


def row_html(row: ComparisonRow, title: str, links: CitationLinks) -> str:
    """A row as an HTML list item, each value's citations linked to their passages."""
    cells = "".join(
        f'<li class="not-reported">{html.escape(cell.aspect)}: {html.escape(NOT_REPORTED)}</li>'
        if cell.not_reported
        else f"<li>{html.escape(cell.aspect)}: {links.inline(cell.value, cell.citations)}</li>"
        for cell in row.cells
    )
    return (
        f"<li><em>{html.escape(title)}</em> (<code>{html.escape(row.paper_id)}</code>)"
        f"<ul>{cells}</ul></li>"
    )
