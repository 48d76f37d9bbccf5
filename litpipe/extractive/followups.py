"""The offline engine of the `followups` agent, the refinement pass of the relationship analysis:
new questions for a paper whose insights are thin.

It reuses the `paper_questions` engine's frames and key phrases: it writes more questions than
the paper was asked, drops those already asked, and keeps the ones whose words the asked
questions hold least (new aspects and phrases first).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from litpipe.extractive.paper_questions import QuestionsInput, QuestionText, offline_questions
from litpipe.text import words

# Asking the questions agent for this many of each style spans all its frames more than twice.
_OFFLINE_PER_STYLE = 10


class FollowUpsInput(BaseModel):
    paper_id: str
    title: str
    abstract: str
    asked: list[str] = Field(description="The questions already asked of the paper.")
    reason: str
    count: int = Field(ge=1, le=10)


class FollowUpDraft(QuestionText):
    style: Literal["follow_up"] = "follow_up"


class FollowUpsReply(BaseModel):
    questions: list[FollowUpDraft]


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def offline_follow_ups(inputs: FollowUpsInput) -> FollowUpsReply:
    candidates = offline_questions(
        QuestionsInput(
            paper_id=inputs.paper_id,
            title=inputs.title,
            abstract=inputs.abstract,
            per_style=_OFFLINE_PER_STYLE,
        )
    ).questions
    asked_keys = {_key(text) for text in inputs.asked}
    asked_words = {word for text in inputs.asked for word in words(text)}
    fresh = list(dict.fromkeys(d.text for d in candidates if _key(d.text) not in asked_keys))
    # Stable: among equally new questions, the questions agent's order (its priorities) holds.
    fresh.sort(key=lambda text: -len(set(words(text)) - asked_words))
    return FollowUpsReply(questions=[FollowUpDraft(text=text) for text in fresh[: inputs.count]])
