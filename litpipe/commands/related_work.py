"""`litpipe related-work`: a related-work section for a research idea from a table of
abstracts or from a collection's ingested papers (LitLLM), materialized as the request's
`related_work` partition unless it is fresh; the Markdown on stdout, what was done and where
the files lie on stderr."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

from litpipe.commands.common import grading_lines
from litpipe.files import write_atomically
from litpipe.llm.usage import calls_line
from litpipe.settings import HomePaths, IngestSettings, Settings
from litpipe.settings.groups import settings_groups
from litpipe.text import counted

if TYPE_CHECKING:
    from litpipe.schemas import RelatedWork
    from litpipe.schemas.exports import ExportFormat
    from litpipe.workflows.related_work_pool import CollectionPool


def related_work_command(
    settings: Settings,
    abstracts: Path | None,
    idea: str | None,
    idea_file: Path | None,
    sentences: int | None = None,
    words: int | None = None,
    top_k: int | None = None,
    out: Path | None = None,
    collection: str | None = None,
    to: str | None = None,
) -> int:
    """Checks the request (its pool: the `abstracts` table, or else the `collection`'s ingested
    papers), stores it, materializes its `related_work` partition unless that is
    fresh already, and prints the Markdown (stdout) and what was done (stderr)."""
    from litpipe.report.related_work import HTML_FILE, JSON_FILE, MARKDOWN_FILE
    from litpipe.runtime.evaluations import step_failure
    from litpipe.workflows.related_work import (
        RelatedWorkInputError,
        check_request,
        load_references,
        make_request,
    )
    from litpipe.workflows.related_work_pool import pool_table

    def refused(message: str) -> int:
        print(f"litpipe related-work: {message}", file=sys.stderr)
        return 2

    # Everything is checked before anything is written: refused input leaves no request, no
    # partition and no output behind.
    if idea_file is not None:
        if not idea_file.is_file():
            return refused(f"{idea_file}: no such file (the research idea, as UTF-8 text)")
        try:
            idea = idea_file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return refused(f"{idea_file}: not UTF-8 text (re-save the idea as UTF-8)")
    pool: CollectionPool | None = None
    try:
        if abstracts is not None:
            table = load_references(abstracts)
        else:
            assert collection is not None  # the command line asks for one of them
            pool = _collection_pool(settings.ingest, settings.paths, collection)
            # The passages wait for the step: the checks here count the papers.
            table = pool_table(pool, {})
        request = make_request(idea or "", settings.related_work, sentences, words, top_k)
        check_request(request, table, settings.related_work)
    except RelatedWorkInputError as error:
        return refused(str(error))
    for reason in table.skipped:
        print(f"{abstracts or f'collection {collection}'}: left out {reason}", file=sys.stderr)

    # Imported only now: Dagster costs seconds that refused input need not wait for.
    import uuid

    from litpipe.artifacts import ArtifactStore
    from litpipe.defs.assets.related_work import (
        ASSET,
        GRADING_CHECKS,
        new_collection_request,
        new_request,
        outputs_folder,
    )
    from litpipe.defs.check_results import latest_check_results
    from litpipe.defs.definitions import build_definitions
    from litpipe.defs.jobs import related_work_job
    from litpipe.defs.partitions import RELATED_WORK_REQUESTS
    from litpipe.defs.resources import usage_path
    from litpipe.defs.staleness import State
    from litpipe.defs.stored_requests import request_store
    from litpipe.llm.usage import UsageLedger
    from litpipe.runtime.requests import request_states, submit_request
    from litpipe.runtime.runner import open_instance
    from litpipe.schemas import RelatedWork

    started = time.perf_counter()
    if pool is not None:
        stored = new_collection_request(request, pool)
    else:
        assert abstracts is not None  # a table's request
        stored = new_request(request, abstracts)
    key = stored.key
    requests = request_store(settings.paths)
    instance = open_instance(settings.llm, settings.paths)
    defs = build_definitions(**settings_groups(settings))
    folder = outputs_folder(settings.paths.outputs_root, key)
    artifacts = ArtifactStore(settings.paths.artifacts_dir)
    states: list[State] = []

    def fresh() -> bool:
        # The same idea, limits and table bytes (or collection papers) under the same code
        # version: nothing to redo.
        states.append(request_states(instance, defs, ASSET, [key])[key])
        files_kept = artifacts.exists([ASSET], key) and all(
            (folder / name).is_file() for name in (MARKDOWN_FILE, HTML_FILE, JSON_FILE)
        )
        return states[-1] is State.FRESH and files_kept

    scope = f"cli-{uuid.uuid4().hex[:12]}"
    submission = submit_request(
        defs,
        instance,
        job=related_work_job.name,
        partitions=RELATED_WORK_REQUESTS,
        asset=ASSET,
        request=stored,
        key=key,
        store=requests,
        fresh=fresh,
        scope=scope,
        # Rewritten even when known: the same bytes may now lie under another path.
        rewrite=True,
    )
    result = submission.result
    calls = ""
    if result is None:
        done = "up to date"
    else:
        if not result.success:
            reason, bad_input = step_failure(result)
            if not bad_input:
                print(f"litpipe related-work: {key} FAILED: {reason}", file=sys.stderr)
                # A blocking grading check that failed says why.
                checks = latest_check_results(instance, defs, key)
                for line in grading_lines(checks, ASSET, GRADING_CHECKS):
                    print(line, file=sys.stderr)
                return 1
            # Refused by the step itself (e.g. a model writer's context): undo what this
            # command added, as if it had been refused up front (the failed run stays in the UI).
            submission.withdraw(instance, requests)
            return refused(reason)
        usage = UsageLedger(usage_path(settings.paths, scope)).scope_summary()
        done = f"materialized ({states[-1]})"
        if usage.made or usage.cached or usage.failed:  # offline engines call no model
            calls = f"; model calls: {calls_line(usage)}"

    related = artifacts.read([ASSET], key, RelatedWork)
    markdown = folder / MARKDOWN_FILE
    text = markdown.read_text(encoding="utf-8")
    print(text, end="" if text.endswith("\n") else "\n")
    length = "" if related.within_length else ", over the requested length"
    print(
        f"{key}: {done} in {time.perf_counter() - started:.1f} s; "
        f"{len(related.cited_ids)} of the top {len(related.references)} of "
        f"{related.table_rows} references cited, {counted(related.sentences, 'sentence')}, "
        f"{counted(related.words, 'word')}{length}; written by {related.engine}, scored by "
        f"{related.debate_engine}{calls}",
        file=sys.stderr,
    )
    for warning in related.warnings:
        print(f"  warning: {warning}", file=sys.stderr)
    for line in grading_lines(latest_check_results(instance, defs, key), ASSET, GRADING_CHECKS):
        print(line, file=sys.stderr)
    print(
        f"Markdown: {markdown}\nHTML: {folder / HTML_FILE}\nJSON: {folder / JSON_FILE}",
        file=sys.stderr,
    )
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(out, text)
        print(f"copied to: {out}", file=sys.stderr)
    if to is not None:
        return _exported(settings.ingest, settings.paths, related, cast("ExportFormat", to), folder)
    return 0


def _exported(
    ingest: IngestSettings, paths: HomePaths, related: RelatedWork, to: ExportFormat, folder: Path
) -> int:
    """`--to`: the section exported beside its Markdown (`export_related_work`)."""
    from litpipe.catalog import Catalog
    from litpipe.commands.export import exporting
    from litpipe.defs.resources import artifact_store
    from litpipe.workflows.export import export_related_work

    catalog, store = Catalog(paths.catalog_path), artifact_store(ingest, paths)
    status, written = exporting(
        "related-work",
        lambda: export_related_work(to, related, catalog, store, folder, "related_work"),
    )
    for path in written:
        print(f"{to}: {path}", file=sys.stderr)
    return status


def _collection_pool(ingest: IngestSettings, paths: HomePaths, collection: str) -> CollectionPool:
    """The collection's ingested papers for the embedder `ingest` names, read before any
    Dagster import; `RelatedWorkInputError` for an unknown collection or one with no ingested
    paper."""
    from litpipe.artifacts import ArtifactStore
    from litpipe.retrieval.store import ChunkStore
    from litpipe.workflows.ingest import settings_embedder
    from litpipe.workflows.related_work_pool import collection_catalog, read_pool

    # The catalog first: an unknown collection leaves no home behind (a chunk store makes one).
    catalog = collection_catalog(paths.catalog_path, collection)
    return read_pool(
        catalog,
        collection,
        # `paper_abstract` is the same for every embedder: the store's top folder holds it.
        ArtifactStore(paths.artifacts_dir),
        ChunkStore(paths.lancedb_dir),
        settings_embedder(ingest, paths).embedder_id,
    )
