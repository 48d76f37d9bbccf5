"""LitQA2 asked of a whole collection (`litpipe eval litqa --collection-wide`): every question of
the dataset is asked of ONE collection made of all the corpus' papers, as a reader asks it
(`litpipe ask --collection`: the `collection_answer` asset), not of its own paper.

Each answer is graded as `litpipe eval litqa` grades a summary (the `answer_judge` agent, or
offline its rule: every content term of the ideal answer among the answer's terms). A declined
answer ("The collection does not answer this.") states nothing and is not judged. Reported:
accuracy (the ideal answer stated, over every question asked), precision (the ideal stated,
over the questions answered), the share declined, and, of the answered, whether the answer
cites the question's own paper (the one its `pdf_file` names).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from litpipe.evaluation.litqa import LitQAQuestion
from litpipe.extractive.answer_judge import AnswerVerdict
from litpipe.schemas import CollectionAnswer
from litpipe.text import counted


class CollectionWideAnswer(BaseModel):
    """One question's answer from the whole collection, graded."""

    question_id: str
    own_paper: str = Field(description="The paper its `pdf_file` names (its id).")
    key: str = Field(description="The `collection_questions` partition it was asked as.")
    answered: bool
    declined_because: str = ""
    ideal: str
    states_ideal: bool
    stated_distractors: list[str]
    cited_papers: list[str] = Field(description="The papers the answer cites, in order.")
    cites_own_paper: bool
    reason: str = Field(description="The judge's one sentence, or why it was declined.")
    answer: str


def graded_answer(
    question: LitQAQuestion,
    own_paper: str,
    answer: CollectionAnswer,
    verdict: AnswerVerdict | None,
) -> CollectionWideAnswer:
    """The question's row; `verdict` is None for a declined answer, which states nothing."""
    cited = list(dict.fromkeys(citation.paper_id for citation in answer.citations))
    return CollectionWideAnswer(
        question_id=question.id,
        own_paper=own_paper,
        key=answer.request.key,
        answered=answer.answered,
        declined_because=answer.declined_because,
        ideal=question.ideal,
        states_ideal=verdict is not None and verdict.states_ideal,
        stated_distractors=verdict.stated_distractors if verdict is not None else [],
        cited_papers=cited,
        cites_own_paper=own_paper in cited,
        reason=verdict.reason if verdict is not None else answer.declined_because,
        answer=answer.text,
    )


class CollectionWideEvaluation(BaseModel):
    dataset: str
    corpus: str
    collection: str
    papers: int = Field(description="The collection's papers every question was asked of.")
    examples: int = Field(description="Questions answered or declined (and graded).")
    skipped: int = Field(description="Questions whose PDF is not a readable PDF of the corpus.")
    failed: int = Field(description="Questions whose answer failed.")
    engine: str = Field(description="What wrote the answers: `offline` or a model.")
    model: str | None = Field(description="The writer's model; None offline.")
    embedder: str
    grading: str = Field(description="The answer judge: its model, or the offline rule.")
    accuracy: float = Field(description="Of the questions graded, those stating the ideal.")
    precision: float | None = Field(
        description="Of the questions answered (not declined), those stating the ideal; None "
        "when every one was declined."
    )
    declined_share: float = Field(description="Of the questions graded, those declined.")
    distractor_share: float = Field(description="Of the questions graded, stating a distractor.")
    cites_own_paper_share: float | None = Field(
        description="Of the questions answered, those whose answer cites the question's own "
        "paper; None when every one was declined."
    )
    seconds: float
    per_question: list[CollectionWideAnswer]


def collection_wide_evaluation(
    rows: Sequence[CollectionWideAnswer],
    *,
    dataset: Path,
    corpus: Path,
    collection: str,
    papers: int,
    skipped: int,
    failed: int,
    engine: str,
    model: str | None,
    embedder: str,
    grading: str,
    seconds: float,
) -> CollectionWideEvaluation:
    """The figures over the graded rows (shares of none are 0; precision and the own-paper
    share of no answered question are None)."""
    answered = [row for row in rows if row.answered]

    def share(count: int, of: int) -> float:
        return count / of if of else 0.0

    return CollectionWideEvaluation(
        dataset=str(dataset),
        corpus=str(corpus),
        collection=collection,
        papers=papers,
        examples=len(rows),
        skipped=skipped,
        failed=failed,
        engine=engine,
        model=model,
        embedder=embedder,
        grading=grading,
        accuracy=share(sum(row.states_ideal for row in rows), len(rows)),
        precision=share(sum(row.states_ideal for row in answered), len(answered))
        if answered
        else None,
        declined_share=share(len(rows) - len(answered), len(rows)),
        distractor_share=share(sum(bool(row.stated_distractors) for row in rows), len(rows)),
        cites_own_paper_share=share(sum(row.cites_own_paper for row in answered), len(answered))
        if answered
        else None,
        seconds=seconds,
        per_question=list(rows),
    )


def figures(evaluation: CollectionWideEvaluation) -> dict[str, float]:
    """Accuracy, precision, the declined, distractor and own-paper shares (those defined)."""
    found = {
        "accuracy": evaluation.accuracy,
        "precision": evaluation.precision,
        "declined_share": evaluation.declined_share,
        "distractor_share": evaluation.distractor_share,
        "cites_own_paper_share": evaluation.cites_own_paper_share,
    }
    return {name: value for name, value in found.items() if value is not None}


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def format_table(evaluation: CollectionWideEvaluation) -> str:
    """A Markdown table: one row per question, then the figures."""
    lines = [
        f"LitQA collection-wide on {Path(evaluation.dataset).name}: "
        f"{counted(evaluation.examples, 'question')} graded ({evaluation.skipped} skipped, "
        f"{evaluation.failed} failed), each asked of collection {evaluation.collection} "
        f"({counted(evaluation.papers, 'paper')}); answers by {evaluation.engine}, embedder "
        f"{evaluation.embedder}; grading: {evaluation.grading}",
        "",
        "| question | own paper | answered? | states ideal? | states a distractor? | "
        "cites own paper? | papers cited |",
        "|---|---|---|---|---|---|---:|",
    ]
    for row in evaluation.per_question:
        distractors = ", ".join(row.stated_distractors)
        lines.append(
            f"| {row.question_id} | {row.own_paper} | "
            f"{'yes' if row.answered else 'declined'} | "
            f"{'yes' if row.states_ideal else 'no'} ({row.ideal}) | "
            f"{'yes (' + distractors + ')' if distractors else 'no'} | "
            f"{'yes' if row.cites_own_paper else 'no'} | {len(row.cited_papers)} |"
        )
    lines += [
        "",
        f"Accuracy (the ideal answer stated): {_percent(evaluation.accuracy)}; precision "
        f"(right among those answered): {_percent(evaluation.precision)}; declined: "
        f"{_percent(evaluation.declined_share)}; states a distractor: "
        f"{_percent(evaluation.distractor_share)}; answers citing the question's own paper: "
        f"{_percent(evaluation.cites_own_paper_share)}.",
    ]
    return "\n".join(lines) + "\n"
