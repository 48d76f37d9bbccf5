"""What changed in a standing question's answer, as Markdown: in full for `litpipe diff
--question` and the `collection_answer` asset's page in the UI, in one line for its metadata
and `litpipe run`, in brief for the nightly digest's opening of each collection."""

from __future__ import annotations

from litpipe.report.synthesis_diff import sentence_sections, support_lines
from litpipe.schemas.standing_questions import AnswerDiff
from litpipe.text import counted


def changes_line(diff: AnswerDiff) -> str:
    """`changed since previous: +2/-1 sentences, +3/-1 citations`, or that it is the first
    version, or unchanged."""
    if diff.from_version is None:
        answered = counted(len(diff.sentences_added), "sentence") if diff.answered_after else ""
        return f"first version: {answered or 'the collection does not answer it'}"
    if not diff.changed:
        return "unchanged since the previous version"
    return (
        f"changed since previous: +{len(diff.sentences_added)}/-{len(diff.sentences_removed)} "
        f"sentences, +{len(diff.citations_added)}/-{len(diff.citations_removed)} citations"
    )


def _why(diff: AnswerDiff) -> str:
    """The papers that brought the change, as the reader should read them first."""
    added = [p for p in diff.brought_by if p in diff.papers_added]
    removed = [p for p in diff.brought_by if p in diff.papers_removed]
    parts = [f"`{p}` added to the collection" for p in added]
    parts += [f"`{p}` retracted or removed from the collection" for p in removed]
    return "; ".join(parts) or "the collection's papers were re-ingested"


def diff_markdown(diff: AnswerDiff, heading_level: int = 2, limit: int | None = None) -> str:
    """The whole diff, section by section (sections with nothing to say left out)."""
    top, sub = "#" * heading_level, "#" * (heading_level + 1)
    older = (
        f"`{diff.from_version}` ({diff.from_recorded_at})" if diff.from_version else "nothing kept"
    )
    lines = [
        f"{top} What changed in the answer to “{diff.question}” ({diff.collection}, {diff.key})",
        "",
        f"From {older} to `{diff.to_version}` ({diff.to_recorded_at}): {changes_line(diff)}.",
        "",
    ]
    if diff.from_version is not None and not diff.changed:
        return "\n".join(lines)
    if diff.from_version is not None:
        lines += [f"Why: {_why(diff)}.", ""]
    if diff.answered_before is not None and diff.answered_before != diff.answered_after:
        now = "answers it now" if diff.answered_after else "no longer answers it"
        lines += [f"The collection {now}.", ""]
    if diff.papers_added or diff.papers_removed:
        lines += [f"{sub} Papers of the collection", ""]
        lines += [f"- added: `{paper}`" for paper in diff.papers_added]
        lines += [f"- removed: `{paper}`" for paper in diff.papers_removed]
        lines.append("")
    lines += sentence_sections(diff.sentences_added, diff.sentences_removed, sub, limit)
    if diff.citations_added or diff.citations_removed:
        lines += [f"{sub} Citations", ""]
        lines += [f"- added: {marker}" for marker in diff.citations_added]
        lines += [f"- removed: {marker}" for marker in diff.citations_removed]
        lines.append("")
    if diff.grades_changed:
        lines += [f"{sub} Claims whose support grade changed", ""]
        lines += [f"- {c.sentence} ({c.before} → {c.after})" for c in diff.grades_changed]
        lines.append("")
    if diff.support_changed:
        lines += [f"{sub} Claims whose cited papers changed", ""]
        lines += [*support_lines(diff.support_changed), ""]
    return "\n".join(lines)


def digest_lines(diffs: list[AnswerDiff]) -> list[str]:
    """A collection's standing answers that changed during the day, each with why: what opens
    its part of the digest."""
    lines = []
    for diff in diffs:
        lines += [
            f"- {diff.question} ({diff.key}): {changes_line(diff)}; why: {_why(diff)}.",
            *[f"  - added: {s.text}" for s in diff.sentences_added],
            *[f"  - removed: {s.text}" for s in diff.sentences_removed],
        ]
    return [*lines, ""] if lines else []
