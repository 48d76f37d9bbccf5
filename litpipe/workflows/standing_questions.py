"""The standing questions of a home: `HOME/standing/<key>.json`, one `StandingQuestion` a
file, written atomically (several processes may register at once).

A question is registered by `litpipe ask ... --collection C --watch` (origin `watch`) or by
a `[[questions]]` table of litpipe.toml (origin `litpipe.toml`: `sync_configured` writes the
tables a command resolved and removes those no longer there), and named by its `id` (the
table's, else its request key `c-<hash>`, the `collection_questions` partition key).

Runs without Dagster: the commands register and list; the night's re-answering
(`litpipe.defs.standing_questions`) reads `registered`.
"""

from __future__ import annotations

from pathlib import Path

from litpipe.files import checked_key, write_atomically
from litpipe.schemas import CollectionAnswerRequest
from litpipe.schemas.standing_questions import (
    StandingOrigin,
    StandingQuestion,
    StandingQuestionEntry,
)

STANDING_FOLDER = "standing"


def _path(home: Path, key: str) -> Path:
    return home / STANDING_FOLDER / f"{checked_key(key, 'request key')}.json"


def registered(home: Path) -> list[StandingQuestion]:
    """Every standing question of the home, by collection then id."""
    folder = home / STANDING_FOLDER
    found = [
        StandingQuestion.model_validate_json(path.read_text(encoding="utf-8"))
        for path in (sorted(folder.glob("*.json")) if folder.is_dir() else [])
    ]
    return sorted(found, key=lambda question: (question.request.collection, question.id))


def register(
    home: Path,
    request: CollectionAnswerRequest,
    origin: StandingOrigin,
    name: str | None = None,
) -> StandingQuestion:
    """The question registered as standing (kept as it is when registered already alike)."""
    question = StandingQuestion(id=name or request.key, request=request, origin=origin)
    path = _path(home, request.key)
    if not path.is_file() or path.read_text(encoding="utf-8") != question.model_dump_json():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, question.model_dump_json())
    return question


def sync_configured(home: Path, tables: list[StandingQuestionEntry]) -> None:
    """The `[[questions]]` tables registered; those litpipe.toml no longer has, removed."""
    configured = {table.request().key: table for table in tables}
    for question in registered(home):
        if question.origin == "litpipe.toml" and question.key not in configured:
            _path(home, question.key).unlink(missing_ok=True)
    for key, table in configured.items():
        register(home, table.request(), "litpipe.toml", table.id or key)


def named(home: Path, name: str) -> StandingQuestion:
    """The standing question `name` names (its id or its request key); ValueError if none."""
    found = [q for q in registered(home) if name in {q.id, q.key}]
    if not found:
        known = ", ".join(q.id for q in registered(home)) or "none"
        raise ValueError(
            f"no standing question {name!r} under {home} (known: {known}); register one with "
            "`litpipe ask QUESTION --collection C --watch` or a [[questions]] table"
        )
    return found[0]
