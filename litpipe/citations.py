"""Citations in written text: `[paper_id:page]` markers resolved to the evidence chunks they
stand for (`litpipe.text` reads and writes the markers themselves).

Every writer (answers, insights, syntheses) is given its evidence as passages labelled with their
marker, and cites by writing the marker. A marker resolves to the chunks of that paper whose pages
include that page, among the passages the writer was given: a person reads a paper and a page, a
program follows it to the exact chunk and its offsets. A bracket may hold several markers
(`[a:3; b:7]`, `[a:3, b:7]`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from litpipe.llm.prompts import fence
from litpipe.schemas import Citation, RetrievedChunk
from litpipe.text import marker, markers_in


def chunk_marker(chunk: RetrievedChunk) -> str:
    """The marker a writer uses for a passage: its paper and the page it starts on."""
    return marker(chunk.paper_id, chunk.page_start)


def resolve(paper_id: str, page: int, evidence: Iterable[RetrievedChunk]) -> Citation | None:
    """The citation of `[paper_id:page]` against the evidence, or None when no passage of that
    paper covers that page."""
    chunk_ids = [
        chunk.chunk_id
        for chunk in evidence
        if chunk.paper_id == paper_id and chunk.page_start <= page <= chunk.page_end
    ]
    if not chunk_ids:
        return None
    return Citation(
        marker=marker(paper_id, page), paper_id=paper_id, page=page, chunk_ids=chunk_ids
    )


def citations(text: str, evidence: list[RetrievedChunk]) -> tuple[list[Citation], list[str]]:
    """The distinct citations of `text` that resolve against `evidence`, in order of first use,
    and the markers that do not (a model citing a page it was not given)."""
    return cited_in(text, passages_by_paper(evidence))


def passages_by_paper(evidence: Iterable[RetrievedChunk]) -> dict[str, list[RetrievedChunk]]:
    """The evidence grouped by paper, each paper's passages in their order."""
    grouped: dict[str, list[RetrievedChunk]] = {}
    for chunk in evidence:
        grouped.setdefault(chunk.paper_id, []).append(chunk)
    return grouped


def cited_in(
    text: str, by_paper: Mapping[str, list[RetrievedChunk]]
) -> tuple[list[Citation], list[str]]:
    """`citations` against evidence grouped by `passages_by_paper`: grouped once, it checks many
    texts (a summary of each of thousands of papers, a synthesis citing them all) each in time
    proportional to its markers, not to them times the whole evidence."""
    resolved: dict[str, Citation] = {}
    unresolved: list[str] = []
    for paper_id, page in markers_in(text):
        written = marker(paper_id, page)
        if written in resolved or written in unresolved:
            continue
        citation = resolve(paper_id, page, by_paper.get(paper_id, []))
        if citation is None:
            unresolved.append(written)
        else:
            resolved[written] = citation
    return list(resolved.values()), unresolved


def evidence_block(evidence: list[RetrievedChunk]) -> str:
    """The passages as a writer sees them: each after its marker and section, all fenced as
    paper text (so nothing in them can instruct a model)."""
    passages = [
        f"{chunk_marker(chunk)} ({chunk.section})\n{' '.join(chunk.text.split())}"
        for chunk in evidence
    ]
    return fence("\n\n".join(passages) if passages else "(no passages)")
