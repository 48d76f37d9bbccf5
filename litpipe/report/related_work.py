"""A related-work section's files: `related_work.md`, `related_work.html` (the section, its
citations linked to the references given to the writer, each sentence its grades flag marked)
and `related_work.json`. Given the cited works' citation keys (`labels`, by reference id), both
cite each by its key (`[lewis2020retrieval; smith2021dense]`), as the exports do: the page keeps
the reference's id in each link's pop-up, the Markdown in its references."""

from __future__ import annotations

import html
from pathlib import Path

from litpipe.extractive.related_work import cited_ids, replace_citations
from litpipe.files import write_atomically
from litpipe.report import notices
from litpipe.report.markdown import safe_markdown
from litpipe.report.page import (
    GRADE_CSS,
    NO_LABELS,
    PAGE_CSS,
    Labels,
    SentenceMarks,
    markdown_key,
    standalone_page,
)
from litpipe.schemas import Reference, RelatedWork
from litpipe.text import BRACKETED, markdown_blocks

MARKDOWN_FILE = "related_work.md"
JSON_FILE = "related_work.json"
HTML_FILE = "related_work.html"


def render_markdown(related: RelatedWork, labels: Labels = NO_LABELS) -> str:
    """The offline notice when the offline engine wrote or scored it, the idea, the section,
    and the references it cites, in order of first citation. Given the works' keys (`labels`),
    the section cites each by its key, and its reference is led by it, its id after."""
    by_id = {scored.reference.id: scored for scored in related.references}
    references = [
        f"- [{markdown_key(labels.get(reference_id, reference_id))}] "
        f"{by_id[reference_id].reference.title} ("
        + (f"`{reference_id}`, " if reference_id in labels else "")
        + f"relevance {by_id[reference_id].verdict.probability}/100)"
        for reference_id in related.cited_ids
        if reference_id in by_id
    ]
    section = replace_citations(
        related.text.strip(),
        labels,
        lambda ids: "[" + "; ".join(markdown_key(labels[i]) for i in ids) + "]",
    )
    idea = "\n".join(f"> {line}".rstrip() for line in related.request.idea.splitlines())
    text = "\n".join(
        [
            *notices.markdown_lines(notices.related_work_notice(related)),
            "## Research idea",
            "",
            idea,
            "",
            "## Related work",
            "",
            section,
            "",
            f"*Written by {related.engine} from the {len(related.references)} most relevant of "
            f"{related.table_rows} references, scored by {related.debate_engine}.*",
            "",
            "## References",
            "",
            *(references or ["(no citations)"]),
            "",
        ]
    )
    return safe_markdown(text)


def _passage_paragraph(reference: Reference) -> str:
    """A collection paper's full-text passage under its abstract (a table row has none)."""
    if not reference.passage:
        return ""
    passage = html.escape(" ".join(reference.passage.split()))
    return f'<p class="text"><em>From the full text:</em> {passage}</p>'


def render_html(related: RelatedWork, labels: Labels = NO_LABELS) -> str:
    """The standalone page: the idea, the section with each `[id]` linked to its reference
    (reading as its key given `labels`, the id in its pop-up) and each sentence its grades flag
    marked (the reason as its tooltip), then the references given to the writer, with their
    abstracts (the passages the section is graded against)."""
    anchors = {
        scored.reference.id: f"ref-{number}"
        for number, scored in enumerate(related.references, start=1)
    }
    titles = {scored.reference.id: scored.reference.title for scored in related.references}

    def cite(reference_id: str) -> str:
        label = html.escape(labels.get(reference_id, reference_id))
        if reference_id not in anchors:
            return f'<span class="unresolved" title="not a given reference">{label}</span>'
        named = f"{reference_id}: " if reference_id in labels else ""
        return (
            f'<a class="cite" href="#{anchors[reference_id]}" '
            f'title="{html.escape(named + titles[reference_id])}">{label}</a>'
        )

    def inline(text: str) -> str:
        pieces: list[str] = []
        cursor = 0
        for found in BRACKETED.finditer(text):
            ids = cited_ids(found.group())
            if ids:
                pieces.append(html.escape(text[cursor : found.start()]))
                pieces.append("[" + "; ".join(cite(reference_id) for reference_id in ids) + "]")
                cursor = found.end()
        pieces.append(html.escape(text[cursor:]))
        return "".join(pieces)

    marks = SentenceMarks(related.grades.sentences if related.grades else [])
    paragraphs = [
        f"<p>{marks.render(text, inline)}</p>"
        for block in markdown_blocks(related.text)
        for text in block.texts
    ]
    section = "\n".join([marks.legend(), *paragraphs] if marks.count else paragraphs)
    references = "\n".join(
        f'<div class="passage" id="{anchors[scored.reference.id]}"><p class="where"><strong>'
        f"[{html.escape(labels.get(scored.reference.id, scored.reference.id))}]</strong> "
        f"{_id_after_key(scored.reference.id, labels)}{html.escape(scored.reference.title)} · "
        f"relevance {scored.verdict.probability}/100"
        f"{'' if scored.reference.id in related.cited_ids else ' · not cited'}</p>"
        f'<p class="text">{html.escape(" ".join(scored.reference.abstract.split()))}</p>'
        f"{_passage_paragraph(scored.reference)}</div>"
        for scored in related.references
    )
    idea = "".join(
        f"<p>{html.escape(line)}</p>" for line in related.request.idea.splitlines() if line.strip()
    )
    graded = f" · graded by {html.escape(related.grades.grader)}" if related.grades else ""
    meta = (
        f"Written by {html.escape(related.engine)} from the {len(related.references)} most "
        f"relevant of {related.table_rows} references, scored by "
        f"{html.escape(related.debate_engine)}{graded}"
    )
    sections = [
        ("idea", "Research idea", f"<blockquote>{idea}</blockquote>"),
        ("related-work", "Related work", section),
        ("references", "References", references or "<p>No reference.</p>"),
    ]
    notice = notices.related_work_notice(related)
    return standalone_page("Related work", meta, sections, PAGE_CSS + GRADE_CSS, notice)


def _id_after_key(reference_id: str, labels: Labels) -> str:
    """A keyed reference's id, after its key (HTML)."""
    return f"<code>{html.escape(reference_id)}</code> " if reference_id in labels else ""


def write_related_work(
    related: RelatedWork, folder: Path, labels: Labels = NO_LABELS
) -> dict[str, Path]:
    """`related_work.md`, `related_work.html` and `related_work.json` in `folder`, each
    written aside then renamed (a reader never sees half a file), citing each work by its key
    (`labels`) where given."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    contents = {
        MARKDOWN_FILE: render_markdown(related, labels),
        HTML_FILE: render_html(related, labels),
        JSON_FILE: related.model_dump_json(indent=1),
    }
    return {name: write_atomically(folder / name, text) for name, text in contents.items()}
