"""The `paper_questions` agent: K questions per paper from its title and abstract, in two styles.

`broad` questions ask about the paper's context, objective, method and findings;
`inner_workings` questions ask how its approach is designed, how it operates step by step,
which mechanisms drive it and why those choices were made. K is twice `per_style`.

Its offline engine (`litpipe.extractive.paper_questions.offline_questions`) slots key phrases
of the title and abstract, verbatim, into fixed question frames, one per aspect.
"""

from __future__ import annotations

from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.extractive.paper_questions import (
    DEFAULT_PER_STYLE,
    STYLES,
    AskedStyle,
    QuestionsInput,
    QuestionsReply,
    offline_questions,
)
from litpipe.llm.prompts import fence
from litpipe.schemas import PaperAbstract, PaperQuestions, Question


class PaperQuestionsAgent(Agent[QuestionsInput, QuestionsReply]):
    name = "paper_questions"
    reply_tokens = 512
    offline = staticmethod(offline_questions)

    def prompt_values(self, inputs: QuestionsInput) -> dict[str, str]:
        return dict(
            per_style=str(inputs.per_style),
            title=fence(inputs.title),
            abstract=fence(inputs.abstract),
        )


def questions_for(inputs: QuestionsInput, reply: QuestionsReply, engine: str) -> PaperQuestions:
    """The reply as the paper's questions: broad first, then inner workings, ids in that order.

    Repeated questions (ignoring case and spacing) are dropped and at most per_style of each
    style kept, in the order given. A reply with fewer keeps what it gave: a model that asked
    two good questions is not padded with invented ones.
    """
    seen: set[str] = set()
    kept: dict[AskedStyle, list[str]] = {style: [] for style in STYLES}
    for draft in reply.questions:
        key = draft.text.casefold()
        if key in seen or len(kept[draft.style]) >= inputs.per_style:
            continue
        seen.add(key)
        kept[draft.style].append(draft.text)
    texts = [(style, text) for style in STYLES for text in kept[style]]
    return PaperQuestions(
        paper_id=inputs.paper_id,
        engine=engine,
        questions=[
            Question(
                question_id=f"{inputs.paper_id}:q{index:02d}",
                paper_id=inputs.paper_id,
                style=style,
                text=text,
            )
            for index, (style, text) in enumerate(texts)
        ],
    )


def paper_questions_from(
    abstract: PaperAbstract,
    asker: Asker,
    per_style: int = DEFAULT_PER_STYLE,
) -> PaperQuestions:
    """The `paper_questions` asset's work: a paper's questions from its title and abstract."""
    agent = PaperQuestionsAgent()
    inputs = QuestionsInput(
        paper_id=abstract.paper_id,
        title=abstract.title,
        abstract=abstract.abstract,
        per_style=per_style,
    )
    reply = asker.ask(agent, inputs)
    return questions_for(inputs, reply, asker.engine(agent.name))
