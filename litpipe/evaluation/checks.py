"""Offline checks of a written synthesis: does its writer cite every paper (papers cited only by
an appended "Also in this collection" sentence are counted apart), and does every citation point
at a real passage of the cited paper and page. Whether each cited sentence says what its passages
say is graded by `litpipe.evaluation.grading`.

Pure Python over the pydantic models, so the Dagster asset checks, the CLI and a notebook share
them. Each check returns a one-line description a user reads and JSON-able metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field, JsonValue

from litpipe.agents.synthesis import ALSO_IN_COLLECTION
from litpipe.schemas import StoredChunk, Synthesis
from litpipe.text import counted, marker, markers_in


class CheckOutcome(BaseModel):
    passed: bool
    warn_only: bool = Field(
        default=False,
        description="A failure that warns, where the check otherwise blocks: the output is "
        "usable but not what it should be.",
    )
    description: str = Field(description="One line a user reads.")
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    markdown: dict[str, str] = Field(
        default_factory=dict, description="More metadata, each entry Markdown to render."
    )


class CheckSkipped(BaseModel):
    """A check that could not run (coherence with no model to judge it; the checks of an
    optional text whose model failed): neither passed nor failed. The step reports it as not
    run, with why."""

    reason: str = Field(description="Why it could not run, one line a user reads.")


def coverage(synthesis: Synthesis) -> CheckOutcome:
    """Passes when the writer's own text cites every paper of the collection at least once.

    A paper the writer left uncited gets an appended "Also in this collection" sentence (see
    `litpipe.agents.synthesis.covered`), which the synthesis records in `appended`: such a
    paper is counted apart, not as the writer's, and makes the check fail with a warning (the
    text does cite it, from its best insight). A paper the synthesis leaves out for a stated
    reason (`left_out`: no answers, or nothing of it to cite) is named with that reason, and
    warns too: the others' synthesis stands. A paper cited nowhere, for no stated reason, fails
    the check outright.
    """
    cited = {paper_id for paper_id, _ in markers_in(synthesis.text)}
    appended = [paper_id for paper_id in synthesis.papers if paper_id in synthesis.appended]
    writer_cited = [p for p in synthesis.papers if p in cited and p not in synthesis.appended]
    left_out = {paper.paper_id: paper.reason for paper in synthesis.left_out}
    missing = [p for p in synthesis.papers if p not in cited and p not in left_out]
    total = len(synthesis.papers)
    description = (
        f"{synthesis.audience} synthesis: the writer cites {len(writer_cited)} of "
        f"{counted(total, 'paper')}"
    )
    if appended:
        description += (
            f'; {len(appended)} more only by an appended "{ALSO_IN_COLLECTION}" sentence: '
            f"{', '.join(appended)}"
        )
    if missing:
        description += f"; not cited: {', '.join(missing)}"
    if left_out:
        description += "; left out: " + "; ".join(
            f"{paper} ({reason})" for paper, reason in left_out.items()
        )
    return CheckOutcome(
        passed=not missing and not appended and not left_out,
        warn_only=bool(appended or left_out) and not missing,
        description=description,
        # list(...) copies each list[str] as a list of JSON values: lists are invariant, so a
        # list[str] is not a list[JsonValue] to the type checker.
        metadata={
            "writer_cited": list(writer_cited),
            "writer_cited_count": len(writer_cited),
            "appended": list(appended),
            "appended_count": len(appended),
            "missing": list(missing),
            "left_out": [paper.model_dump() for paper in synthesis.left_out],
            "total": total,
        },
    )


def cited_chunk_ids(synthesis: Synthesis) -> list[str]:
    """The chunk ids the synthesis' citations stand for, each once: what to fetch from the store
    for `citation_validity`."""
    return list(
        dict.fromkeys(chunk_id for cited in synthesis.citations for chunk_id in cited.chunk_ids)
    )


def stored_chunks(rows: Iterable[Mapping[str, Any]]) -> dict[str, StoredChunk]:
    """The store's rows (any mapping with chunk_id, paper_id, page_start and page_end; other
    columns ignored) by chunk id."""
    return {str(row["chunk_id"]): StoredChunk.model_validate(dict(row)) for row in rows}


def citation_validity(synthesis: Synthesis, stored: Mapping[str, StoredChunk]) -> CheckOutcome:
    """Passes when every citation's chunks are in the store, of the cited paper, on the cited
    page, and every marker in the text has its citation."""
    invalid: list[dict[str, JsonValue]] = []
    for cited in synthesis.citations:
        for chunk_id in cited.chunk_ids:
            problem = _chunk_problem(cited.paper_id, cited.page, stored.get(chunk_id))
            if problem:
                invalid.append({"marker": cited.marker, "chunk_id": chunk_id, "problem": problem})
    known = {cited.marker for cited in synthesis.citations}
    written = dict.fromkeys(marker(paper_id, page) for paper_id, page in markers_in(synthesis.text))
    invalid.extend(
        {"marker": written_marker, "chunk_id": None, "problem": "no citation for this marker"}
        for written_marker in written
        if written_marker not in known
    )
    checked = len(known | set(written))
    if invalid:
        markers = ", ".join(dict.fromkeys(str(entry["marker"]) for entry in invalid))
        description = f"invalid citations in the {synthesis.audience} synthesis: {markers}"
    else:
        every, are = ("the", "is") if checked == 1 else ("all", "are")
        description = (
            f"{every} {counted(checked, 'citation')} of the {synthesis.audience} synthesis "
            f"{are} valid"
        )
    return CheckOutcome(
        passed=not invalid,
        description=description,
        metadata={"citations": checked, "invalid": list(invalid)},
    )


def _chunk_problem(paper_id: str, page: int, chunk: StoredChunk | None) -> str | None:
    if chunk is None:
        return "chunk not in the store"
    if chunk.paper_id != paper_id:
        return f"chunk of another paper ({chunk.paper_id})"
    if not chunk.page_start <= page <= chunk.page_end:
        return f"chunk on pages {chunk.page_start}-{chunk.page_end}, not {page}"
    return None
