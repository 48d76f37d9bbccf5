"""The support check of a comparison table: every filled cell graded against the passages its
markers cite, as a synthesis' sentences are (`grading.grade_sentences`: each cited segment by
the `claim_judge` agent, offline the calibrated support score), all the table's cells in one
batch. A "not reported" cell cites nothing and claims nothing: it is not graded.

Pure Python: the Dagster check and a notebook share it.
"""

from __future__ import annotations

from pydantic import JsonValue

from litpipe.agents.asker import Asker
from litpipe.evaluation.checks import CheckOutcome
from litpipe.evaluation.grading import cited_passages, grade_sentences
from litpipe.retrieval.support import Encoder
from litpipe.schemas import ComparisonCell, ComparisonRow, ComparisonTable
from litpipe.settings import GradingSettings
from litpipe.text import counted


def graded_cells(
    table: ComparisonTable,
    grading: GradingSettings,
    asker: Asker,
    encoder: Encoder | None = None,
) -> ComparisonTable:
    """The table with every filled cell's `grade`: its value against the texts of the passages
    its citations resolve to among its row's passages."""
    filled = [(row, cell) for row in table.rows for cell in row.cells if not cell.not_reported]
    passages: dict[str, list[str]] = {}
    for row in table.rows:
        texts = {chunk.chunk_id: chunk.text for chunk in row.passages}
        for cell in row.cells:
            passages.update(cited_passages(cell.citations, texts))
    grades = iter(
        grade_sentences([cell.value for _, cell in filled], passages, grading, asker, encoder)
    )
    graded = {id(cell): next(grades) for _, cell in filled}

    def with_grade(cell: ComparisonCell) -> ComparisonCell:
        grade = graded.get(id(cell))
        return cell if grade is None else cell.model_copy(update={"grade": grade})

    rows = [
        row.model_copy(update={"cells": [with_grade(cell) for cell in row.cells]})
        for row in table.rows
    ]
    return table.model_copy(update={"rows": rows})


def cells_support(table: ComparisonTable, grader: str) -> CheckOutcome:
    """The support check of a graded table (`graded_cells`; `grader` names its judge,
    `Asker.engine` of `claim_judge`): passes when every filled cell is supported by the
    passages it cites (a table with no filled cell passes: it claims nothing). Metadata: the
    counts and each flagged cell with its verdict and reason."""
    filled = [(row, cell) for row in table.rows for cell in row.cells if not cell.not_reported]
    flagged = [
        (row, cell)
        for row, cell in filled
        if cell.grade is None or cell.grade.verdict != "supported"
    ]
    supported = len(filled) - len(flagged)
    description = (
        f"{supported} of {counted(len(filled), 'filled cell')} of the comparison table "
        f"{'is' if supported == 1 else 'are'} supported by their passages (graded by {grader})"
    )
    if flagged:
        row, cell = flagged[0]
        description += f"; first flagged: {row.paper_id}, {cell.aspect}: {cell.value!r}"
    metadata: dict[str, JsonValue] = {
        "grader": grader,
        "filled_cells": len(filled),
        "supported_cells": supported,
        "not_reported_cells": sum(cell.not_reported for row in table.rows for cell in row.cells),
        "flagged": [_flagged(row, cell) for row, cell in flagged],
    }
    return CheckOutcome(passed=not flagged, description=description, metadata=metadata)


def _flagged(row: ComparisonRow, cell: ComparisonCell) -> dict[str, JsonValue]:
    grade = cell.grade
    return {
        "paper_id": row.paper_id,
        "aspect": cell.aspect,
        "value": cell.value,
        "verdict": grade.verdict if grade is not None else "not graded",
        "reason": "; ".join(segment.reason for segment in grade.segments) if grade else "",
    }
