"""A comparison table against a hand-checked gold table (issue 47, point 4): how many of its
cells say what the paper says, and whether the support check's verdicts track that.

The gold (`litpipe_tests/data/comparison_eval/`, its README says how it was made) holds one
record per (paper, aspect): whether the paper states the aspect, the pages where it does and a
few terms a correct value must hold (`GoldCell`). A table's cell is scored against its record:

- a filled cell is correct when it cites one of the gold pages of its own paper and its value
  (markers stripped, case-folded) holds one of the gold terms; both are needed because either
  alone is cheap: a cell citing the abstract page passes the page test for half the aspects, and
  a paper's key word turns up in most of its sentences;
- a "not reported" cell is correct when the gold says the paper is silent on the aspect;
- a gold cell the table lacks (its paper's row was left out) is wrong: the reader sees nothing.

The term-and-page match is a proxy, not a reading: a right value in other words fails it, a
wrong sentence holding a term on the right page passes it. Hence every wrong cell is named
(`WrongCell`) so that a reader can check the call.

Beside accuracy, the support check's verdict of each cell (`cell.grade`) is counted and
crossed with correctness: the check grades faithfulness to the cited passage, not relevance to
the aspect, and the cross-tab shows how far the two part.

Pure Python: the benchmark, the tests and a notebook share it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from litpipe.evaluation.citation_graph import PrecisionRecall, precision_recall
from litpipe.evaluation.datasets import json_lines
from litpipe.schemas import ComparisonCell, ComparisonTable
from litpipe.text import strip_markers

GOLD_FILE = "gold.jsonl"

# Why a cell is wrong, as the list of wrong cells names it.
WrongReason = Literal[
    "wrong page",  # holds a gold term but cites none of the gold pages
    "no term",  # cites a gold page but holds none of the gold terms
    "wrong page and no term",
    "filled where silent",  # the paper does not state the aspect
    "not reported where stated",
    "missing",  # no cell for it in the table (the paper's row left out)
]
# What a cell's support verdict is counted as where the check left it without a grade: every
# "not reported" cell (it claims nothing) and a filled one the check was not run on.
UNGRADED = "ungraded"


class GoldCell(BaseModel):
    """What one paper states of one aspect, as one reader found it in the PDF."""

    paper_id: str = Field(description="The PDF's file stem.")
    aspect: str
    reported: bool = Field(description="Whether the paper states the aspect at all.")
    value: str = Field(description="The reader's short paraphrase; '' when not reported.")
    pages: list[int] = Field(description="1-based PDF pages stating it; [] when not reported.")
    terms: list[str] = Field(
        description="Lower-case words or short phrases, one of which a correct value holds; "
        "[] when not reported."
    )


def read_gold(folder: Path) -> list[GoldCell]:
    """The gold's records in file order; a bad line raises `ValueError` naming its line."""
    return [cell for _, cell in json_lines(folder / GOLD_FILE, GoldCell)]


class WrongCell(BaseModel):
    """A cell that disagrees with the gold, with what a reader needs to check the call."""

    paper_id: str
    aspect: str
    reason: WrongReason
    value: str = Field(description="The table's value; '' for a missing cell.")
    cited_pages: list[int] = Field(description="The pages of its own paper the cell cites.")
    gold_pages: list[int]
    gold_value: str


class AspectScores(BaseModel):
    """One aspect's (or the whole table's) cells against the gold."""

    cells: int = Field(description="Gold cells: what accuracy rests on.")
    correct: int = Field(description="Filled and right, plus 'not reported' and silent.")
    accuracy: float | None = Field(description="None when the gold has no cell.")
    filled: PrecisionRecall = Field(
        description="Of the filled cells, the share correct (precision); of the cells the gold "
        "says are stated, the share filled correctly (recall)."
    )


class NotReportedAgreement(BaseModel):
    """Where the table and the gold agree, or not, on a paper's silence."""

    silent: int = Field(description="Gold cells whose paper does not state the aspect.")
    silent_left: int = Field(description="Of those, left 'not reported' by the table.")
    silent_filled: int = Field(description="Of those, filled by the table.")
    stated_left: int = Field(description="Cells the paper states that the table left empty.")


class SupportCrossTab(BaseModel):
    """The support check against correctness, over the filled cells."""

    correct: int
    correct_supported: int = Field(description="Correct cells the check found supported.")
    incorrect: int
    incorrect_supported: int = Field(description="Wrong cells the check found supported.")


class GoldScores(BaseModel):
    """A comparison table scored against the gold."""

    overall: AspectScores
    by_aspect: dict[str, AspectScores] = Field(description="In the gold's aspect order.")
    not_reported: NotReportedAgreement
    support: dict[str, int] = Field(
        description="Every gold cell's support verdict (`cell.grade.verdict`), `ungraded` where "
        "it has none: the 'not reported' cells and missing ones among them."
    )
    support_by_correctness: SupportCrossTab
    wrong: list[WrongCell]


def _key(paper_id: str, aspect: str) -> tuple[str, str]:
    return paper_id, " ".join(aspect.casefold().split())


def cited_pages(cell: ComparisonCell, paper_id: str) -> list[int]:
    """The pages of `paper_id` the cell cites, once each, in order: a marker of another paper
    never makes a cell right."""
    return sorted({citation.page for citation in cell.citations if citation.paper_id == paper_id})


def holds_term(value: str, terms: Iterable[str]) -> bool:
    """Whether the value, its markers stripped, holds one of the terms: compared case-folded and
    with runs of space as one, as the gold's terms are checked against the PDFs' pages."""
    text = " ".join(strip_markers(value).replace("\u00ad", "").casefold().split())
    return any(" ".join(term.casefold().split()) in text for term in terms)


def _judged(gold: GoldCell, cell: ComparisonCell | None) -> WrongReason | None:
    """Why the cell is wrong against its gold record; None when it is right."""
    if cell is None:
        return "missing"
    if cell.not_reported:
        return None if not gold.reported else "not reported where stated"
    if not gold.reported:
        return "filled where silent"
    on_page = bool(set(cited_pages(cell, gold.paper_id)) & set(gold.pages))
    has_term = holds_term(cell.value, gold.terms)
    if on_page and has_term:
        return None
    if has_term:
        return "wrong page"
    return "no term" if on_page else "wrong page and no term"


def _scores(
    judged: list[tuple[GoldCell, ComparisonCell | None, WrongReason | None]],
) -> AspectScores:
    correct = sum(reason is None for _, _, reason in judged)
    filled = [(g, c, r) for g, c, r in judged if c is not None and not c.not_reported]
    return AspectScores(
        cells=len(judged),
        correct=correct,
        accuracy=correct / len(judged) if judged else None,
        filled=precision_recall(
            correct=sum(reason is None for _, _, reason in filled),
            predicted=len(filled),
            expected=sum(gold.reported for gold, _, _ in judged),
        ),
    )


def score_table(table: ComparisonTable, gold: list[GoldCell]) -> GoldScores:
    """The table's cells against the gold's: accuracy overall and per aspect, precision and
    recall of the filled cells, the agreement on silence, the support verdicts and their
    cross-tab with correctness, and every wrong cell named. Cells of aspects or papers the gold
    has no record of are not scored."""
    cells = {
        _key(row.paper_id, cell.aspect): (row.paper_id, cell)
        for row in table.rows
        for cell in row.cells
    }
    judged: list[tuple[GoldCell, ComparisonCell | None, WrongReason | None]] = []
    for record in gold:
        found = cells.get(_key(record.paper_id, record.aspect))
        cell = found[1] if found else None
        judged.append((record, cell, _judged(record, cell)))

    aspects = list(dict.fromkeys(record.aspect for record in gold))
    by_aspect = {
        aspect: _scores([entry for entry in judged if entry[0].aspect == aspect])
        for aspect in aspects
    }
    silent = [(g, c) for g, c, _ in judged if not g.reported]
    agreement = NotReportedAgreement(
        silent=len(silent),
        silent_left=sum(c is not None and c.not_reported for _, c in silent),
        silent_filled=sum(c is not None and not c.not_reported for _, c in silent),
        stated_left=sum(reason == "not reported where stated" for _, _, reason in judged),
    )
    support = Counter(
        cell.grade.verdict if cell is not None and cell.grade is not None else UNGRADED
        for _, cell, _ in judged
    )
    filled = [(c, r) for _, c, r in judged if c is not None and not c.not_reported]
    cross = SupportCrossTab(
        correct=sum(r is None for _, r in filled),
        correct_supported=sum(r is None and _supported(c) for c, r in filled),
        incorrect=sum(r is not None for _, r in filled),
        incorrect_supported=sum(r is not None and _supported(c) for c, r in filled),
    )
    wrong = [
        WrongCell(
            paper_id=record.paper_id,
            aspect=record.aspect,
            reason=reason,
            value=cell.value if cell is not None else "",
            cited_pages=cited_pages(cell, record.paper_id) if cell is not None else [],
            gold_pages=record.pages,
            gold_value=record.value,
        )
        for record, cell, reason in judged
        if reason is not None
    ]
    return GoldScores(
        overall=_scores(judged),
        by_aspect=by_aspect,
        not_reported=agreement,
        support=dict(sorted(support.items())),
        support_by_correctness=cross,
        wrong=wrong,
    )


def _supported(cell: ComparisonCell) -> bool:
    return cell.grade is not None and cell.grade.verdict == "supported"
