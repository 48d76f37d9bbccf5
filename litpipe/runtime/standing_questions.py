"""The standing questions answered again in-process, as the `standing_questions_sensor` asks
for at night: `litpipe run` and `litpipe retract` end with it, so a paper they add or retract
reaches every standing answer of its collections before they return."""

from __future__ import annotations

import dagster as dg
from pydantic import BaseModel, Field

from litpipe.catalog import Catalog
from litpipe.defs.standing_questions import changed_questions
from litpipe.runtime.collection_answer import CollectionAskOutcome, answer_request
from litpipe.schemas.standing_questions import AnswerDiff, StandingQuestion
from litpipe.settings import HomePaths, IngestSettings
from litpipe.workflows import answer_history
from litpipe.workflows.standing_questions import registered


class StandingOutcome(BaseModel):
    """A standing question answered again, and what changed in its answer."""

    question: StandingQuestion
    outcome: CollectionAskOutcome
    diff: AnswerDiff | None = Field(
        default=None, description="None: the answer is the version kept before."
    )


def changed_now(paths: HomePaths, instance: dg.DagsterInstance) -> list[StandingQuestion]:
    """The standing questions whose collection changed since their latest answer."""
    if not paths.catalog_path.is_file():
        return []
    questions = registered(paths.home)
    changed = changed_questions(instance, Catalog(paths.catalog_path), questions)
    return [question for question in questions if question.key in changed]


def answer_changed(
    ingest: IngestSettings,
    paths: HomePaths,
    instance: dg.DagsterInstance,
    defs: dg.Definitions,
    questions: list[StandingQuestion],
    scope: str,
) -> list[StandingOutcome]:
    """Each of `questions` (`changed_now`'s) answered again, with its change from the version
    kept before."""
    answered = []
    for question in questions:
        collection, key = question.request.collection, question.key
        before = answer_history.entries(paths.home, collection, key)
        outcome = answer_request(ingest, paths, instance, defs, question.request, scope)
        after = answer_history.entries(paths.home, collection, key)
        # The same answer as before adds no version: nothing changed.
        diff = (
            answer_history.answer_diff(
                answer_history.read(before[-1]) if before else None,
                answer_history.read(after[-1]),
            )
            if after and after != before
            else None
        )
        answered.append(StandingOutcome(question=question, outcome=outcome, diff=diff))
    return answered
