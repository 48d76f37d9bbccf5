"""Grading of a written output (`litpipe.evaluation.grading`): each sentence split into its cited
segments, each segment graded against its own markers' passages."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Verdict = Literal["supported", "partially_supported", "unsupported"]
# A sentence's verdict: its worst segment's, or `uncited` when it has no marker.
SentenceVerdict = Literal["supported", "partially_supported", "unsupported", "uncited"]


class SegmentGrade(BaseModel):
    """One cited segment of a sentence (its text up to and with one group of markers) against
    the passages those markers cite."""

    text: str = Field(description="The segment as written, markers included.")
    markers: list[str] = Field(description="Its markers, as the citation format names them.")
    verdict: Verdict
    reason: str = Field(description="Why, in a sentence: the judge's, or the score's.")
    score: float | None = Field(
        default=None, description="The offline support score (None when a judge graded it)."
    )
    missing: list[str] = Field(
        default_factory=list, description="Offline: the segment's words its passages lack."
    )


class SentenceGrade(BaseModel):
    """One sentence of an output: its segments' grades and the worst of them."""

    sentence: str
    verdict: SentenceVerdict
    segments: list[SegmentGrade] = Field(description="Empty for an uncited sentence.")


class OutputGrades(BaseModel):
    """Every prose sentence of one output, graded in text order."""

    grader: str = Field(description="`offline` or the judge's model.")
    sentences: list[SentenceGrade]
