"""The `refine_summary` agent: one step of the refine pattern of the synthesis, the collection's
running summary updated with one more paper (its question-and-answer pairs), every claim cited.

The steps run one after another, in the analysis' order of the papers
(`litpipe.workflows.synthesis.refined_summary`). Its offline engine
(`litpipe.extractive.refine_summary.offline_refine`) keeps the running summary as it is and adds
the paper's own cited sentences after it.
"""

from __future__ import annotations

from litpipe.agents.base import Agent
from litpipe.agents.synthesis import question_answer_pairs
from litpipe.extractive.paper_summary import SummaryReply
from litpipe.extractive.refine_summary import RefineInput, offline_refine
from litpipe.llm.prompts import fence


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
