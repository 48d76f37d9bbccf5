"""What a reader gets of a query-focused summary: the Markdown file (summary, highlights,
citations with their passages, the trace per iteration), the terminal text, the citation check
against the store, and the convergence report's Markdown."""

from __future__ import annotations

from pathlib import Path

from litpipe.evaluation.convergence import convergence_report
from litpipe.report.query_summary import (
    citation_problems,
    convergence_markdown,
    evaluated,
    markdown_path,
    render_markdown,
    render_text,
    write_markdown,
)
from litpipe.schemas import StoredChunk
from litpipe_tests.test_query_summary import PAPER, PAPER_ID, QUERY, TITLE, offline


def stored() -> dict[str, StoredChunk]:
    return {
        chunk.chunk_id: StoredChunk(
            chunk_id=chunk.chunk_id,
            paper_id=chunk.paper_id,
            page_start=chunk.page_start,
            page_end=chunk.page_end,
        )
        for chunk in PAPER
    }


def test_the_markdown_holds_the_summary_its_citations_and_a_row_per_iteration(
    tmp_path: Path,
) -> None:
    result = offline(tmp_path)
    assert len(result.iterations) >= 2
    text = render_markdown(result, "bio")
    assert text.startswith(f"# {TITLE}\n\n> Written by litpipe's offline extractive engine: ")
    assert f"\n\n**Query:** {QUERY}\n" in text
    assert f"collection `bio`), request `{result.request.key}`" in text
    summary = text.split("## Summary\n\n", 1)[1].split("\n\n## Highlights", 1)[0]
    assert summary == result.summary
    for highlight in result.highlights:
        assert f"- {highlight}\n" in text
    by_id = {chunk.chunk_id: chunk for chunk in PAPER}
    for citation in result.citations:
        assert f"- {citation.marker}: `{citation.chunk_ids[0]}`" in text
        passage = by_id[citation.chunk_ids[0]]
        assert f"  - Results, p. {passage.page_start}: {passage.text[:40]}" in text
    for question in result.questions:
        assert f"- `{question.question_id}` ({question.topic}): {question.text}" in text
    rows = text.split("|---:|---:|---|---|\n", 1)[1].strip().splitlines()
    assert len(rows) == len(result.iterations)
    for row, iteration in zip(rows, result.iterations, strict=True):
        topics = "; ".join(iteration.verdict.mismatch_topics) or "-"
        verdict = "approved" if iteration.verdict.approved else "not approved"
        assert row == (
            f"| {iteration.iteration} | {iteration.verdict.accuracy:.2f} | {verdict} | {topics} |"
        )

    path = write_markdown(result, tmp_path / "outputs" / "bio", "bio")
    assert path == markdown_path(tmp_path / "outputs" / "bio", result.request.key)
    assert path.read_text("utf-8") == text
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def test_a_topic_holding_a_pipe_stays_in_its_cell(tmp_path: Path) -> None:
    result = offline(tmp_path)
    first = result.iterations[0]
    odd = first.model_copy(
        update={"verdict": first.verdict.model_copy(update={"mismatch_topics": ["a | b"]})}
    )
    text = render_markdown(result.model_copy(update={"iterations": [odd]}), "bio")
    assert "| 1 | " in text and "| a \\| b |" in text


def test_the_terminal_text_shows_the_summary_highlights_and_one_line_per_iteration(
    tmp_path: Path,
) -> None:
    result = offline(tmp_path)
    text = render_text(result)
    assert result.summary in text and f"Query: {QUERY}" in text
    lines = text.splitlines()
    trace = lines[lines.index(f"Iterations ({result.status}; route: {result.route}):") + 1 :]
    assert len(trace) == len(result.iterations)
    assert trace[-1].endswith("accuracy 1.00  approved")
    assert "mismatch: " in trace[0]


def test_citations_resolve_only_to_stored_chunks_of_the_paper_on_the_cited_page(
    tmp_path: Path,
) -> None:
    result = offline(tmp_path)
    chunks = stored()
    assert citation_problems(result, chunks) == []
    citation = result.citations[0]
    chunk_id = citation.chunk_ids[0]
    missing = {k: v for k, v in chunks.items() if k != chunk_id}
    assert citation_problems(result, missing) == [
        f"{citation.marker}: chunk {chunk_id} is not in the store"
    ]
    moved = chunks | {
        chunk_id: chunks[chunk_id].model_copy(update={"page_start": 40, "page_end": 41})
    }
    assert citation_problems(result, moved) == [
        f"{citation.marker}: chunk {chunk_id} lies on pages 40-41"
    ]
    other = chunks | {chunk_id: chunks[chunk_id].model_copy(update={"paper_id": "other"})}
    assert citation_problems(result, other) == [f"{citation.marker}: chunk {chunk_id} is of other"]


def test_the_convergence_markdown_has_the_figures_and_a_row_per_request(tmp_path: Path) -> None:
    converged = offline(tmp_path)
    capped = offline(tmp_path, query_summary={"max_iterations": 1})
    report = convergence_report([converged, capped])
    text = convergence_markdown(
        report, [evaluated("q1", converged), evaluated("q2", capped)], "MAIS on bio"
    )
    assert text.startswith("# MAIS on bio\n\n| runs | approved |")
    assert "| 2 | 1 | 50.0% |" in text
    accuracies = " → ".join(f"{i.verdict.accuracy:.2f}" for i in converged.iterations)
    assert (
        f"| q1 | {PAPER_ID} | {converged.request.key} | approved | "
        f"{len(converged.iterations)} | {accuracies} | whole_paper |"
    ) in text
    assert f"| q2 | {PAPER_ID} | {capped.request.key} | max_iterations_reached | 1 |" in text
