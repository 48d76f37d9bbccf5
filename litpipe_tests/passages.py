"""Retrieved chunks built by hand, for tests of the stages that read evidence."""

from __future__ import annotations

from litpipe.schemas import RetrievedChunk


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
