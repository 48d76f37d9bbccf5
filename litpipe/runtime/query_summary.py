"""Runs query-focused summary requests in-process, into the instance the UI serves.

`litpipe ask` and `litpipe eval mais` go through here: a request is checked (a registered and
ingested paper) before anything is written, then stored under `LITPIPE_HOME/requests/`, added
as a `query_requests` partition and materialized with `query_summary_job`, unless its latest
materialization is fresh: same code version (loop, prompts, models, retrieval) and the same data
versions of its paper's chunks, embeddings and abstract. A fresh request is served from its
stored output with no run and no model call.
"""

from __future__ import annotations

from typing import Literal

import dagster as dg
from pydantic import BaseModel, Field

from litpipe.catalog import Catalog
from litpipe.defs.assets.query_summary import (
    ASSET,
    CITATION_CHECK,
    PAPER_VERSIONS,
    not_ingested,
    paper_versions,
)
from litpipe.defs.check_results import latest_check_results
from litpipe.defs.jobs import query_summary_job
from litpipe.defs.partitions import QUERY_REQUESTS
from litpipe.defs.resources import artifact_store
from litpipe.defs.staleness import State, partition_states
from litpipe.defs.stored_requests import request_store
from litpipe.report.query_summary import markdown_path
from litpipe.retrieval.store import ChunkStore
from litpipe.runtime.execution import interrupted, run_failure
from litpipe.runtime.requests import submit_request
from litpipe.schemas import CheckReport, PaperSource, QuerySummary, QuerySummaryRequest
from litpipe.settings import HomePaths, IngestSettings
from litpipe.workflows.ingest import settings_embedder
from litpipe.workflows.query_summary import QuerySummaryError

QUERY_SUMMARIES = dg.AssetKey(ASSET)
# Papers named in an "unknown paper" message, at most.
_KNOWN_SHOWN = 10


class AskOutcome(BaseModel):
    request: QuerySummaryRequest
    collection: str
    status: Literal["materialized", "up_to_date", "failed", "interrupted"]
    seconds: float = 0.0
    result: QuerySummary | None = None
    markdown: str | None = Field(default=None, description="The request's Markdown file.")
    check: CheckReport | None = Field(
        default=None, description="The citation check's latest result for this request."
    )
    failure: str | None = None


def ready_paper(ingest: IngestSettings, paths: HomePaths, paper_id: str) -> PaperSource:
    """The paper's source when it is registered and ingested (its abstract and chunks stored,
    for the embedder `ingest` names); otherwise a QuerySummaryError saying what to do. Writes
    nothing."""
    if not paths.catalog_path.is_file():
        raise QuerySummaryError(
            f"unknown paper {paper_id!r}: no paper is registered under {paths.home}; run "
            "`litpipe run SOURCE` first"
        )
    catalog = Catalog(paths.catalog_path)
    try:
        source = catalog.source(paper_id)
    except KeyError:
        known = sorted({p for c in catalog.collections() for p in catalog.papers(c)})
        listed = ", ".join(known[:_KNOWN_SHOWN]) + (", ..." if len(known) > _KNOWN_SHOWN else "")
        raise QuerySummaryError(
            f"unknown paper {paper_id!r}: it is not registered under {paths.home} (known "
            f"papers: {listed or 'none'})"
        ) from None
    ingested = artifact_store(ingest, paths).exists(["paper_abstract"], paper_id) and (
        ChunkStore(paths.lancedb_dir).paper_chunk_ids(
            settings_embedder(ingest, paths).embedder_id, paper_id
        )
    )
    if not ingested:
        raise QuerySummaryError(not_ingested(source, catalog.home_collection(paper_id)))
    return source


def request_state(
    instance: dg.DagsterInstance, defs: dg.Definitions, request: QuerySummaryRequest
) -> State:
    """FRESH when the latest materialization has the current code version and was written from
    the paper's current data versions."""
    state = partition_states(instance, defs, [QUERY_SUMMARIES], [request.key])[QUERY_SUMMARIES][
        request.key
    ]
    if state is not State.FRESH:
        return state
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=QUERY_SUMMARIES, asset_partitions=[request.key]), limit=1
    ).records
    materialization = records[0].asset_materialization if records else None
    recorded = materialization.metadata.get(PAPER_VERSIONS) if materialization else None
    if recorded is None or recorded.value != paper_versions(instance, request.paper_id):
        return State.UPSTREAM_CHANGED
    return State.FRESH


def summarize_request(
    ingest: IngestSettings,
    paths: HomePaths,
    instance: dg.DagsterInstance,
    defs: dg.Definitions,
    request: QuerySummaryRequest,
    scope: str,
) -> AskOutcome:
    """The request's summary: stored, partitioned and materialized (as `defs`, the graph built
    from the same settings, has it) when not fresh. The paper must be `ready_paper`."""
    collection = Catalog(paths.catalog_path).home_collection(request.paper_id)
    outcome = AskOutcome(request=request, collection=collection, status="up_to_date")
    artifacts = artifact_store(ingest, paths)
    submission = submit_request(
        defs,
        instance,
        job=query_summary_job.name,
        partitions=QUERY_REQUESTS,
        asset=ASSET,
        request=request,
        key=request.key,
        store=request_store(paths),
        fresh=lambda: (
            request_state(instance, defs, request) is State.FRESH
            and artifacts.exists([ASSET], request.key)
        ),
        scope=scope,
        asset_selection=[QUERY_SUMMARIES],
    )
    result = submission.result
    if result is not None:
        outcome.seconds = submission.seconds
        if interrupted(result):
            outcome.status = "interrupted"
            outcome.failure = "interrupted (stop requested)"
        elif not result.success:
            outcome.status = "failed"
            outcome.failure = run_failure(result)
        else:
            outcome.status = "materialized"
    if artifacts.exists([ASSET], request.key) and outcome.status not in {"failed", "interrupted"}:
        summary = artifacts.read([ASSET], request.key, QuerySummary)
        outcome.result = summary
        outcome.markdown = str(markdown_path(paths.outputs_dir(collection), request.key))
    outcome.check = next(
        (
            check
            for check in latest_check_results(instance, defs, request.key)
            if check.asset == ASSET and check.check == CITATION_CHECK
        ),
        None,
    )
    return outcome
