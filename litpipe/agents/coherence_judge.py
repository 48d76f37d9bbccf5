"""The `coherence_judge` agent: how well a written output reads as one argument, 1 to 5, and
the issues that cost points.

A judge-only grade: no extractive measure says whether a text's argument holds together, so the
agent has no offline engine to speak of. Grading calls it only when its route has a model
(`litpipe.evaluation.grading.grade_coherence` reports the grade as skipped otherwise); called
offline anyway, it refuses.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from litpipe.agents.base import Agent
from litpipe.llm.prompts import fence


class CoherenceInput(BaseModel):
    title: str
    text: str = Field(description="The output, in Markdown.")


class CoherenceReply(BaseModel):
    # The issues first: a model writing its JSON in order finds them before it scores.
    issues: list[str] = Field(description="What costs points, a few words each; empty for a 5.")
    score: int = Field(ge=1, le=5, description="5: one clear argument; 1: none.")


class CoherenceJudgeAgent(Agent[CoherenceInput, CoherenceReply]):
    name = "coherence_judge"
    reply_tokens = 256

    def prompt_values(self, inputs: CoherenceInput) -> dict[str, str]:
        # The text (its title too) is a model's, quoting the papers: fenced, like them.
        return dict(text=fence(f"# {inputs.title}\n\n{inputs.text}", "text"))

    def offline(self, inputs: CoherenceInput) -> CoherenceReply:
        raise ValueError("coherence is graded by a model only: route coherence_judge to one")
