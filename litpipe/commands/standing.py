"""Standing questions in the commands: `litpipe run` and `litpipe retract` end by answering
again those whose collection they changed; `litpipe status` lists them under their collection."""

from __future__ import annotations

import uuid
from pathlib import Path

from litpipe.report.answer_diff import changes_line
from litpipe.schemas.standing_questions import StandingQuestionEntry
from litpipe.settings import HomePaths
from litpipe.settings.groups import SettingsGroups
from litpipe.settings.sources import config_file
from litpipe.text import counted
from litpipe.workflows import answer_history
from litpipe.workflows.standing_questions import registered, sync_configured


def sync_config(home: Path, tables: list[StandingQuestionEntry]) -> None:
    """The `[[questions]]` tables registered, and those litpipe.toml no longer has removed,
    when the command read a litpipe.toml: a command run where there is none (another folder)
    leaves the home's standing questions as they are."""
    if config_file().is_file():
        sync_configured(home, tables)


def answer_standing(groups: SettingsGroups, tables: list[StandingQuestionEntry]) -> list[str]:
    """The `[[questions]]` `tables` registered, then each standing question whose collection
    changed answered again (the night's rule, in-process): a line for each, none when no
    collection changed."""
    from litpipe.defs.definitions import build_definitions
    from litpipe.runtime.runner import open_instance
    from litpipe.runtime.standing_questions import answer_changed, changed_now

    paths = groups["paths"]
    sync_config(paths.home, tables)
    instance = open_instance(groups["llm"], paths)
    questions = changed_now(paths, instance)
    if not questions:
        return []
    scope = f"cli-{uuid.uuid4().hex[:12]}"
    answered = answer_changed(
        groups["ingest"], paths, instance, build_definitions(**groups), questions, scope
    )
    lines = [
        f"{counted(len(answered), 'standing question')} of a changed collection answered again:"
    ]
    for done in answered:
        question, outcome = done.question, done.outcome
        said = (
            f"FAILED: {outcome.failure}"
            if outcome.result is None
            else changes_line(done.diff)
            if done.diff is not None
            else "unchanged since the previous version"
        )
        lines.append(
            f"  {question.id} ({question.request.collection}): {said} "
            f"(`litpipe diff --question {question.id}`)"
        )
    return lines


def status_lines(paths: HomePaths, collection: str) -> list[str]:
    """The collection's standing questions: id, versions kept, the question."""
    lines = []
    for question in registered(paths.home):
        if question.request.collection != collection:
            continue
        kept = answer_history.entries(paths.home, collection, question.key)
        lines.append(
            f"  standing {question.id} ({question.origin}, {counted(len(kept), 'version')}): "
            f"{question.request.question}"
        )
    return lines
