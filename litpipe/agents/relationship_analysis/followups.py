"""The `followups` agent: the refinement pass of the relationship analysis. A paper whose
insights are thin (too few cite its text, or the narrative does not name it) is asked new
questions about what the questions already asked missed.

Its offline engine (`litpipe.extractive.followups.offline_follow_ups`) reuses the
`paper_questions` engine's frames and key phrases, keeping the questions least like those
already asked.
"""

from __future__ import annotations

from collections import Counter

from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.extractive.followups import FollowUpsInput, FollowUpsReply, offline_follow_ups
from litpipe.llm.prompts import fence
from litpipe.schemas import Insight, PaperAbstract, Question


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


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
    count: int,
    asker: Asker,
) -> list[Question]:
    """`count` new questions (`synthesis.follow_up_questions`) for a thin paper, none repeating
    one asked (ignoring case and spacing), ids `<paper_id>:f00`, `:f01`, ...; none, and no
    call, when that is 0 (the default: no refinement pass)."""
    if count == 0:
        return []
    inputs = FollowUpsInput(
        paper_id=abstract.paper_id,
        title=abstract.title,
        abstract=abstract.abstract,
        asked=[question.text for question in asked],
        reason=reason,
        count=count,
    )
    reply = asker.ask(FollowUpsAgent(), inputs)
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
