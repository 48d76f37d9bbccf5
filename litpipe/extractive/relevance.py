"""The offline engine of the `relevance` agent: how relevant one passage is to a query, 1 to 10,
with a reason.

It scores the share of the query's distinct terms the passage contains (no IDF: a passage is
judged on its own), mapped linearly onto 1-10, and its reason names the matched words as the
passage writes them.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from litpipe.extractive.fields import NON_BLANK
from litpipe.extractive.passages import PassageInput
from litpipe.retrieval.rerank import term_coverage

MIN_SCORE = 1
MAX_SCORE = 10


class RelevanceReply(BaseModel):
    # The reason comes first: a model writing its JSON in order judges before it scores.
    reason: str = Field(
        description="One sentence saying why the passage deserves its score.", pattern=NON_BLANK
    )
    score: int = Field(ge=MIN_SCORE, le=MAX_SCORE, description="10: answers the query directly.")

    @field_validator("reason")
    @classmethod
    def _one_line(cls, reason: str) -> str:
        return " ".join(reason.split())


def offline_relevance(inputs: PassageInput) -> RelevanceReply:
    coverage = term_coverage(inputs.query, inputs.passage)
    score = MIN_SCORE + round((MAX_SCORE - MIN_SCORE) * coverage.share)
    return RelevanceReply(reason=coverage.describe(), score=score)
