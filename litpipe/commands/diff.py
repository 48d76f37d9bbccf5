"""`litpipe diff COLLECTION`: what changed in a collection's synthesis between two kept versions
(its history under the home, `litpipe.workflows.synthesis_history`), as Markdown, then one JSON
line of its figures; `litpipe diff --question ID`, the same of a standing question's answer
(`litpipe.workflows.answer_history`)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from litpipe.commands.flags import add_common_flags
from litpipe.schemas.standing_questions import StandingQuestionEntry
from litpipe.settings import Settings


def add_diff_parser(commands: Any) -> None:
    """`litpipe diff`'s arguments, on the CLI's subcommands."""
    diff = commands.add_parser(
        "diff",
        help="what changed in a collection's synthesis (or, with --question, in a standing "
        "question's answer) between two kept versions: papers, sentences with their citations, "
        "claims whose support changed, relationships (default: the latest version against the "
        "one kept before it)",
    )
    diff.add_argument("collection", nargs="?", help="the collection's name")
    diff.add_argument(
        "--question",
        metavar="ID",
        help="instead of a synthesis: a standing question's answer (its id, as `litpipe "
        "status` lists it): sentences and citations added and removed, claims whose support "
        "grade changed, and the papers that brought the change",
    )
    diff.add_argument(
        "--since",
        metavar="DATE",
        help="from the version kept last before DATE (YYYY-MM-DD or an ISO time, UTC) to the "
        "latest",
    )
    diff.add_argument(
        "--from",
        dest="from_version",
        metavar="V1",
        help="from this kept version: its data version (or a prefix only it has) or file name",
    )
    diff.add_argument(
        "--to", dest="to_version", metavar="V2", help="to this kept version (default: the latest)"
    )
    add_common_flags(diff)


def _when(value: str) -> datetime:
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def diff_command(settings: Settings, args: argparse.Namespace) -> int:
    from litpipe.report.synthesis_diff import diff_markdown
    from litpipe.workflows import synthesis_history as history

    home, collection = settings.home, args.collection
    if args.since is not None and (args.from_version or args.to_version):
        print("litpipe diff: --since goes without --from and --to", file=sys.stderr)
        return 2
    if (collection is None) == (args.question is None):
        print("litpipe diff: name a COLLECTION or a --question ID (one of them)", file=sys.stderr)
        return 2
    if args.question is not None:
        return _question_diff(settings.home, settings.questions, args)
    try:
        kept = history.entries(home, collection, "synthesis")
        if not kept:
            print(
                f"litpipe diff: no synthesis of {collection!r} is kept under {home} "
                "(`litpipe run` writes one)",
                file=sys.stderr,
            )
            return 2
        if args.since is not None:
            old = history.version_at(home, collection, _when(args.since), strictly_before=True)
            new = history.version_at(home, collection, None)
        else:
            new = (
                history.version_named(home, collection, args.to_version)
                if args.to_version
                else history.read(kept[-1])
            )
            if args.from_version:
                old = history.version_named(home, collection, args.from_version)
            else:  # the version kept before `new`
                old = history.version_before(home, new)
    except ValueError as error:
        print(f"litpipe diff: {error}", file=sys.stderr)
        return 2
    diff = history.diff_between(home, collection, old, new)
    print(diff_markdown(diff, heading_level=1))
    print(
        json.dumps(
            {
                "collection": collection,
                "from": diff.from_version,
                "to": diff.to_version,
                "changed": diff.changed,
                "papers_added": len(diff.papers_added),
                "papers_removed": len(diff.papers_removed),
                "retracted": len(diff.retracted),
                "sentences_added": len(diff.sentences_added),
                "sentences_removed": len(diff.sentences_removed),
                "reworded": diff.reworded,
                "support_changed": len(diff.support_changed),
                "contradicted": len(diff.contradicted),
                "relationships_appeared": len(diff.relationships_appeared),
                "relationships_gone": len(diff.relationships_gone),
            }
        )
    )
    return 0


def _question_diff(
    home: Path, tables: list[StandingQuestionEntry], args: argparse.Namespace
) -> int:
    """`litpipe diff --question ID`: the answer's two kept versions compared, as a
    synthesis' are (the same `--since`, `--from` and `--to`); `tables`, litpipe.toml's
    `[[questions]]`."""
    from litpipe.commands.standing import sync_config
    from litpipe.report.answer_diff import diff_markdown
    from litpipe.workflows import answer_history
    from litpipe.workflows.standing_questions import named

    try:
        sync_config(home, tables)
        question = named(home, args.question)
        collection, key = question.request.collection, question.key
        kept = answer_history.entries(home, collection, key)
        if not kept:
            print(
                f"litpipe diff: no answer to {question.id} is kept under {home} (`litpipe run` "
                f"answers it once {collection!r} has papers)",
                file=sys.stderr,
            )
            return 2
        if args.since is not None:
            old = answer_history.version_at(home, collection, key, _when(args.since))
            new = answer_history.read(kept[-1])
        else:
            new = (
                answer_history.version_named(home, collection, key, args.to_version)
                if args.to_version
                else answer_history.read(kept[-1])
            )
            old = (
                answer_history.version_named(home, collection, key, args.from_version)
                if args.from_version
                else answer_history.version_before(home, new)
            )
    except ValueError as error:
        print(f"litpipe diff: {error}", file=sys.stderr)
        return 2
    diff = answer_history.answer_diff(old, new)
    print(diff_markdown(diff, heading_level=1))
    print(
        json.dumps(
            {
                "question": question.id,
                "key": key,
                "collection": collection,
                "changed": diff.changed,
                "from": diff.from_version,
                "to": diff.to_version,
                "papers_added": len(diff.papers_added),
                "papers_removed": len(diff.papers_removed),
                "sentences_added": len(diff.sentences_added),
                "sentences_removed": len(diff.sentences_removed),
                "citations_added": len(diff.citations_added),
                "citations_removed": len(diff.citations_removed),
                "support_changed": len(diff.support_changed),
                "grades_changed": len(diff.grades_changed),
                "brought_by": diff.brought_by,
            }
        )
    )
    return 0
