"""Offline checks of a written synthesis: does it cite every paper, does every citation point at a
real passage of the cited paper and page, and does each cited sentence say what its passages say.

Pure Python over the pydantic models, so the Dagster asset checks, the CLI and a notebook share
them. Each check returns a one-line description a user reads and JSON-able metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field, JsonValue

from litpipe.citations import cited_sentences, marker, markers_in, without_markers
from litpipe.evaluation.support import Encoder, support_scores
from litpipe.report.collection import markdown_blocks
from litpipe.schemas import Synthesis

_REFERENCES_HEADINGS = frozenset({"references", "sources", "bibliography"})
# Sentences quoted in a check's description and metadata are cut to this length.
_QUOTE_CHARS = 200


class CheckOutcome(BaseModel):
    passed: bool
    description: str = Field(description="One line a user reads.")
    metadata: dict[str, JsonValue] = Field(default_factory=dict)


class StoredChunk(BaseModel):
    """Where a chunk lies, as the chunk store (a LanceDB row) records it."""

    chunk_id: str
    paper_id: str
    page_start: int
    page_end: int


class SentenceGrade(BaseModel):
    """How well one cited sentence is supported by the passages it cites."""

    sentence: str
    markers: list[str]
    score: float = Field(
        description="The support score: the calibrated mix of `lexical` and `semantic`, or "
        "`lexical` alone when no embedder was given."
    )
    supported: bool
    missing: list[str] = Field(description="The sentence's words its passages lack.")
    lexical: float = Field(description="Share of the sentence's terms found in its passages.")
    semantic: float | None = Field(
        default=None,
        description="Cosine of the sentence with its closest cited passage or passage sentence "
        "(None without an embedder).",
    )


class SupportOutcome(CheckOutcome):
    grades: list[SentenceGrade] = Field(description="One per cited sentence, in text order.")
    uncited: list[str] = Field(description="Sentences without a marker (not graded).")


def coverage(synthesis: Synthesis) -> CheckOutcome:
    """Passes when the text cites every paper of the collection at least once."""
    cited = {paper_id for paper_id, _ in markers_in(synthesis.text)}
    missing = [paper_id for paper_id in synthesis.papers if paper_id not in cited]
    total = len(synthesis.papers)
    covered = total - len(missing)
    description = f"{synthesis.audience} synthesis cites {covered} of {total} papers"
    if missing:
        description += f"; not cited: {', '.join(missing)}"
    return CheckOutcome(
        passed=not missing,
        description=description,
        metadata={"cited": covered, "total": total, "missing": missing},
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
        description = f"all {checked} citations of the {synthesis.audience} synthesis are valid"
    return CheckOutcome(
        passed=not invalid,
        description=description,
        metadata={"citations": checked, "invalid": invalid},
    )


def _chunk_problem(paper_id: str, page: int, chunk: StoredChunk | None) -> str | None:
    if chunk is None:
        return "chunk not in the store"
    if chunk.paper_id != paper_id:
        return f"chunk of another paper ({chunk.paper_id})"
    if not chunk.page_start <= page <= chunk.page_end:
        return f"chunk on pages {chunk.page_start}-{chunk.page_end}, not {page}"
    return None


def support(
    synthesis: Synthesis,
    passages: Mapping[str, str],
    threshold: float,
    embedder: Encoder | None = None,
) -> SupportOutcome:
    """Grades each cited sentence against its cited passages (`passages`: chunk id to text);
    passes when every cited sentence's score reaches `threshold`.

    With an embedder the score is `litpipe.evaluation.support`'s calibrated mix of the lexical
    share and the embedding cosine (`support_threshold`'s default is calibrated for it);
    without one it is the share of the sentence's terms its passages hold, which catches an
    unrelated passage or words the passage lacks, not a paraphrase. Neither sees a paraphrase
    that reverses the meaning. Sentences without a marker are listed but not graded: lead-ins
    and transitions carry no claim of a paper to support.
    """
    chunks_of = {cited.marker: cited.chunk_ids for cited in synthesis.citations}
    graded: list[tuple[str, list[str]]] = []
    uncited: list[str] = []
    for sentence in prose_sentences(synthesis.text):
        cited = list(dict.fromkeys(marker(paper, page) for paper, page in markers_in(sentence)))
        if cited:
            graded.append((sentence, cited))
        else:
            uncited.append(sentence)
    grades = _grades(graded, chunks_of, passages, threshold, embedder)
    unsupported = [grade for grade in grades if not grade.supported]
    metadata: dict[str, JsonValue] = {
        "threshold": threshold,
        "score": "lexical+semantic" if embedder is not None else "lexical",
        "cited_sentences": len(grades),
        "unsupported_sentences": len(unsupported),
        "uncited_sentences": len(uncited),
        "mean_score": round(sum(g.score for g in grades) / len(grades), 3) if grades else 0.0,
        "unsupported": [_quoted(grade.sentence) for grade in unsupported],
    }
    return SupportOutcome(
        passed=bool(grades) and not unsupported,
        description=_support_description(synthesis, grades, unsupported, threshold),
        metadata=metadata,
        grades=grades,
        uncited=uncited,
    )


def _grades(
    graded: list[tuple[str, list[str]]],
    chunks_of: Mapping[str, list[str]],
    passages: Mapping[str, str],
    threshold: float,
    embedder: Encoder | None,
) -> list[SentenceGrade]:
    # Each sentence against its cited passages together: a comparative sentence ("A does X
    # [a:1] while B does Y [b:2]") is rightly supported by its passages jointly, and neither
    # alone holds all its terms. A marker without a citation or passage contributes nothing.
    claims = [
        (
            without_markers(sentence, cited),
            [
                passages[chunk_id]
                for written in cited
                for chunk_id in chunks_of.get(written, [])
                if chunk_id in passages
            ],
        )
        for sentence, cited in graded
    ]
    return [
        SentenceGrade(
            sentence=sentence,
            markers=cited,
            score=scored.score,
            supported=scored.score >= threshold,
            missing=scored.missing,
            lexical=scored.lexical,
            semantic=scored.semantic,
        )
        for (sentence, cited), scored in zip(graded, support_scores(claims, embedder), strict=True)
    ]


def _support_description(
    synthesis: Synthesis,
    grades: list[SentenceGrade],
    unsupported: list[SentenceGrade],
    threshold: float,
) -> str:
    if not grades:
        return f"the {synthesis.audience} synthesis has no cited sentence"
    supported = len(grades) - len(unsupported)
    description = (
        f"{supported} of {len(grades)} cited sentences of the {synthesis.audience} synthesis "
        f"are supported by their passages (score >= {threshold})"
    )
    if unsupported:
        description += f"; first unsupported: {_quoted(unsupported[0].sentence)!r}"
    return description


def _quoted(sentence: str) -> str:
    return sentence if len(sentence) <= _QUOTE_CHARS else sentence[: _QUOTE_CHARS - 1] + "…"


def prose_sentences(markdown: str) -> list[str]:
    """The sentences of a Markdown text, read as the page shows it: headings left out, each
    list item on its own, and nothing from a references section on. Markers written after a
    sentence's full stop ("... storage. [a:3]") stay with that sentence."""
    found: list[str] = []
    for block in markdown_blocks(markdown):
        if block.kind == "heading":
            if block.texts[0].strip().lower() in _REFERENCES_HEADINGS:
                break
            continue
        for text in block.texts:
            found += cited_sentences(text)
    return found
