"""The `followups` agent: the refinement pass of the relationship analysis. A paper whose
insights are thin (too few cite its text, or the narrative does not name it) is asked new
questions about what the questions already asked missed.

The offline engine reuses the `questions` agent's frames and key phrases: it writes more
questions than the paper was asked, drops those already asked, and keeps the ones whose words
the asked questions hold least (new aspects and phrases first).
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, Field

from litpipe.agents.base import Agent, StructuredClient, run_agent
from litpipe.agents.paper_questions import QuestionsInput, QuestionText, offline_questions
from litpipe.llm.prompts import PromptLibrary, fence
from litpipe.schemas import Insight, PaperAbstract, Question
from litpipe.settings import Settings
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


class FollowUpsAgent(Agent[FollowUpsInput, FollowUpsReply]):
    name = "followups"
    reply_tokens = 256
    offline = staticmethod(offline_follow_ups)

    def prompt_values(self, inputs: FollowUpsInput) -> dict[str, str]:
        asked = "\n".join(f"- {text}" for text in inputs.asked) or "(none)"
        return dict(
            count=str(inputs.count),
            reason=inputs.reason,
            title=fence(inputs.title),
            abstract=fence(inputs.abstract),
            asked=fence(asked),
        )


def thin_papers(
    papers: list[str], insights: list[Insight], named: set[str], minimum: int
) -> dict[str, str]:
    """Paper id -> why it needs follow-up questions, for each paper with fewer than `minimum`
    insights citing its text, or that the narrative does not name."""
    citing = Counter(insight.paper_id for insight in insights if insight.citations)
    thin: dict[str, str] = {}
    for paper in papers:
        cited = citing[paper]
        reasons = []
        if cited < minimum:
            reasons.append(
                f"only {cited} of its insights cite its text (at least {minimum} wanted)"
            )
        if paper not in named:
            reasons.append("the synthesis narrative does not name it")
        if reasons:
            thin[paper] = "; ".join(reasons)
    return thin


def follow_up_questions(
    abstract: PaperAbstract,
    asked: list[Question],
    reason: str,
    settings: Settings,
    prompts: PromptLibrary,
    client: StructuredClient | None,
) -> list[Question]:
    """settings.synthesis.follow_up_questions new questions for a thin paper, none repeating one
    asked (ignoring case and spacing), ids `<paper_id>:f00`, `:f01`, ...; none, and no call,
    when that is 0 (the default: no refinement pass)."""
    if settings.synthesis.follow_up_questions == 0:
        return []
    inputs = FollowUpsInput(
        paper_id=abstract.paper_id,
        title=abstract.title,
        abstract=abstract.abstract,
        asked=[question.text for question in asked],
        reason=reason,
        count=settings.synthesis.follow_up_questions,
    )
    reply = run_agent(FollowUpsAgent(), inputs, settings, prompts, client)
    seen = {_key(text) for text in inputs.asked}
    kept: list[str] = []
    for draft in reply.questions:
        if _key(draft.text) not in seen and len(kept) < inputs.count:
            seen.add(_key(draft.text))
            kept.append(draft.text)
    return [
        Question(
            question_id=f"{abstract.paper_id}:f{index:02d}",
            paper_id=abstract.paper_id,
            style="follow_up",
            text=text,
        )
        for index, text in enumerate(kept)
    ]
