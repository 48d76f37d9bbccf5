"""`litpipe diff COLLECTION`: what changed in a collection's synthesis between two kept versions
(its history under the home, `litpipe.workflows.synthesis_history`), as Markdown, then one JSON
line of its figures."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from litpipe.commands.flags import add_common_flags
from litpipe.settings import Settings


def add_diff_parser(commands: Any) -> None:
    """`litpipe diff`'s arguments, on the CLI's subcommands."""
    diff = commands.add_parser(
        "diff",
        help="what changed in a collection's synthesis between two kept versions: papers, "
        "sentences with their citations, claims whose support changed, relationships "
        "(default: the latest version against the one kept before it)",
    )
    diff.add_argument("collection", help="the collection's name")
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
