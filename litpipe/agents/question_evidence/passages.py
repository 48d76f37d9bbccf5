"""What the passage-judging agents (`relevance`, `debate`) share: how their input, one passage
and the query it is judged against (`litpipe.extractive.passages.PassageInput`), fills their
prompts."""

from __future__ import annotations

from litpipe.agents.base import Agent, Reply
from litpipe.extractive.passages import PassageInput
from litpipe.llm.prompts import fence


class PassageAgent(Agent[PassageInput, Reply]):
    """An agent that judges one passage against a query; the query and the passage are both
    fenced, so neither can instruct the model."""

    def prompt_values(self, inputs: PassageInput) -> dict[str, str]:
        return dict(
            query=fence(inputs.query, "query"),
            passage_id=inputs.passage_id,
            passage=fence(inputs.passage),
        )
