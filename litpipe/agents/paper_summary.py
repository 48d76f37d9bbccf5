"""The `paper_summary` agent: the map step of map-reduce synthesis, one paper's summary from its
insights and evidence, every sentence cited.

Its offline engine, the paper's insights and the evidence sentences MMR picks to ground them, is
`litpipe.extractive.paper_summary.offline_paper_summary`.
"""

from __future__ import annotations

from litpipe import citations
from litpipe.agents.base import Agent
from litpipe.extractive.paper_summary import (
    PaperSummaryInput,
    SummaryReply,
    offline_paper_summary,
)
from litpipe.llm.prompts import fence


class PaperSummaryAgent(Agent[PaperSummaryInput, SummaryReply]):
    name = "paper_summary"
    reply_tokens = 768
    offline = staticmethod(offline_paper_summary)

    def prompt_values(self, inputs: PaperSummaryInput) -> dict[str, str]:
        return dict(
            paper_id=inputs.paper_id,
            title=fence(inputs.title),
            theme=fence(inputs.theme),
            insights=fence("\n".join(f"- {insight}" for insight in inputs.insights)),
            evidence=citations.evidence_block(inputs.evidence),
        )
