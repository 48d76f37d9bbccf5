"""The `related_work_plan` agent (LitLLM's plan-based generation): a sentence plan for the
related-work section (which references each sentence cites and what it does), written before
the section and handed to the writer, which then writes to it.

The plan is the setting `related_work.plan`: `none` (the writer plans for itself), `auto` (this
agent writes the plan) or a plan of the user's own, given to the writer as written. A plan only
guides: the section is held to the same rules whatever the plan says (`review`).

The offline engine's plan is the shape the writer's prompt asks for: the references in the
debate's order, spread evenly over every sentence but the last, each sentence citing its
share; the last motivates the idea from what they leave open.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.agents.base import Agent
from litpipe.agents.related_work import RelatedWorkInput, citation, writing_values

NO_PLAN = "none"
AUTO_PLAN = "auto"


class RelatedWorkPlanReply(BaseModel):
    sentences: list[str] = Field(
        description="The plan: one line per sentence of the section, in order, saying what "
        "the sentence does and which references it cites as [id]."
    )


def plan_text(reply: RelatedWorkPlanReply) -> str:
    """The plan as the writer reads it, one numbered line per planned sentence; empty when the
    reply plans no sentence."""
    lines = [" ".join(line.split()) for line in reply.sentences]
    return "\n".join(
        f"Sentence {number}: {line}" for number, line in enumerate(filter(None, lines), 1)
    )


def offline_related_work_plan(inputs: RelatedWorkInput) -> RelatedWorkPlanReply:
    """The references in the debate's order, spread evenly over every sentence but the last
    (the earlier sentences taking one more when they do not divide), the last motivating the
    idea; one sentence citing them all and motivating the idea when only one is asked for."""
    ids = inputs.ids
    if inputs.sentences == 1 or not ids:
        everything = f"cite {citation(ids)} and " if ids else ""
        return RelatedWorkPlanReply(
            sentences=[f"{everything}motivate the research idea from what they leave open."]
        )
    slots = min(inputs.sentences - 1, len(ids))
    share, extra = divmod(len(ids), slots)
    planned, start = [], 0
    for slot in range(slots):
        end = start + share + (1 if slot < extra else 0)
        doing = "it does" if end - start == 1 else "they do"
        planned.append(f"cite {citation(ids[start:end])}: what {doing}, against the others.")
        start = end
    planned.append("motivate the research idea from what these works leave open.")
    return RelatedWorkPlanReply(sentences=planned)


class RelatedWorkPlanAgent(Agent[RelatedWorkInput, RelatedWorkPlanReply]):
    name = "related_work_plan"
    reply_tokens = 512
    offline = staticmethod(offline_related_work_plan)

    def prompt_values(self, inputs: RelatedWorkInput) -> dict[str, str]:
        return writing_values(inputs)
