"""The `insights` agent: the key insight of every question-and-answer pair of a paper, none
skipped, each one sentence citing the answer's evidence.

One call per paper (the collection's comparative answers make one more group), all sent at once.
The reply is checked against its input: every question gets exactly one insight (a missing one
is filled by the offline engine's), insights about questions not asked are dropped, and markers
that do not resolve against the answer's evidence are removed.

Its offline engine (`litpipe.extractive.insights.offline_insights`) takes the answer's most
informative cited sentence, verbatim with its marker.
"""

from __future__ import annotations

import logging

from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.citations import citations
from litpipe.extractive.insights import (
    InsightsInput,
    InsightsReply,
    offline_insight,
    offline_insights,
)
from litpipe.llm.prompts import fence
from litpipe.schemas import Answer, Citation, Insight
from litpipe.text import strip_markers, without_markers, words

log = logging.getLogger(__name__)

COMPARATIVE_GROUP = ""


class InsightsAgent(Agent[InsightsInput, InsightsReply]):
    name = "insights"
    reply_tokens = 1024
    offline = staticmethod(offline_insights)

    def prompt_values(self, inputs: InsightsInput) -> dict[str, str]:
        pairs = "\n\n".join(pair_block(answer) for answer in inputs.answers)
        return dict(count=str(len(inputs.answers)), pairs=pairs)


def pair_block(answer: Answer) -> str:
    markers = ", ".join(citation.marker for citation in answer.citations)
    return (
        f"Question {answer.question.question_id}:\n{fence(answer.question.text)}\n"
        f"Markers it may cite: {markers or '(none: the passages did not answer it)'}\n"
        f"Answer:\n{fence(answer.text)}"
    )


def checked(inputs: InsightsInput, reply: InsightsReply) -> list[tuple[str, list[Citation]]]:
    """One (text, citations) per answer, in the answers' order: the reply's insight about it
    with unresolvable markers removed, or the offline insight where the reply has none."""
    drafts: dict[str, str] = {}
    for draft in reply.insights:
        drafts.setdefault(draft.question_id, draft.text)
    kept = []
    for answer in inputs.answers:
        question_id = answer.question.question_id
        resolved, unresolved = citations(drafts.get(question_id, ""), answer.evidence)
        text = without_markers(drafts.get(question_id, ""), unresolved)
        if not words(strip_markers(text)):
            log.warning(
                "insights: no insight about %s in the reply; the offline one used", question_id
            )
            text = offline_insight(answer)
            resolved, _ = citations(text, answer.evidence)
        kept.append((" ".join(text.split()), resolved))
    return kept


def pair_groups(answers: list[Answer]) -> list[InsightsInput]:
    """The answers by paper, papers in order of first appearance, then the comparative ones."""
    by_paper: dict[str, list[Answer]] = {}
    comparative: list[Answer] = []
    for answer in answers:
        if answer.question.style == "comparative" or not answer.question.paper_id:
            comparative.append(answer)
        else:
            by_paper.setdefault(answer.question.paper_id, []).append(answer)
    groups = [InsightsInput(paper_id=paper, answers=group) for paper, group in by_paper.items()]
    if comparative:
        groups.append(InsightsInput(paper_id=COMPARATIVE_GROUP, answers=comparative))
    return groups


def _papers(group: InsightsInput, answer: Answer, cited: list[Citation]) -> list[str]:
    cited_papers = [citation.paper_id for citation in cited]
    if group.paper_id != COMPARATIVE_GROUP:
        return list(dict.fromkeys([group.paper_id, *cited_papers]))
    return list(dict.fromkeys(cited_papers or answer.question.papers))


def insights_for(
    answers: list[Answer],
    asker: Asker,
) -> list[Insight]:
    """One insight per answer, numbered `i01`, `i02`, ... papers in the order given, then the
    comparative answers; one agent call per paper, sent concurrently."""
    groups = pair_groups(answers)
    replies = asker.ask_each(InsightsAgent(), groups)
    return insights_from(groups, replies)


def insights_from(groups: list[InsightsInput], replies: list[InsightsReply]) -> list[Insight]:
    """The insights of `groups` (`pair_groups`) from each group's reply, checked (`checked`)
    and numbered `i01`, `i02`, ... in the groups' order."""
    insights: list[Insight] = []
    for group, reply in zip(groups, replies, strict=True):
        for answer, (text, cited) in zip(group.answers, checked(group, reply), strict=True):
            insights.append(
                Insight(
                    insight_id=f"i{len(insights) + 1:02d}",
                    paper_id=group.paper_id,
                    papers=_papers(group, answer, cited),
                    question_ids=[answer.question.question_id],
                    text=text,
                    citations=cited,
                )
            )
    return insights
