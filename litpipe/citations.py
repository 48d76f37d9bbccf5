"""Citations in written text: `[paper_id:page]` markers, and the evidence chunks they stand for.

Every writer (answers, insights, syntheses) is given its evidence as passages labelled with their
marker, and cites by writing the marker. A marker resolves to the chunks of that paper whose pages
include that page, among the passages the writer was given: a person reads a paper and a page, a
program follows it to the exact chunk and its offsets. A bracket may hold several markers
(`[a:3; b:7]`, `[a:3, b:7]`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from litpipe.llm.prompts import fence
from litpipe.schemas import Citation, RetrievedChunk
from litpipe.text import sentences

# Paper ids are URL-safe (letters, digits, `.`, `_`, `-`): no colon, no bracket, no space.
_ONE_MARKER = r"[A-Za-z0-9._-]+:\d+"
_BRACKET = re.compile(rf"\[\s*({_ONE_MARKER}(?:\s*[;,]\s*{_ONE_MARKER})*)\s*\]")
_PARTS = re.compile(r"([A-Za-z0-9._-]+):(\d+)")


def marker(paper_id: str, page: int) -> str:
    return f"[{paper_id}:{page}]"


def chunk_marker(chunk: RetrievedChunk) -> str:
    """The marker a writer uses for a passage: its paper and the page it starts on."""
    return marker(chunk.paper_id, chunk.page_start)


def markers_in(text: str) -> list[tuple[str, int]]:
    """Every (paper id, page) cited in `text`, in order, repeats included."""
    return [
        (paper_id, int(page))
        for bracket in _BRACKET.finditer(text)
        for paper_id, page in _PARTS.findall(bracket.group(1))
    ]


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
    resolved: dict[str, Citation] = {}
    unresolved: list[str] = []
    for paper_id, page in markers_in(text):
        written = marker(paper_id, page)
        if written in resolved or written in unresolved:
            continue
        citation = resolve(paper_id, page, evidence)
        if citation is None:
            unresolved.append(written)
        else:
            resolved[written] = citation
    return list(resolved.values()), unresolved


def without_markers(text: str, dropped: Iterable[str]) -> str:
    """`text` with the `dropped` markers removed (an emptied bracket goes too)."""
    drop = set(dropped)
    if not drop:
        return text

    def kept(bracket: re.Match[str]) -> str:
        parts = [
            f"{paper_id}:{page}"
            for paper_id, page in _PARTS.findall(bracket.group(1))
            if marker(paper_id, int(page)) not in drop
        ]
        return f"[{'; '.join(parts)}]" if parts else ""

    cleaned = _BRACKET.sub(kept, text)
    return re.sub(r"[ \t]+([.,;:])", r"\1", re.sub(r"[ \t]{2,}", " ", cleaned)).strip()


def cited_sentences(text: str) -> list[str]:
    """The sentences of `text`, with a bracket of markers that stands alone after a full stop
    ("... sites. [a:3].") joined to the sentence it cites."""
    found: list[str] = []
    for span in sentences(text):
        if found and _only_markers(span.text):
            found[-1] += " " + span.text
        else:
            found.append(span.text)
    return found


def _only_markers(sentence: str) -> bool:
    written = [marker(paper_id, page) for paper_id, page in markers_in(sentence)]
    return bool(written) and not any(char.isalnum() for char in without_markers(sentence, written))


def evidence_block(evidence: list[RetrievedChunk]) -> str:
    """The passages as a writer sees them: each after its marker and section, all fenced as
    paper text (so nothing in them can instruct a model)."""
    passages = [
        f"{chunk_marker(chunk)} ({chunk.section})\n{' '.join(chunk.text.split())}"
        for chunk in evidence
    ]
    return fence("\n\n".join(passages) if passages else "(no passages)")
