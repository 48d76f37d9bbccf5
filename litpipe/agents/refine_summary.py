"""The `refine_summary` agent: one step of the refine pattern of the synthesis, the collection's
running summary updated with one more paper (its question-and-answer pairs), every claim cited.

The steps run one after another, in the analysis' order of the papers
(`litpipe.workflows.synthesis.refined_summary`). Offline, the running summary is kept as it is
and the paper's own cited sentences (its insights and the evidence sentences MMR picks, as the
map step's offline summary) are added after it.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.agents.base import Agent
from litpipe.agents.paper_summary import PaperSummaryInput, SummaryReply, offline_paper_summary
from litpipe.agents.synthesis import question_answer_pairs
from litpipe.llm.prompts import fence
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


class RefineSummaryAgent(Agent[RefineInput, SummaryReply]):
    name = "refine_summary"
    reply_tokens = 1024
    offline = staticmethod(offline_refine)

    def prompt_values(self, inputs: RefineInput) -> dict[str, str]:
        pairs = question_answer_pairs(inputs.answers, inputs.answer_chars)
        return dict(
            paper_id=inputs.paper.paper_id,
            summarized=", ".join(inputs.summarized) or "(none: this is the first paper)",
            theme=fence(inputs.paper.theme),
            running=fence(inputs.running or "(empty)"),
            title=fence(inputs.paper.title),
            answers=fence(pairs or "(no answers)"),
        )
