"""The `comparison_cells` agent: one paper's row of its collection's comparison table, a short
value per aspect from the paper's own passages retrieved for that aspect, each citing its
passage's `[paper_id:page]` marker or saying "not reported" (its prompt:
`litpipe/prompts/comparison_table/comparison_cells.md`). Its offline engine
(`litpipe.extractive.comparison_table.offline_cells`) takes each aspect's best passage
sentence, cut to the word limit.

One call per paper, with nothing of any other paper in it: a row is asked again only when its
passages, the aspects or the agent change, and the LLM cache answers the rest.

Every reply is checked (`checked_cell`), offline or not, so that a cell is never a guess: a
marker naming no passage of this paper (another paper's, a page not given) is removed; a value
left without a marker, or saying "not reported", is `NOT_REPORTED`; a longer value is cut to
`cell_words` (`capped`); an aspect the reply leaves out is not reported.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from litpipe import citations
from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.extractive.comparison_table import (
    CellsInput,
    CellsReply,
    capped,
    offline_cells,
)
from litpipe.llm.prompts import fence
from litpipe.schemas import NOT_REPORTED, ComparisonCell, ComparisonRow, RetrievedChunk
from litpipe.text import strip_markers, without_markers

logger = logging.getLogger(__name__)


class ComparisonCellsAgent(Agent[CellsInput, CellsReply]):
    name = "comparison_cells"
    reply_tokens = 512
    offline = staticmethod(offline_cells)

    def prompt_values(self, inputs: CellsInput) -> dict[str, str]:
        # One part per aspect: a prompt too long for the window loses its last aspects' passages.
        parts = [
            f"Aspect: {item.aspect}\n{citations.evidence_block(item.passages)}"
            for item in inputs.aspects
        ]
        return dict(
            title=fence(inputs.title),
            aspects="\n\n".join(parts),
            words=str(inputs.cell_words),
            not_reported=NOT_REPORTED,
        )


def checked_cell(
    aspect: str, value: str | None, passages: list[RetrievedChunk], words: int, engine: str
) -> ComparisonCell:
    """The reply's value for `aspect` as a cell: markers naming no passage given removed, then
    `NOT_REPORTED` where it says so, is missing or cites nothing left; else cut to `words`."""
    written = " ".join((value or "").split())
    _, unresolved = citations.citations(written, passages)
    if unresolved:
        logger.warning(
            "comparison_cells cited passages it was not given for %r; removed: %s",
            aspect,
            ", ".join(unresolved),
        )
        written = without_markers(written, unresolved)
    claim = strip_markers(written)
    resolved, _ = citations.citations(written, passages)
    if not resolved or not any(char.isalnum() for char in claim) or _says_not_reported(claim):
        return ComparisonCell(
            aspect=aspect, value=NOT_REPORTED, citations=[], not_reported=True, engine=engine
        )
    cut = capped(written, words)
    return ComparisonCell(
        aspect=aspect,
        value=cut,
        citations=citations.citations(cut, passages)[0],
        not_reported=False,
        engine=engine,
    )


def _says_not_reported(claim: str) -> bool:
    return claim.strip(" .").casefold() == NOT_REPORTED


def comparison_rows(batch: Sequence[CellsInput], asker: Asker) -> list[ComparisonRow]:
    """Each paper's row, in order: every paper's cells in one call of its own (all sent in one
    concurrent batch), or offline; each value checked (`checked_cell`)."""
    agent = ComparisonCellsAgent()
    replies = asker.ask_each(agent, batch)
    engine = asker.engine(agent.name)
    rows = []
    for inputs, reply in zip(batch, replies, strict=True):
        values: dict[str, str] = {}
        for cell in reply.cells:
            values.setdefault(" ".join(cell.aspect.split()).casefold(), cell.value)
        passages = inputs.passages()
        rows.append(
            ComparisonRow(
                paper_id=inputs.paper_id,
                title=inputs.title,
                cells=[
                    checked_cell(
                        item.aspect,
                        values.get(" ".join(item.aspect.split()).casefold()),
                        passages,
                        inputs.cell_words,
                        engine,
                    )
                    for item in inputs.aspects
                ],
                passages=passages,
            )
        )
    return rows
