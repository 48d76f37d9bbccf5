"""What a reader gets of a query-focused summary (MAIS): the Markdown file, the standalone page
(its unsupported sentences marked), the terminal text, the check that every citation resolves
to a stored chunk, and the convergence report's Markdown.

Pure Python over `QuerySummary`: the `query_summary` asset writes the file, `litpipe ask` and
`litpipe eval mais` print the same texts, a notebook can call any of it.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from litpipe.files import checked_key, write_atomically
from litpipe.report import notices
from litpipe.report.convergence import render_markdown as convergence_table
from litpipe.report.markdown import safe_markdown
from litpipe.report.page import (
    GRADE_CSS,
    NO_LABELS,
    PAGE_CSS,
    CitationLinks,
    Labels,
    cited_as,
    labelled,
    pages_label,
    standalone_page,
)
from litpipe.schemas import (
    Citation,
    ConvergenceReport,
    QuerySummary,
    StoredChunk,
    SummaryIteration,
)
from litpipe.text import counted

# Passages quoted under the citations are cut to this many characters.
_EXCERPT_CHARS = 240


def markdown_path(outputs_dir: Path, key: str) -> Path:
    """Where a request's file lies: `outputs/<collection>/query_summary/<key>.md`."""
    return outputs_dir / "query_summary" / f"{checked_key(key, 'request key')}.md"


def html_path(outputs_dir: Path, key: str) -> Path:
    """The request's page, beside its Markdown (`<key>.html`)."""
    return markdown_path(outputs_dir, key).with_suffix(".html")


def graded_text(result: QuerySummary) -> str:
    """What the support check grades, as Markdown: the summary, then the highlights as a list
    (each a cited claim of its own). The page renders this same text, so that each graded
    sentence is found where it is shown."""
    highlights = [f"- {item}" for item in result.highlights]
    return "\n".join(
        [result.summary, *(["", "# Highlights", "", *highlights] if highlights else [])]
    )


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell: one line, no column separator."""
    return " ".join(text.split()).replace("|", "\\|")


def verdict_text(iteration: SummaryIteration) -> str:
    return "approved" if iteration.verdict.approved else "not approved"


def topics_text(iteration: SummaryIteration) -> str:
    return "; ".join(iteration.verdict.mismatch_topics) or "-"


def trace_table(result: QuerySummary) -> str:
    """One Markdown row per iteration: its accuracy, the verdict, the topics of mismatch."""
    lines = [
        "| iteration | accuracy | verdict | mismatch topics |",
        "|---:|---:|---|---|",
        *(
            f"| {it.iteration} | {it.verdict.accuracy:.2f} | {verdict_text(it)} | "
            f"{_cell(topics_text(it))} |"
            for it in result.iterations
        ),
    ]
    return "\n".join(lines)


def outcome_line(result: QuerySummary) -> str:
    """`approved after 3 of at most 15 iterations (accuracy 1.00)`, or why it stopped."""
    last = result.iterations[-1]
    if result.status == "approved":
        done = f"approved after {len(result.iterations)}"
    else:
        done = f"not approved after {len(result.iterations)}"
    cap = counted(result.max_iterations, "iteration")
    return f"{done} of at most {cap} (final accuracy {last.verdict.accuracy:.2f})"


def render_markdown(result: QuerySummary, collection: str, labels: Labels = NO_LABELS) -> str:
    """The summary, its highlights, its citations with the passages they stand for, then the
    loop's trace: the diagnostic questions and one row per iteration. Given the paper's key
    (`labels`), it cites the paper by its key with the page, and its list of citations names
    each marker."""
    request = result.request
    by_id = {chunk.chunk_id: chunk for chunk in result.source}
    lines = [
        f"# {result.title or request.paper_id}",
        "",
        *notices.markdown_lines(notices.query_summary_notice(result)),
        f"**Query:** {request.query}",
        "",
        f"Paper `{request.paper_id}` (collection `{collection}`), request `{request.key}`. "
        f"Status: **{result.status}**, {outcome_line(result)}. Route: {result.route} "
        f"({result.route_reason}). Written by {result.engine}.",
        "",
        "## Summary",
        "",
        labelled(result.summary, labels) or "(empty)",
        "",
        "## Highlights",
        "",
        *(f"- {labelled(item, labels)}" for item in result.highlights),
        *([] if result.highlights else ["(none)"]),
        "",
        "## Citations",
        "",
    ]
    for citation in result.citations:
        chunks = [by_id[chunk_id] for chunk_id in citation.chunk_ids if chunk_id in by_id]
        chunk_ids = ", ".join(f"`{c}`" for c in citation.chunk_ids)
        lines.append(f"- {cited_as(citation, labels)}: {chunk_ids}")
        for chunk in chunks:
            excerpt = " ".join(chunk.text.split())
            if len(excerpt) > _EXCERPT_CHARS:
                excerpt = excerpt[:_EXCERPT_CHARS].rstrip() + "…"
            lines.append(f"  - {chunk.section}, {pages_label(chunk)}: {excerpt}")
    if not result.citations:
        lines.append("(none)")
    lines += [
        "",
        "## Diagnostic questions",
        "",
        *(f"- `{q.question_id}` ({q.topic}): {q.text}" for q in result.questions),
        "",
        "## Iterations",
        "",
        trace_table(result),
        "",
    ]
    return safe_markdown("\n".join(lines))


def write_markdown(
    result: QuerySummary, outputs_dir: Path, collection: str, labels: Labels = NO_LABELS
) -> Path:
    path = markdown_path(outputs_dir, result.request.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomically(path, render_markdown(result, collection, labels))


def render_html(result: QuerySummary, collection: str, labels: Labels = NO_LABELS) -> str:
    """The request's standalone page: the summary and its highlights (citations linked to their
    passages, each read as the paper's key given `labels`, each sentence the support check
    flagged marked with its reason), the diagnostic questions, the iterations, and the cited
    passages."""
    request = result.request
    title = result.title or request.paper_id
    links = CitationLinks(
        {chunk.chunk_id: chunk for chunk in result.source}, {request.paper_id: title}, labels
    )
    grades = result.grades.sentences if result.grades else []
    summary = (
        links.markdown(graded_text(result), result.citations, 3, grades)
        if result.summary
        else "<p>(empty)</p>"
    )
    questions = "".join(
        f"<li><code>{html.escape(q.question_id)}</code> ({html.escape(q.topic)}): "
        f"{html.escape(q.text)}</li>"
        for q in result.questions
    )
    rows = "".join(
        f"<tr><td>{it.iteration}</td><td>{it.verdict.accuracy:.2f}</td>"
        f"<td>{verdict_text(it)}</td><td>{html.escape(topics_text(it))}</td></tr>"
        for it in result.iterations
    )
    iterations = (
        "<table><thead><tr><th>Iteration</th><th>Accuracy</th><th>Verdict</th>"
        f"<th>Mismatch topics</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    graded = f" · graded by {html.escape(result.grades.grader)}" if result.grades else ""
    meta = (
        f"<strong>Query:</strong> {html.escape(request.query)}<br>\n"
        f"Paper <code>{html.escape(request.paper_id)}</code> (collection "
        f"{html.escape(collection)}) · {html.escape(outcome_line(result))} · route "
        f"{html.escape(result.route)} · written by {html.escape(result.engine)}{graded}"
    )
    sections = [
        ("summary", "Summary", summary),
        (
            "questions",
            "Diagnostic questions",
            f"<ul>{questions}</ul>" if questions else "<p>None.</p>",
        ),
        ("iterations", "Iterations", iterations),
        # Last, once the summary has said which passages it links to.
        ("passages", "Passages", links.passages()),
    ]
    notice = notices.query_summary_notice(result)
    return standalone_page(title, meta, sections, PAGE_CSS + GRADE_CSS, notice)


def write_html(
    result: QuerySummary, outputs_dir: Path, collection: str, labels: Labels = NO_LABELS
) -> Path:
    path = html_path(outputs_dir, result.request.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomically(path, render_html(result, collection, labels))


def render_text(result: QuerySummary) -> str:
    """What `litpipe ask` prints: the offline notice when there is one, the summary, its
    highlights, then the trace, one line per iteration (accuracy, then approved or the topics of
    mismatch)."""
    notice = notices.query_summary_notice(result)
    lines = [
        f"{result.title or result.request.paper_id} [{result.request.paper_id}]",
        *([notice] if notice else []),
        f"Query: {result.request.query}",
        "",
        result.summary or "(empty summary)",
        "",
        "Highlights:",
        *(f"  - {item}" for item in result.highlights),
        *([] if result.highlights else ["  (none)"]),
        "",
        f"Iterations ({result.status}; route: {result.route}):",
    ]
    for it in result.iterations:
        verdict = "approved" if it.verdict.approved else f"mismatch: {topics_text(it)}"
        lines.append(f"  {it.iteration:>3}  accuracy {it.verdict.accuracy:.2f}  {verdict}")
    return "\n".join(lines)


def citation_problems(result: QuerySummary, stored: Mapping[str, StoredChunk]) -> list[str]:
    """Each citation of the summary and highlights that does not resolve to a stored chunk of
    the cited paper on the cited page, with why; empty when all resolve."""
    return unresolved_citations(result.citations, stored)


def unresolved_citations(cited: Sequence[Citation], stored: Mapping[str, StoredChunk]) -> list[str]:
    """Each of `cited` that does not resolve to a stored chunk of the cited paper on the cited
    page, with why; empty when all resolve."""
    problems = []
    for citation in cited:
        if not citation.chunk_ids:
            problems.append(f"{citation.marker}: no chunk")
        for chunk_id in citation.chunk_ids:
            chunk = stored.get(chunk_id)
            if chunk is None:
                problems.append(f"{citation.marker}: chunk {chunk_id} is not in the store")
            elif chunk.paper_id != citation.paper_id:
                problems.append(f"{citation.marker}: chunk {chunk_id} is of {chunk.paper_id}")
            elif not chunk.page_start <= citation.page <= chunk.page_end:
                problems.append(
                    f"{citation.marker}: chunk {chunk_id} lies on pages "
                    f"{chunk.page_start}-{chunk.page_end}"
                )
    return problems


class EvaluatedRequest(BaseModel):
    """One question of an evaluation set asked of its paper, and how the loop ended."""

    question_id: str = Field(description="The dataset's id of the question.")
    paper_id: str
    key: str = Field(description="The request's partition key.")
    status: str
    route: str
    iterations: int
    accuracies: list[float] = Field(description="The judge's accuracy at each iteration.")


def evaluated(question_id: str, result: QuerySummary) -> EvaluatedRequest:
    return EvaluatedRequest(
        question_id=question_id,
        paper_id=result.request.paper_id,
        key=result.request.key,
        status=result.status,
        route=result.route,
        iterations=len(result.iterations),
        accuracies=[it.verdict.accuracy for it in result.iterations],
    )


def with_offline_notice(report: ConvergenceReport) -> ConvergenceReport:
    """The report with its `notice` when its runs' summarizer or judge was offline."""
    return report.model_copy(update={"notice": notices.convergence_notice(report.engines)})


def convergence_markdown(
    report: ConvergenceReport, runs: Sequence[EvaluatedRequest], title: str
) -> str:
    """The report's notice, if any, above the convergence table and accuracy per iteration,
    then one row per request."""
    lines = [
        f"# {title}",
        "",
        *notices.markdown_lines(report.notice),
        convergence_table(report).rstrip("\n"),
        "",
        "| question | paper | request | status | iterations | accuracy per iteration | route |",
        "|---|---|---|---|---:|---|---|",
        *(
            f"| {_cell(run.question_id)} | {_cell(run.paper_id)} | {run.key} | {run.status} | "
            f"{run.iterations} | {' → '.join(f'{a:.2f}' for a in run.accuracies)} | "
            f"{run.route} |"
            for run in runs
        ),
        "",
    ]
    return safe_markdown("\n".join(lines))
