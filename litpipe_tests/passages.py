"""Retrieved chunks and insights built by hand, for tests of the stages that read evidence
and of the relationship analysis."""

from __future__ import annotations

from litpipe.schemas import Citation, Insight, RetrievedChunk


def retrieved_chunk(
    paper_id: str, index: int, page: int, text: str, *, page_end: int | None = None
) -> RetrievedChunk:
    """Chunk `index` of a paper, on `page` (to `page_end`), ranked `index + 1` by fusion."""
    return RetrievedChunk(
        chunk_id=f"{paper_id}:{index}",
        paper_id=paper_id,
        section="Results",
        page_start=page,
        page_end=page_end or page,
        char_start=index * 100,
        char_end=index * 100 + len(text),
        text=text,
        fused_rank=index + 1,
        fused_score=1.0 / (index + 1),
    )


def insight(insight_id: str, paper_id: str, text: str, page: int = 1) -> Insight:
    """An insight of one paper, its text ending in its one citation (page `page`)."""
    marker = f"[{paper_id}:{page}]"
    return Insight(
        insight_id=insight_id,
        paper_id=paper_id,
        papers=[paper_id],
        question_ids=[f"{paper_id}:q00"],
        text=f"{text} {marker}.",
        citations=[
            Citation(marker=marker, paper_id=paper_id, page=page, chunk_ids=[f"{paper_id}:0"])
        ],
    )
