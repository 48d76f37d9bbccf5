"""`litpipe ask`: a summary of one ingested paper focused on a query (MAIS), served from its
`query_summary` partition when that is fresh, with the loop's trace and its grading checks;
with `--record`, the (query, paper) pair kept for `litpipe backfill --gate recorded`."""

from __future__ import annotations

import sys
from typing import Any

from litpipe.commands.common import grading_lines, with_max_iterations
from litpipe.commands.flags import add_common_flags
from litpipe.llm.usage import calls_line
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups


def add_ask_parser(commands: Any) -> None:
    """`litpipe ask`'s arguments, on the CLI's subcommands."""
    ask = commands.add_parser(
        "ask",
        help="a summary of one ingested paper focused on a query (MAIS), with the loop's trace",
    )
    ask.add_argument("--paper", required=True, help="the paper's id, as `litpipe run` prints it")
    ask.add_argument("query", nargs="*", help="what the summary should focus on")
    ask.add_argument(
        "--max-iterations",
        type=int,
        help="loop passes at most (default: query_summary.max_iterations)",
    )
    ask.add_argument(
        "--record",
        action="store_true",
        help="also keep (query, paper) as a judged pair in HOME/qrels.jsonl, for `litpipe "
        "backfill --gate`",
    )
    add_common_flags(ask)


def ask_command(
    settings: Settings,
    paper_id: str,
    query: str,
    max_iterations: int | None,
    record: bool = False,
) -> int:
    """The summary and its trace; with `record`, once it is written, the pair judged: the user
    asked this paper this question (an empty query is refused before, as any request's)."""
    import uuid

    from litpipe.defs.assets.query_summary import ASSET, GRADING_CHECKS
    from litpipe.defs.check_results import latest_check_results
    from litpipe.defs.definitions import build_definitions
    from litpipe.defs.resources import usage_path
    from litpipe.evaluation.embedder_gate import RECORDED_QRELS, record_pair
    from litpipe.llm.usage import UsageLedger
    from litpipe.report.query_summary import html_path, outcome_line, render_text
    from litpipe.runtime.query_summary import ready_paper, summarize_request
    from litpipe.runtime.runner import open_instance
    from litpipe.workflows.query_summary import request_for

    try:
        request = request_for(paper_id, query)
        settings = with_max_iterations(settings, max_iterations)
        # Before anything is written: no request file, no partition for a paper we cannot read.
        ready_paper(settings.ingest, settings.paths, request.paper_id)
    except ValueError as error:
        print(f"litpipe ask: {error}", file=sys.stderr)
        return 2
    scope = f"cli-{uuid.uuid4().hex[:12]}"
    print(f"asking {request.paper_id} ({request.key}): {request.query}", file=sys.stderr)
    instance = open_instance(settings.llm, settings.paths)
    defs = build_definitions(**settings_groups(settings))
    outcome = summarize_request(settings.ingest, settings.paths, instance, defs, request, scope)
    graded = grading_lines(latest_check_results(instance, defs, request.key), ASSET, GRADING_CHECKS)
    if outcome.result is None:
        print(f"litpipe ask: {request.key} FAILED: {outcome.failure}", file=sys.stderr)
        # A blocking grading check that failed says why.
        for line in graded:
            print(line, file=sys.stderr)
        return 1
    result = outcome.result
    usage = UsageLedger(usage_path(settings.paths, scope)).scope_summary()
    served = (
        f"materialized in {outcome.seconds:.1f} s (model calls: {calls_line(usage)})"
        if outcome.status == "materialized"
        else "up to date: served from the materialized asset (no run, no model call)"
    )
    print(render_text(result))
    print()
    print(f"Status: {result.status}, {outcome_line(result)}")
    print(f"Route: {result.route} ({result.route_reason})")
    if outcome.check is not None:
        verdict = "passed" if outcome.check.passed else "FAILED"
        print(f"Check {outcome.check.check}: {verdict}: {outcome.check.description}")
    for line in graded:
        print(line)
    print(f"Request {request.key}: {served}")
    print(f"Markdown: {outcome.markdown}")
    print(f"HTML: {html_path(settings.paths.outputs_dir(outcome.collection), request.key)}")
    if record:
        recorded = record_pair(settings.home, request.query, request.paper_id)
        print(
            f"Judged pair {'recorded' if recorded else 'already recorded'} in "
            f"{settings.home / RECORDED_QRELS} (for `litpipe backfill --gate recorded`)"
        )
    return 0
