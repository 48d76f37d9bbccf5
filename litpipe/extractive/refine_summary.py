"""The offline engine of the `refine_summary` agent: one step of the refine pattern of the
synthesis, the collection's running summary updated with one more paper.

The running summary is kept as it is and the paper's own cited sentences (its insights and the
evidence sentences MMR picks, as the map step's offline summary) are added after it.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.extractive.paper_summary import PaperSummaryInput, SummaryReply, offline_paper_summary
from litpipe.schemas import Answer


class RefineInput(BaseModel):
    running: str = Field(description="The summary of the papers before this one; empty first.")
    summarized: list[str] = Field(description="The papers the running summary covers.")
    paper: PaperSummaryInput = Field(description="The paper to add: its insights and evidence.")
    answers: list[Answer] = Field(description="The paper's question-and-answer pairs.")
    answer_chars: int = Field(description="`synthesis.answer_chars`: where each answer is cut.")


def offline_refine(inputs: RefineInput) -> SummaryReply:
    """The running summary, then the paper's own cited sentences."""
    added = offline_paper_summary(inputs.paper).summary
    return SummaryReply(summary="\n\n".join(part for part in (inputs.running, added) if part))
