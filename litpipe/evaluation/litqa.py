"""Questions about papers, each naming its paper's PDF: the LitQA2 subset's JSONL format
(`id`, `question`, `pdf_file`, and for grading `ideal` and `distractors`; other keys kept out),
which `litpipe eval mais` and `litpipe eval litqa` ask of their own papers.

`litpipe eval litqa` grades each question's final query-focused summary with the `answer_judge`
agent (`litpipe/agents/answer_judge.py`): the routed model, or offline a deterministic rule (every
content term of the answer among the summary's terms).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar, overload

from pydantic import BaseModel, Field

from litpipe.evaluation.datasets import json_lines
from litpipe.extractive.answer_judge import AnswerVerdict
from litpipe.text import counted


class PaperQuestion(BaseModel):
    id: str = Field(description="The dataset's id of the question.")
    question: str = Field(min_length=1)
    pdf_file: str = Field(min_length=1, description="File name of its paper's PDF.")


class LitQAQuestion(PaperQuestion):
    ideal: str = Field(min_length=1, description="The correct answer.")
    distractors: list[str] = Field(description="Wrong answers offered beside it.")


Question = TypeVar("Question", bound=PaperQuestion)


@overload
def read_questions(path: Path) -> list[PaperQuestion]: ...
@overload
def read_questions(path: Path, model: type[Question]) -> list[Question]: ...
def read_questions(
    path: Path, model: type[PaperQuestion] = PaperQuestion
) -> Sequence[PaperQuestion]:
    """Every line's question as `model`; a ValueError names the file, the line and what is
    wrong."""
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    questions = [question for _, question in json_lines(path, model)]
    if not questions:
        raise ValueError(f"{path}: no question in it")
    return questions


class GradedQuestion(BaseModel):
    question_id: str
    paper_id: str
    key: str = Field(description="The `query_summary` partition (request) it was asked as.")
    status: str = Field(description="How the loop ended: approved or not.")
    iterations: int
    ideal: str
    states_ideal: bool
    stated_distractors: list[str]
    reason: str = Field(description="The judge's one sentence.")
    summary: str


def grade(
    question: LitQAQuestion,
    paper_id: str,
    key: str,
    status: str,
    iterations: int,
    summary: str,
    verdict: AnswerVerdict,
) -> GradedQuestion:
    """The question's row: does the final summary state the ideal answer, or a distractor?"""
    return GradedQuestion(
        question_id=question.id,
        paper_id=paper_id,
        key=key,
        status=status,
        iterations=iterations,
        ideal=question.ideal,
        states_ideal=verdict.states_ideal,
        stated_distractors=verdict.stated_distractors,
        reason=verdict.reason,
        summary=summary,
    )


class LitQAEvaluation(BaseModel):
    dataset: str
    corpus: str
    collection: str
    examples: int = Field(description="Questions whose summary was graded.")
    skipped: int = Field(description="Questions whose PDF is not a readable PDF of the corpus.")
    failed: int = Field(description="Questions whose paper or summary failed.")
    engine: str = Field(description="What wrote the summaries: `offline` or a model.")
    embedder: str
    grading: str = Field(description="The answer judge: its model, or the offline rule.")
    ideal_share: float = Field(description="Of graded questions, those stating the ideal.")
    distractor_share: float = Field(description="Of graded questions, those stating a distractor.")
    approved_share: float
    mean_iterations: float
    seconds: float
    per_question: list[GradedQuestion]


def litqa_evaluation(
    graded: Sequence[GradedQuestion],
    *,
    dataset: Path,
    corpus: Path,
    collection: str,
    skipped: int,
    failed: int,
    engine: str,
    embedder: str,
    grading: str,
    seconds: float,
) -> LitQAEvaluation:
    """The shares over the graded questions (0 when none was graded)."""
    count = len(graded)

    def per_question(total: int) -> float:
        return total / count if count else 0.0

    return LitQAEvaluation(
        dataset=str(dataset),
        corpus=str(corpus),
        collection=collection,
        examples=count,
        skipped=skipped,
        failed=failed,
        engine=engine,
        embedder=embedder,
        grading=grading,
        ideal_share=per_question(sum(g.states_ideal for g in graded)),
        distractor_share=per_question(sum(bool(g.stated_distractors) for g in graded)),
        approved_share=per_question(sum(g.status == "approved" for g in graded)),
        mean_iterations=per_question(sum(g.iterations for g in graded)),
        seconds=seconds,
        per_question=list(graded),
    )


def figures(evaluation: LitQAEvaluation) -> dict[str, float]:
    """The shares and the mean iterations: what is tracked over time."""
    return {
        "ideal_share": evaluation.ideal_share,
        "distractor_share": evaluation.distractor_share,
        "approved_share": evaluation.approved_share,
        "mean_iterations": evaluation.mean_iterations,
    }


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def format_table(evaluation: LitQAEvaluation) -> str:
    """A Markdown table: one row per graded question, then the shares."""
    lines = [
        f"LitQA on {Path(evaluation.dataset).name}: {counted(evaluation.examples, 'question')} "
        "graded "
        f"({evaluation.skipped} skipped, {evaluation.failed} failed), summaries by "
        f"{evaluation.engine}, embedder {evaluation.embedder}; grading: {evaluation.grading}",
        "",
        "| question | paper | iterations | status | states ideal? | states a distractor? |",
        "|---|---|---:|---|---|---|",
    ]
    for row in evaluation.per_question:
        distractors = ", ".join(row.stated_distractors)
        lines.append(
            f"| {row.question_id} | {row.paper_id} | {row.iterations} | {row.status} | "
            f"{_yes(row.states_ideal)} ({row.ideal}) | "
            f"{'yes (' + distractors + ')' if distractors else 'no'} |"
        )
    lines += [
        "",
        f"States the ideal answer: {100 * evaluation.ideal_share:.1f}%; states a distractor: "
        f"{100 * evaluation.distractor_share:.1f}%; approved by the judge: "
        f"{100 * evaluation.approved_share:.1f}%; mean iterations "
        f"{evaluation.mean_iterations:.2f}.",
    ]
    return "\n".join(lines) + "\n"
