"""Every version of a collection answer, kept under the home, and what changed between two.

Layout: `HOME/history/<collection>/collection_answer/<key>/<recorded>-<data_version>.json`,
beside the collection's synthesis history (`synthesis_history`: the same file names, sorting
by time, each an `AnswerVersion` written atomically and never overwritten, so several
processes may keep versions at once). A materialization whose answer is the one kept last adds
nothing. Every request's answers are kept, so a question watched later has its past already.

What changed (`answer_diff`): the sentences matched as a synthesis' are (`synthesis_diff`'s
rule: a sentence only reworded is kept), the citation markers added and removed, the kept
sentences whose cited papers or support grade changed, and why: the papers the collection
gained (or lost) since the older version whose citations appeared (or went).

Runs without Dagster: the `collection_answer` asset calls `record`; `litpipe diff --question`
and the nightly digest read it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from litpipe.files import checked_key, write_atomically
from litpipe.schemas import CollectionAnswer, SentenceVerdict
from litpipe.schemas.standing_questions import AnswerDiff, AnswerVersion, GradeChange
from litpipe.workflows import synthesis_history
from litpipe.workflows.synthesis_diff import matched_sentences, sentence_words, support_changes
from litpipe.workflows.synthesis_history import (
    HISTORY_FOLDER,
    data_version,
    file_name,
    named_file,
    stamp_of,
)

ASSET_FOLDER = "collection_answer"


def folder(home: Path, collection: str, key: str) -> Path:
    return (
        home
        / HISTORY_FOLDER
        / checked_key(collection, "collection")
        / ASSET_FOLDER
        / checked_key(key, "request key")
    )


def entries(home: Path, collection: str, key: str) -> list[Path]:
    """The kept versions' files, oldest first."""
    where = folder(home, collection, key)
    return sorted(where.glob("*.json")) if where.is_dir() else []


def read(path: Path) -> AnswerVersion:
    return AnswerVersion.model_validate_json(path.read_text(encoding="utf-8"))


def record(
    home: Path, answer: CollectionAnswer, at: datetime | None = None
) -> tuple[AnswerVersion | None, AnswerVersion]:
    """Keeps `answer` unless the version kept last is the same; the version kept last before
    it (None: none; the same version when it was kept already) and its own."""
    request = answer.request
    version = data_version(answer)
    kept = entries(home, request.collection, request.key)
    previous = read(kept[-1]) if kept else None
    if previous is not None and previous.data_version == version:
        return previous, previous
    # The synthesis history's clock: one clock for every kept version (a test may set it).
    when = at or synthesis_history.now()
    entry = AnswerVersion(
        key=request.key,
        recorded_at=when.isoformat(timespec="microseconds"),
        data_version=version,
        answer=answer,
    )
    where = folder(home, request.collection, request.key)
    where.mkdir(parents=True, exist_ok=True)
    write_atomically(where / file_name(when, version), entry.model_dump_json())
    return previous, entry


def version_named(home: Path, collection: str, key: str, name: str) -> AnswerVersion:
    """The version a user names: its data version (or a prefix only it has) or its file's name;
    ValueError when none or several match."""
    return read(named_file(entries(home, collection, key), name, key, "answer"))


def version_at(home: Path, collection: str, key: str, at: datetime | None) -> AnswerVersion | None:
    """The version kept last strictly before `at` (the latest with `at` None; None: none)."""
    kept = [p for p in entries(home, collection, key) if at is None or stamp_of(p) < at]
    return read(kept[-1]) if kept else None


def version_before(home: Path, entry: AnswerVersion) -> AnswerVersion | None:
    """The version kept before `entry` (None: it is the first)."""
    request = entry.answer.request
    return version_at(
        home, request.collection, request.key, datetime.fromisoformat(entry.recorded_at)
    )


def changes_in(
    home: Path, collection: str, key: str, start: datetime, end: datetime
) -> AnswerDiff | None:
    """What changed during [`start`, `end`): from the version kept last before `start` to the
    one kept last before `end`; None when no version was kept during it."""
    new = version_at(home, collection, key, end)
    if new is None or datetime.fromisoformat(new.recorded_at) < start:
        return None
    return answer_diff(version_at(home, collection, key, start), new)


def _claimed(answer: CollectionAnswer | None) -> str:
    """What the answer claims: its text, or nothing when it declined (its one fixed sentence
    is the answered-or-not change, not a claim)."""
    return answer.text if answer is not None and answer.answered else ""


def _verdicts(answer: CollectionAnswer) -> dict[tuple[str, ...], SentenceVerdict]:
    if answer.grades is None:
        return {}
    return {sentence_words(s.sentence): s.verdict for s in answer.grades.sentences}


def answer_diff(old: AnswerVersion | None, new: AnswerVersion) -> AnswerDiff:
    """What changed from the kept version `old` (None: nothing before) to `new`."""
    before, after = (old.answer if old else None), new.answer
    kept, removed, added = matched_sentences(_claimed(before), _claimed(after))
    old_grades, new_grades = (_verdicts(before) if before else {}), _verdicts(after)
    grades = []
    for earlier, later in kept:
        graded_before = old_grades.get(sentence_words(earlier.text))
        graded_after = new_grades.get(sentence_words(later.text))
        if graded_before and graded_after and graded_before != graded_after:
            grades.append(
                GradeChange(sentence=later.text, before=graded_before, after=graded_after)
            )
    old_markers = list(dict.fromkeys(c.marker for c in before.citations)) if before else []
    new_markers = list(dict.fromkeys(c.marker for c in after.citations))
    old_papers = before.papers if before else []
    papers_added = [p for p in after.papers if p not in old_papers] if before else []
    papers_removed = [p for p in old_papers if p not in after.papers]
    newly_cited = {c.paper_id for c in after.citations} - (
        {c.paper_id for c in before.citations} if before else set()
    )
    no_longer_cited = ({c.paper_id for c in before.citations} if before else set()) - {
        c.paper_id for c in after.citations
    }
    brought = [p for p in papers_added if p in newly_cited]
    brought += [p for p in papers_removed if p in no_longer_cited]
    return AnswerDiff(
        key=new.key,
        collection=after.request.collection,
        question=after.request.question,
        from_version=old.data_version if old else None,
        from_recorded_at=old.recorded_at if old else None,
        to_version=new.data_version,
        to_recorded_at=new.recorded_at,
        papers_added=papers_added,
        papers_removed=papers_removed,
        sentences_added=added,
        sentences_removed=removed,
        citations_added=[m for m in new_markers if m not in old_markers],
        citations_removed=[m for m in old_markers if m not in new_markers],
        support_changed=support_changes(kept),
        grades_changed=grades,
        answered_before=before.answered if before else None,
        answered_after=after.answered,
        brought_by=brought or [*papers_added, *papers_removed],
    )
