"""The offline engine of the `related_work_plan` agent (LitLLM's plan-based generation): a
sentence plan for the related-work section.

The offline plan is the shape the writer's prompt asks for: the references in the debate's
order, spread evenly over every sentence but the last, each sentence citing its share; the last
motivates the idea from what they leave open.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.extractive.related_work import RelatedWorkInput, citation


class RelatedWorkPlanReply(BaseModel):
    sentences: list[str] = Field(
        description="The plan: one line per sentence of the section, in order, saying what "
        "the sentence does and which references it cites as [id]."
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
