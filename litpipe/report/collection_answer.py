"""What a reader gets of a question asked of a collection: the Markdown file, the standalone page
(its citations linked to their passages, each sentence's grade shown), the terminal text, and
the check that every citation resolves to a stored chunk of the collection.

Pure Python over `CollectionAnswer`: the `collection_answer` asset writes the files, `litpipe
ask --collection` prints the text, a notebook can call any of it.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path

from litpipe.files import checked_key, write_atomically
from litpipe.report import notices
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
from litpipe.report.query_summary import unresolved_citations
from litpipe.schemas import CollectionAnswer, RetrievedChunk, SentenceGrade, StoredChunk

# Passages quoted under the citations, and the nearest ones, are cut to this many characters.
_EXCERPT_CHARS = 240
# How a sentence's grade reads, by verdict.
_GRADE_WORDS = {
    "supported": "supported",
    "partially_supported": "partially supported",
    "unsupported": "unsupported",
    "uncited": "uncited",
}


def markdown_path(outputs_dir: Path, key: str) -> Path:
    """Where a request's file lies: `outputs/<collection>/collection_answer/<key>.md`."""
    return outputs_dir / "collection_answer" / f"{checked_key(key, 'request key')}.md"


def html_path(outputs_dir: Path, key: str) -> Path:
    """The request's page, beside its Markdown (`<key>.html`)."""
    return markdown_path(outputs_dir, key).with_suffix(".html")


def json_path(outputs_dir: Path, key: str) -> Path:
    """The answer as JSON (`CollectionAnswer`), beside its Markdown (`<key>.json`)."""
    return markdown_path(outputs_dir, key).with_suffix(".json")


def excerpt(chunk: RetrievedChunk) -> str:
    """The passage's text on one line, cut to a short quote."""
    text = " ".join(chunk.text.split())
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS].rstrip() + "…"


def grade_label(grade: SentenceGrade) -> str:
    return _GRADE_WORDS[grade.verdict]


def grades_line(result: CollectionAnswer) -> str:
    """`3 of 4 cited sentences supported (graded by offline)`, or why there is no grade."""
    if result.grades is None:
        return "not graded: nothing is claimed"
    cited = [s for s in result.grades.sentences if s.verdict != "uncited"]
    supported = sum(s.verdict == "supported" for s in cited)
    return (
        f"{supported} of {len(cited)} cited sentences supported by their passages (graded by "
        f"{result.grades.grader})"
    )


def title_of(result: CollectionAnswer, paper_id: str) -> str:
    return result.titles.get(paper_id) or paper_id


def _nearest_lines(result: CollectionAnswer) -> list[str]:
    return [
        f"- {title_of(result, chunk.paper_id)} (`{chunk.paper_id}`), {pages_label(chunk)}: "
        f"{excerpt(chunk)}"
        for chunk in result.passages
    ] or ["(no passage was retrieved)"]


def render_markdown(result: CollectionAnswer, labels: Labels = NO_LABELS) -> str:
    """The answer, each sentence's grade, its citations with the passages they stand for; or
    the admission that the collection does not answer, with the nearest passages and no
    marker. Given the papers' keys (`labels`), it cites each paper by its key with the page,
    and its list of citations names each marker."""
    request = result.request
    lines = [
        f"# {request.question}",
        "",
        *notices.markdown_lines(notices.collection_answer_notice(result)),
        f"Collection `{request.collection}` ({len(result.papers)} papers searched), request "
        f"`{request.key}`. Answer mode {result.mode}, written by {result.engine}.",
        "",
        "## Answer",
        "",
        labelled(result.text, labels),
        "",
    ]
    if not result.answered:
        lines += [
            f"Why: {result.declined_because}.",
            "",
            "## Nearest passages",
            "",
            *_nearest_lines(result),
            "",
        ]
        return safe_markdown("\n".join(lines))
    by_id = {chunk.chunk_id: chunk for chunk in result.passages}
    grades = result.grades.sentences if result.grades else []
    lines += [
        "## Grades",
        "",
        grades_line(result) + ".",
        "",
        *(f"- **{grade_label(g)}**: {labelled(g.sentence, labels)}" for g in grades),
        "",
        "## Citations",
        "",
    ]
    for citation in result.citations:
        chunk_ids = ", ".join(f"`{c}`" for c in citation.chunk_ids)
        lines.append(f"- {cited_as(citation, labels)}: {chunk_ids}")
        for chunk_id in citation.chunk_ids:
            if chunk_id in by_id:
                chunk = by_id[chunk_id]
                lines.append(
                    f"  - {title_of(result, chunk.paper_id)}, {pages_label(chunk)}: "
                    f"{excerpt(chunk)}"
                )
    lines.append("")
    return safe_markdown("\n".join(lines))


def write_files(
    result: CollectionAnswer, outputs_dir: Path, labels: Labels = NO_LABELS
) -> tuple[Path, Path, Path]:
    """The Markdown, the page and the JSON of the answer, written, citing each paper by its
    key (`labels`) where it has one; their paths."""
    key = result.request.key
    path = markdown_path(outputs_dir, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    return (
        write_atomically(path, render_markdown(result, labels)),
        write_atomically(html_path(outputs_dir, key), render_html(result, labels)),
        write_atomically(json_path(outputs_dir, key), result.model_dump_json(indent=2)),
    )


def render_html(result: CollectionAnswer, labels: Labels = NO_LABELS) -> str:
    """The request's standalone page: the answer (citations linked to their passages, each
    flagged sentence marked, each read as its paper's key given `labels`), every sentence's
    grade, and the cited passages; or the admission and the nearest passages."""
    request = result.request
    pool = {chunk.chunk_id: chunk for chunk in result.passages}
    links = CitationLinks(pool, result.titles, labels)
    meta = (
        f"Collection <code>{html.escape(request.collection)}</code> · "
        f"{len(result.papers)} papers searched · answer mode {html.escape(result.mode)} · "
        f"written by {html.escape(result.engine)} · {html.escape(grades_line(result))}"
    )
    notice = notices.collection_answer_notice(result)
    if not result.answered:
        nearest = "".join(
            f"<li><strong>{html.escape(title_of(result, chunk.paper_id))}</strong> "
            f"(<code>{html.escape(chunk.paper_id)}</code>), {pages_label(chunk)}: "
            f"{html.escape(excerpt(chunk))}</li>"
            for chunk in result.passages
        )
        sections = [
            (
                "answer",
                "Answer",
                f"<p>{html.escape(result.text)}</p>\n<p>Why: "
                f"{html.escape(result.declined_because)}.</p>",
            ),
            (
                "nearest",
                "Nearest passages",
                f"<ul>{nearest}</ul>" if nearest else "<p>No passage was retrieved.</p>",
            ),
        ]
        return standalone_page(request.question, meta, sections, PAGE_CSS + GRADE_CSS, notice)
    grades = result.grades.sentences if result.grades else []
    answer = links.markdown(result.text, result.citations, 3, grades)
    rows = "".join(
        f"<tr><td>{html.escape(grade_label(g))}</td>"
        f"<td>{links.inline(g.sentence, result.citations)}</td></tr>"
        for g in grades
    )
    sections = [
        ("answer", "Answer", answer),
        (
            "grades",
            "Grades",
            "<table><thead><tr><th>Grade</th><th>Sentence</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>",
        ),
        # Last, once the answer has said which passages it links to.
        ("passages", "Passages", links.passages()),
    ]
    return standalone_page(request.question, meta, sections, PAGE_CSS + GRADE_CSS, notice)


def render_text(result: CollectionAnswer) -> str:
    """What `litpipe ask --collection` prints: the offline notice when there is one, the
    answer and each sentence's grade; or the admission and the nearest passages."""
    notice = notices.collection_answer_notice(result)
    lines = [
        f"{result.request.question} [collection {result.request.collection}]",
        *([notice] if notice else []),
        "",
        result.text,
        "",
    ]
    if not result.answered:
        return "\n".join(
            [*lines, f"Why: {result.declined_because}.", "", "Nearest passages:"]
            + [f"  {line[2:]}" for line in _nearest_lines(result)]
        )
    grades = result.grades.sentences if result.grades else []
    return "\n".join(
        [
            *lines,
            f"Grades: {grades_line(result)}",
            *(f"  [{grade_label(g)}] {g.sentence}" for g in grades),
        ]
    )


def citation_problems(result: CollectionAnswer, stored: Mapping[str, StoredChunk]) -> list[str]:
    """Each citation of the answer that does not resolve to a stored chunk of one of the
    collection's papers, on the cited page, with why; empty when all resolve."""
    members = set(result.papers)
    outside = [
        f"{citation.marker}: {citation.paper_id} is not in the collection"
        for citation in result.citations
        if citation.paper_id not in members
    ]
    return outside + unresolved_citations(result.citations, stored)
