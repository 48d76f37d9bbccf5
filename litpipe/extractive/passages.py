"""The input of the passage-judging agents (`relevance`, `debate`): one passage and the query it
is judged against."""

from __future__ import annotations

from pydantic import BaseModel, Field


class PassageInput(BaseModel):
    query: str = Field(description="A question, a claim or a research idea.")
    passage_id: str
    passage: str
