"""Citation precision and recall of a written text's sources against gold citations.

Document level: the set of sources (papers) the text cites against the set the gold text (an
expert's answer, a gold paragraph) cites, each source counted once however often it is cited.

- precision: the share of the cited sources that the gold cites; a text citing nothing has
  precision 0 (it points the reader to no right source), not an undefined value left out of
  the mean, which would reward citing nothing;
- recall: the share of the gold's sources that the text cites; undefined (None) when the gold
  cites nothing, and such examples are left out of the mean recall;
- F1: their harmonic mean (0 when both are 0; None when recall is).

Whether a text cites for one claim the source the gold cites for the same claim needs the two
texts' claims aligned, which the datasets do not give; that is not measured here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field


class CitationAccuracy(BaseModel):
    cited: int = Field(description="Distinct sources the text cites.")
    gold: int = Field(description="Distinct sources the gold cites.")
    correct: int = Field(description="Sources cited by both.")
    precision: float
    recall: float | None = Field(description="None when the gold cites nothing.")
    f1: float | None


def citation_accuracy(cited: Iterable[str], gold: Iterable[str]) -> CitationAccuracy:
    """Precision, recall and F1 of the sources `cited` against the `gold` ones."""
    cited_set, gold_set = set(cited), set(gold)
    correct = len(cited_set & gold_set)
    precision = correct / len(cited_set) if cited_set else 0.0
    recall = correct / len(gold_set) if gold_set else None
    f1 = None
    if recall is not None:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return CitationAccuracy(
        cited=len(cited_set),
        gold=len(gold_set),
        correct=correct,
        precision=precision,
        recall=recall,
        f1=f1,
    )


class MeanCitationAccuracy(BaseModel):
    precision: float
    recall: float | None = Field(description="Over the examples whose gold cites something.")
    f1: float | None
    examples: int = Field(description="Examples in the mean precision.")
    with_gold: int = Field(description="Examples in the mean recall and F1.")


def mean_accuracy(found: Sequence[CitationAccuracy]) -> MeanCitationAccuracy:
    """Macro means over examples (not empty): every question weighs the same."""
    scored = [a for a in found if a.recall is not None]
    return MeanCitationAccuracy(
        precision=sum(a.precision for a in found) / len(found),
        recall=sum(a.recall or 0.0 for a in scored) / len(scored) if scored else None,
        f1=sum(a.f1 or 0.0 for a in scored) / len(scored) if scored else None,
        examples=len(found),
        with_gold=len(scored),
    )
