"""The `related_work_plan` agent (LitLLM's plan-based generation): a sentence plan for the
related-work section (which references each sentence cites and what it does), written before
the section and handed to the writer, which then writes to it.

The plan is the setting `related_work.plan`: `none` (the writer plans for itself), `auto` (this
agent writes the plan) or a plan of the user's own, given to the writer as written. A plan only
guides: the section is held to the same rules whatever the plan says (`review`).

Its offline engine (`litpipe.extractive.related_work_plan.offline_related_work_plan`) plans
the shape the writer's prompt asks for: the references spread evenly over every sentence but the
last, which motivates the idea.
"""

from __future__ import annotations

from litpipe.agents.base import Agent
from litpipe.agents.related_work import writing_values
from litpipe.extractive.related_work import RelatedWorkInput
from litpipe.extractive.related_work_plan import RelatedWorkPlanReply, offline_related_work_plan

NO_PLAN = "none"
AUTO_PLAN = "auto"


def plan_text(reply: RelatedWorkPlanReply) -> str:
    """The plan as the writer reads it, one numbered line per planned sentence; empty when the
    reply plans no sentence."""
    lines = [" ".join(line.split()) for line in reply.sentences]
    return "\n".join(
        f"Sentence {number}: {line}" for number, line in enumerate(filter(None, lines), 1)
    )


class RelatedWorkPlanAgent(Agent[RelatedWorkInput, RelatedWorkPlanReply]):
    name = "related_work_plan"
    reply_tokens = 512
    offline = staticmethod(offline_related_work_plan)

    def prompt_values(self, inputs: RelatedWorkInput) -> dict[str, str]:
        return writing_values(inputs)
