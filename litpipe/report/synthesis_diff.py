"""What changed in a collection's synthesis, as Markdown: in full for `litpipe diff` and the
synthesis asset's page in the UI, in brief for the nightly digest's opening section."""

from __future__ import annotations

from litpipe.schemas.changes import (
    ClaimEnd,
    DiffSentence,
    RelationshipChange,
    RetractionChange,
    SupportChange,
    SynthesisDiff,
)
from litpipe.text import counted


def _version(version: str | None, recorded_at: str | None) -> str:
    return f"`{version}` ({recorded_at})" if version else "nothing kept"


def nothing_changed(diff: SynthesisDiff) -> str:
    """The one line of a diff with no change."""
    if diff.to_version is None:
        return f"{diff.collection}: no synthesis is kept yet."
    return (
        f"{diff.collection}: nothing changed in its synthesis "
        f"(version `{diff.to_version}`, kept {diff.to_recorded_at})."
    )


def _claim(end: ClaimEnd) -> str:
    return f'*{end.paper_id}*: "{end.text}"'


def contradiction_lines(change: RelationshipChange) -> list[str]:
    """A new contradiction quoting both claims, the one held before first."""
    first, second = (
        (change.target, change.source)
        if change.target.known_before and not change.source.known_before
        else (change.source, change.target)
    )
    return [
        f"- {_claim(second)} contradicts {_claim(first)}",
        f"  - {change.explanation}",
    ]


def retraction_lines(change: RetractionChange) -> list[str]:
    """A retracted paper, each sentence that had cited it and what took its place."""
    cited = (
        f"{counted(len(change.sentences), 'sentence')} cited it"
        if change.sentences
        else "no sentence cited it"
    )
    lines = [f"- `{change.paper_id}` ({change.reason}): {cited}"]
    for sentence in change.sentences:
        lines.append(f'  - had: "{sentence.before.text}"')
        if sentence.after is None:
            lines.append("    - removed, nothing in its place")
        elif sentence.how == "kept":
            lines.append(f'    - kept, citing the others: "{sentence.after.text}"')
        else:
            lines.append(f'    - in its place: "{sentence.after.text}"')
    return lines


def _left_out_lines(diff: SynthesisDiff) -> list[str]:
    """The papers newly left out and why, those retracted aside (listed with their sentences)."""
    retracted = {change.paper_id for change in diff.retracted}
    return [
        f"- `{paper}`: {reason}"
        for paper, reason in diff.left_out.items()
        if paper not in retracted
    ]


def _relationship_line(change: RelationshipChange) -> str:
    return (
        f"- **{change.type}**: {_claim(change.source)} / {_claim(change.target)} "
        f"({change.explanation})"
    )


def diff_markdown(diff: SynthesisDiff, heading_level: int = 2, limit: int | None = None) -> str:
    """The whole diff, section by section (sections with nothing to say left out); with a
    `limit`, at most that many sentences and relationships of each list, the rest counted."""
    top = "#" * heading_level
    sub = "#" * (heading_level + 1)
    lines = [
        f"{top} What changed in {diff.collection}",
        "",
        f"From {_version(diff.from_version, diff.from_recorded_at)} to "
        f"{_version(diff.to_version, diff.to_recorded_at)}.",
        "",
    ]
    if not diff.changed:
        return "\n".join([*lines, nothing_changed(diff), ""])
    if diff.papers_added or diff.papers_removed:
        lines += [f"{sub} Papers", ""]
        lines += [f"- added: `{paper}`" for paper in diff.papers_added]
        lines += [f"- removed: `{paper}`" for paper in diff.papers_removed]
        lines.append("")
    if diff.retracted:
        lines += [f"{sub} Retracted papers, and what replaced their sentences", ""]
        lines += [line for change in diff.retracted for line in retraction_lines(change)]
        lines.append("")
    if diff.contradicted:
        lines += [f"{sub} New contradictions of its claims", ""]
        lines += [line for change in diff.contradicted for line in contradiction_lines(change)]
        lines.append("")
    if diff.support_changed:
        lines += [f"{sub} Claims whose support changed", ""]
        lines += [*support_lines(diff.support_changed), ""]
    if diff.theme_before != diff.theme_after:
        lines += [f"{sub} Theme", "", f"- before: {diff.theme_before or '(none)'}"]
        lines += [f"- now: {diff.theme_after or '(none)'}", ""]
    if diff.relationships_appeared or diff.relationships_gone:
        lines += [f"{sub} Relationships", ""]
        if diff.relationships_appeared:
            lines += ["Appeared:", ""]
            lines += _listed([_relationship_line(c) for c in diff.relationships_appeared], limit)
            lines.append("")
        if diff.relationships_gone:
            lines += ["Went:", ""]
            lines += _listed([_relationship_line(c) for c in diff.relationships_gone], limit)
            lines.append("")
    lines += sentence_sections(diff.sentences_added, diff.sentences_removed, sub, limit)
    if diff.reworded:
        lines += [f"{counted(diff.reworded, 'sentence')} only reworded (kept).", ""]
    left_out = _left_out_lines(diff)
    if left_out:
        lines += [f"{sub} Papers left out", "", *left_out, ""]
    return "\n".join(lines)


def support_lines(changes: list[SupportChange]) -> list[str]:
    """Each kept sentence whose cited papers changed, with the papers gained and lost."""
    lines = []
    for change in changes:
        moved = [f"now also cites {', '.join(change.gained)}"] * bool(change.gained)
        moved += [f"no longer cites {', '.join(change.lost)}"] * bool(change.lost)
        lines.append(f"- {change.after} ({'; '.join(moved)})")
    return lines


def sentence_sections(
    added: list[DiffSentence], removed: list[DiffSentence], heading: str, limit: int | None
) -> list[str]:
    """The sections "Sentences added" and "Sentences removed" under `heading` (`###`), each
    sentence with the papers it cites; a section with none left out."""
    lines: list[str] = []
    for title, listed in (("Sentences added", added), ("Sentences removed", removed)):
        if listed:
            lines += [f"{heading} {title}", ""]
            lines += _listed(
                [
                    f"- {s.text}" + (f" (cites {', '.join(s.papers)})" if s.papers else "")
                    for s in listed
                ],
                limit,
            )
            lines.append("")
    return lines


def _listed(lines: list[str], limit: int | None) -> list[str]:
    if limit is None or len(lines) <= limit:
        return lines
    return [*lines[:limit], f"- … and {len(lines) - limit} more (`litpipe diff` lists them all)"]


def digest_lines(diff: SynthesisDiff, new_papers: int) -> list[str]:
    """A collection's part of the digest's opening: papers retracted with the sentences that
    cited them and what replaced them, new contradictions quoting both claims, claims that
    gained support, a new theme, papers left out and why; one line when nothing in its
    conclusions changed."""
    heading = f"### {diff.collection}"
    if not diff.changed:
        arrived = f"{counted(new_papers, 'new paper')}, " if new_papers else ""
        return [heading, "", f"{arrived}no change in its conclusions.", ""]
    added = f"{counted(len(diff.papers_added), 'paper')} added"
    removed = f", {len(diff.papers_removed)} removed" if diff.papers_removed else ""
    sentences = (
        f"; {counted(len(diff.sentences_added), 'sentence')} added, "
        f"{len(diff.sentences_removed)} removed"
    )
    lines = [heading, "", f"{added}{removed}{sentences}.", ""]
    if diff.retracted:
        lines += ["Retracted, and what replaced the sentences that cited them:", ""]
        lines += [line for change in diff.retracted for line in retraction_lines(change)]
        lines.append("")
    if diff.contradicted:
        lines += ["New contradictions:", ""]
        lines += [line for change in diff.contradicted for line in contradiction_lines(change)]
        lines.append("")
    gained = [change for change in diff.support_changed if change.gained]
    if gained:
        lines += ["Claims that gained support:", ""]
        lines += [f"- {c.after} (now also {', '.join(c.gained)})" for c in gained]
        lines.append("")
    if diff.theme_after and diff.theme_before != diff.theme_after:
        lines += [f"New theme: {diff.theme_after}", ""]
    left_out = _left_out_lines(diff)
    if left_out:
        lines += ["Papers left out:", "", *left_out, ""]
    return lines
