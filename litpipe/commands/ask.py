"""`litpipe ask`: a summary of one ingested paper focused on a query (MAIS), served from its
`query_summary` partition when that is fresh, with the loop's trace and its grading checks;
with `--record`, the (query, paper) pair kept for `litpipe backfill --gate recorded`. With
`--collection` instead of `--paper`: a cited answer from the whole collection, served from its
`collection_answer` partition when that is fresh, each sentence's grade shown."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litpipe.commands.common import grading_lines, with_max_iterations
from litpipe.commands.flags import add_common_flags
from litpipe.llm.usage import calls_line
from litpipe.schemas.exports import EXPORT_FORMATS, ExportFormat
from litpipe.settings import HomePaths, IngestSettings, Settings
from litpipe.settings.groups import SettingsGroups, settings_groups

if TYPE_CHECKING:
    from litpipe.schemas import CollectionAnswer


def add_ask_parser(commands: Any) -> None:
    """`litpipe ask`'s arguments, on the CLI's subcommands."""
    ask = commands.add_parser(
        "ask",
        help="a summary of one ingested paper focused on a query (MAIS), with the loop's trace; "
        "or, with --collection, a cited answer from a whole collection",
    )
    asked = ask.add_mutually_exclusive_group(required=True)
    asked.add_argument("--paper", help="the paper's id, as `litpipe run` prints it")
    asked.add_argument(
        "--collection",
        help="answer from every paper of this collection (as `litpipe run` named it), citing "
        "[paper_id:page], each sentence graded; or say that the collection does not answer",
    )
    ask.add_argument(
        "query", nargs="*", help="what the summary should focus on; with --collection, the question"
    )
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
    ask.add_argument(
        "--watch",
        action="store_true",
        help="with --collection: keep the question standing, answered again whenever the "
        "collection changes (`litpipe status` lists it; `litpipe diff --question ID`)",
    )
    ask.add_argument(
        "--to",
        choices=EXPORT_FORMATS,
        help="with --collection: also export the answer for a manuscript (<id>.tex to \\input, "
        "its standalone document and .bib; or Pandoc, Word, BibTeX, CSL-JSON) beside its "
        "Markdown, each paper cited by its key",
    )
    add_common_flags(ask)


def ask_command(
    settings: Settings,
    paper_id: str | None,
    query: str,
    max_iterations: int | None,
    record: bool = False,
    collection: str | None = None,
    watch: bool = False,
    to: ExportFormat | None = None,
) -> int:
    """The summary and its trace; with `record`, once it is written, the pair judged: the user
    asked this paper this question (an empty query is refused before, as any request's). With
    `collection` (and no paper), the collection's answer (`ask_collection`)."""
    import uuid

    if collection is not None:
        unused = [
            name
            for name, given in (
                ("--max-iterations", max_iterations is not None),
                ("--record", record),
            )
            if given
        ]
        if unused:
            print(
                f"litpipe ask: --collection does not take {' or '.join(unused)} (options of "
                "--paper's MAIS summary)",
                file=sys.stderr,
            )
            return 2
        return ask_collection(settings_groups(settings), collection, query, watch, to)
    assert paper_id is not None  # the parser requires --paper or --collection
    if watch or to is not None:
        flag = "--watch" if watch else "--to"
        print(f"litpipe ask: {flag} goes with --collection (an answer)", file=sys.stderr)
        return 2

    from litpipe.defs.assets.query_summary import ASSET, GRADING_CHECKS
    from litpipe.defs.check_results import latest_check_results
    from litpipe.defs.definitions import build_definitions
    from litpipe.evaluation.embedder_gate import RECORDED_QRELS, record_pair
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
    served = served_line(settings.paths, scope, outcome.status, outcome.seconds)
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


def ask_collection(
    groups: SettingsGroups,
    collection: str,
    question: str,
    watch: bool = False,
    to: ExportFormat | None = None,
) -> int:
    """The collection's answer (or its admission that it does not answer), each sentence's
    grade and the files; bad input refused in one line, exit 2, before anything is written.
    With `watch`, the question registered as standing first; with `to`, the answer exported
    beside its Markdown (`export_manuscript`)."""
    import uuid

    from litpipe.defs.assets.collection_answer import ASSET, GRADING_CHECKS
    from litpipe.defs.check_results import latest_check_results
    from litpipe.defs.definitions import build_definitions
    from litpipe.report.collection_answer import markdown_path, render_text
    from litpipe.runtime.collection_answer import answer_request, ready_collection
    from litpipe.runtime.runner import open_instance
    from litpipe.workflows.collection_answer import CollectionAnswerError, request_for
    from litpipe.workflows.standing_questions import register

    ingest, paths = groups["ingest"], groups["paths"]
    try:
        request = request_for(collection, question)
        # Before anything is written: no request file, no partition for a collection we
        # cannot search.
        members = ready_collection(ingest, paths, request.collection)
    except CollectionAnswerError as error:
        print(f"litpipe ask: {error}", file=sys.stderr)
        return 2
    if watch:
        standing = register(paths.home, request, "watch")
        print(
            f"standing question {standing.id}: answered again whenever {request.collection} "
            f"changes (`litpipe diff --question {standing.id}`)",
            file=sys.stderr,
        )
    scope = f"cli-{uuid.uuid4().hex[:12]}"
    print(
        f"asking collection {request.collection} ({len(members)} papers; {request.key}): "
        f"{request.question}",
        file=sys.stderr,
    )
    instance = open_instance(groups["llm"], paths)
    defs = build_definitions(**groups)
    outcome = answer_request(ingest, paths, instance, defs, request, scope)
    graded = grading_lines(latest_check_results(instance, defs, request.key), ASSET, GRADING_CHECKS)
    if outcome.result is None:
        print(f"litpipe ask: {request.key} FAILED: {outcome.failure}", file=sys.stderr)
        for line in graded:
            print(line, file=sys.stderr)
        return 1
    served = served_line(paths, scope, outcome.status, outcome.seconds)
    print(render_text(outcome.result))
    print()
    if outcome.check is not None:
        verdict = "passed" if outcome.check.passed else "FAILED"
        print(f"Check {outcome.check.check}: {verdict}: {outcome.check.description}")
    for line in graded:
        print(line)
    print(f"Request {request.key}: {served}")
    print(f"Markdown: {outcome.markdown}")
    print(f"HTML: {outcome.html}")
    print(f"JSON: {outcome.json_file}")
    if to is None:
        return 0
    folder = markdown_path(paths.outputs_dir(request.collection), request.key).parent
    return _exported(ingest, paths, outcome.result, to, folder)


def _exported(
    ingest: IngestSettings,
    paths: HomePaths,
    answer: CollectionAnswer,
    to: ExportFormat,
    folder: Path,
) -> int:
    from litpipe.catalog import Catalog
    from litpipe.commands.export import exporting
    from litpipe.defs.resources import artifact_store
    from litpipe.workflows.export import (
        answer_manuscript,
        export_manuscript,
        retracted_left_out,
    )

    catalog, store = Catalog(paths.catalog_path), artifact_store(ingest, paths)
    left_out = retracted_left_out(catalog, answer.request.collection)
    manuscript, stem = answer_manuscript(answer, left_out), answer.request.key
    status, written = exporting(
        "ask", lambda: export_manuscript(to, manuscript, catalog, store, folder, stem)
    )
    for path in written:
        print(f"{to}: {path}")
    return status


def served_line(paths: HomePaths, scope: str, status: str, seconds: float) -> str:
    """How a request was served: materialized, with its run's model calls (`scope`'s usage), or
    from the fresh materialization."""
    from litpipe.defs.resources import usage_path
    from litpipe.llm.usage import UsageLedger

    if status != "materialized":
        return "up to date: served from the materialized asset (no run, no model call)"
    usage = UsageLedger(usage_path(paths, scope)).scope_summary()
    return f"materialized in {seconds:.1f} s (model calls: {calls_line(usage)})"
