"""The `coherence_judge` agent: how well a written output reads as one argument, 1 to 5, and
the issues that cost points.

A judge-only grade: no extractive measure says whether a text's argument holds together, so the
agent's offline reply is "not graded" (no score): where its model's reply cannot be used, the
coherence check is skipped with the reason, and never blocks the output it grades
(`litpipe.evaluation.grading.coherence`). Grading asks it only when its route has a model.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from litpipe.agents.base import Agent
from litpipe.llm.prompts import fence


class CoherenceInput(BaseModel):
    title: str
    text: str = Field(description="The output, in Markdown.")


class CoherenceReply(BaseModel):
    # The issues first: a model writing its JSON in order finds them before it scores.
    issues: list[str] = Field(description="What costs points, a few words each; empty for a 5.")
    # None, "not graded", is the offline reply's: left out of the schema a model is shown.
    score: Annotated[int, Field(ge=1, le=5)] | SkipJsonSchema[None] = Field(
        description="5: one clear argument; 1: none."
    )


class CoherenceJudgeAgent(Agent[CoherenceInput, CoherenceReply]):
    name = "coherence_judge"
    reply_tokens = 256
    grades = True

    def prompt_values(self, inputs: CoherenceInput) -> dict[str, str]:
        # The text (its title too) is a model's, quoting the papers: fenced, like them.
        return dict(text=fence(f"# {inputs.title}\n\n{inputs.text}", "text"))

    def offline(self, inputs: CoherenceInput) -> CoherenceReply:
        return CoherenceReply(issues=[], score=None)
