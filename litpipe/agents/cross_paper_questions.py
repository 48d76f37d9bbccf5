"""The `cross_paper_questions` agent: comparative questions about a whole collection, from all its
abstracts at once ("What distinguishes X's approach from Y's?"), each naming the papers it
compares.

Its offline engine (`litpipe.extractive.cross_paper_questions.offline_cross_paper_questions`)
pairs papers by the words they share and slots their titles and key phrases, verbatim, into
fixed comparative frames.
"""

from __future__ import annotations

from collections.abc import Sequence

from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.extractive.cross_paper_questions import (
    ComparedPaper,
    CrossPaperQuestionsInput,
    CrossPaperQuestionsReply,
    offline_cross_paper_questions,
)
from litpipe.llm.prompts import fence
from litpipe.schemas import PaperAbstract, Question


class CrossPaperQuestionsAgent(Agent[CrossPaperQuestionsInput, CrossPaperQuestionsReply]):
    name = "cross_paper_questions"
    reply_tokens = 384
    offline = staticmethod(offline_cross_paper_questions)

    def prompt_values(self, inputs: CrossPaperQuestionsInput) -> dict[str, str]:
        listed = "\n\n".join(
            f"Paper id: {paper.paper_id}\nTitle:\n{fence(paper.title)}\n"
            f"Abstract:\n{fence(paper.abstract)}"
            for paper in inputs.papers
        )
        return dict(count=str(inputs.count), papers=listed)


def questions_from(
    collection: str, reply: CrossPaperQuestionsReply, paper_ids: Sequence[str], count: int
) -> list[Question]:
    """The reply as comparative questions: unknown paper ids dropped, a question left comparing
    fewer than two papers dropped, repeats dropped, at most `count` kept."""
    known = set(paper_ids)
    seen: set[str] = set()
    kept: list[tuple[str, list[str]]] = []
    for draft in reply.questions:
        papers = list(dict.fromkeys(p for p in draft.papers if p in known))
        if len(papers) < 2 or draft.text.casefold() in seen or len(kept) >= count:
            continue
        seen.add(draft.text.casefold())
        kept.append((draft.text, papers))
    return [
        Question(
            question_id=f"{collection}:x{index:02d}",
            paper_id="",
            style="comparative",
            text=text,
            papers=papers,
        )
        for index, (text, papers) in enumerate(kept)
    ]


def comparative_questions(
    collection: str,
    abstracts: list[PaperAbstract],
    count: int,
    asker: Asker,
) -> list[Question]:
    """The collection's `count` comparative questions (`synthesis.cross_paper_questions`);
    none, and no call, when that is 0 (the default) or for a collection of one paper, which
    has nothing to compare."""
    if count == 0 or len(abstracts) < 2:
        return []
    inputs = CrossPaperQuestionsInput(
        collection=collection,
        papers=[
            ComparedPaper(paper_id=a.paper_id, title=a.title, abstract=a.abstract)
            for a in abstracts
        ],
        count=count,
    )
    reply = asker.ask(CrossPaperQuestionsAgent(), inputs)
    return questions_from(collection, reply, [a.paper_id for a in abstracts], count)
