"""The `answer_judge` agent: does a query-focused summary state a multiple-choice question's
ideal answer, or one of its distractors? (`litpipe eval litqa`'s grader.)

With a model route the model reads the question, the answers and the summary
(`litpipe/prompts/answer_judge.md`); stated distractors it names that are not in the list are
dropped. Its offline engine (`litpipe.extractive.answer_judge.offline_verdict`) is a
deterministic rule over words: the summary states an answer when every content term of the
answer is among the summary's terms.
"""

from __future__ import annotations

from collections.abc import Sequence

from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.extractive.answer_judge import AnswerJudgeInput, AnswerVerdict, offline_verdict
from litpipe.llm.prompts import fence


class AnswerJudgeAgent(Agent[AnswerJudgeInput, AnswerVerdict]):
    name = "answer_judge"
    reply_tokens = 256
    offline = staticmethod(offline_verdict)

    def prompt_values(self, inputs: AnswerJudgeInput) -> dict[str, str]:
        return dict(
            question=fence(inputs.question, "question"),
            ideal=fence(inputs.ideal, "question"),
            distractors=fence("\n".join(f"- {d}" for d in inputs.distractors), "question"),
            summary=fence(inputs.summary, "summary"),
        )


def judge_answers(
    batch: Sequence[AnswerJudgeInput],
    asker: Asker,
) -> list[AnswerVerdict]:
    """Each summary's verdict, in order: offline, or from the routed model in one batch. A
    model's stated distractors are kept only as the question lists them."""
    verdicts = asker.ask_each(AnswerJudgeAgent(), batch)
    return [
        verdict.model_copy(
            update={
                "stated_distractors": [
                    d for d in inputs.distractors if d in set(verdict.stated_distractors)
                ]
            }
        )
        for inputs, verdict in zip(batch, verdicts, strict=True)
    ]
