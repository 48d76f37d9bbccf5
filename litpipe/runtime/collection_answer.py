"""Runs questions of a collection in-process, into the instance the UI serves.

`litpipe ask --collection` goes through here: a request is checked (a known collection with
embedded papers) before anything is written, then stored under `LITPIPE_HOME/requests/`, added
as a `collection_questions` partition and materialized with `collection_answer_job`, unless its
latest materialization is fresh: same code version (writers, prompts, models, retrieval, judges)
and the same collection versions (its papers, their chunks and embeddings). A fresh request is
served from its stored output with no run and no model call.
"""

from __future__ import annotations

from typing import Literal

import dagster as dg
from pydantic import BaseModel, Field

from litpipe.catalog import Catalog
from litpipe.defs.assets.collection_answer import (
    ASSET,
    CITATION_CHECK,
    collection_versions,
    recorded_collection_versions,
)
from litpipe.defs.check_results import latest_check_results
from litpipe.defs.jobs import collection_answer_job
from litpipe.defs.partitions import COLLECTION_QUESTIONS
from litpipe.defs.resources import artifact_store
from litpipe.defs.staleness import State
from litpipe.defs.stored_requests import request_store
from litpipe.report.collection_answer import html_path, json_path, markdown_path
from litpipe.retrieval.store import ChunkStore
from litpipe.runtime.execution import interrupted, run_failure
from litpipe.runtime.requests import request_states, submit_request
from litpipe.schemas import CheckReport, CollectionAnswer, CollectionAnswerRequest
from litpipe.settings import HomePaths, IngestSettings
from litpipe.workflows.collection_answer import CollectionAnswerError
from litpipe.workflows.ingest import settings_embedder

COLLECTION_ANSWERS = dg.AssetKey(ASSET)
# Collections named in an "unknown collection" message, at most.
_KNOWN_SHOWN = 10


class CollectionAskOutcome(BaseModel):
    request: CollectionAnswerRequest
    status: Literal["materialized", "up_to_date", "failed", "interrupted"]
    seconds: float = 0.0
    result: CollectionAnswer | None = None
    markdown: str | None = Field(default=None, description="The request's Markdown file.")
    html: str | None = Field(default=None, description="The request's page.")
    json_file: str | None = Field(default=None, description="The request's JSON file.")
    check: CheckReport | None = Field(
        default=None, description="The citation check's latest result for this request."
    )
    failure: str | None = None


def ready_collection(ingest: IngestSettings, paths: HomePaths, collection: str) -> list[str]:
    """The collection's papers (the retracted ones left out) when it is registered and some of
    them are embedded for the embedder `ingest` names; otherwise a CollectionAnswerError saying
    what to do. Writes nothing."""
    registered = paths.catalog_path.is_file()
    known = Catalog(paths.catalog_path).collections() if registered else []
    if collection not in known:
        listed = ", ".join(known[:_KNOWN_SHOWN]) + (", ..." if len(known) > _KNOWN_SHOWN else "")
        raise CollectionAnswerError(
            f"unknown collection {collection!r}: it is not registered under {paths.home} "
            f"(known collections: {listed or 'none'}); run `litpipe run SOURCE --collection "
            f"{collection}` first"
        )
    members = Catalog(paths.catalog_path).papers(collection)
    embedder_id = settings_embedder(ingest, paths).embedder_id
    embedded = ChunkStore(paths.lancedb_dir).chunk_rows(embedder_id, ["paper_id"], members)
    if embedded.num_rows == 0:
        raise CollectionAnswerError(
            f"collection {collection!r} has no embedded paper for the embedder {embedder_id} "
            f"({len(members)} papers); run `litpipe run SOURCE --collection {collection}` first"
        )
    return members


def request_state(
    paths: HomePaths,
    instance: dg.DagsterInstance,
    defs: dg.Definitions,
    request: CollectionAnswerRequest,
) -> State:
    """FRESH when the latest materialization has the current code version and was written from
    the collection's current papers and their current data versions."""
    state = request_states(instance, defs, ASSET, [request.key])[request.key]
    if state is not State.FRESH:
        return state
    members = Catalog(paths.catalog_path).papers(request.collection)
    recorded = recorded_collection_versions(instance, request.key)
    if recorded is None or recorded != collection_versions(instance, members):
        return State.UPSTREAM_CHANGED
    return State.FRESH


def answer_request(
    ingest: IngestSettings,
    paths: HomePaths,
    instance: dg.DagsterInstance,
    defs: dg.Definitions,
    request: CollectionAnswerRequest,
    scope: str,
) -> CollectionAskOutcome:
    """The request's answer: stored, partitioned and materialized (as `defs`, the graph built
    from the same settings, has it) when not fresh. The collection must be `ready_collection`."""
    outcome = CollectionAskOutcome(request=request, status="up_to_date")
    artifacts = artifact_store(ingest, paths)
    submission = submit_request(
        defs,
        instance,
        job=collection_answer_job.name,
        partitions=COLLECTION_QUESTIONS,
        asset=ASSET,
        request=request,
        key=request.key,
        store=request_store(paths),
        fresh=lambda: (
            request_state(paths, instance, defs, request) is State.FRESH
            and artifacts.exists([ASSET], request.key)
        ),
        scope=scope,
        asset_selection=[COLLECTION_ANSWERS],
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
        outcome.result = artifacts.read([ASSET], request.key, CollectionAnswer)
        outputs_dir = paths.outputs_dir(request.collection)
        outcome.markdown = str(markdown_path(outputs_dir, request.key))
        outcome.html = str(html_path(outputs_dir, request.key))
        outcome.json_file = str(json_path(outputs_dir, request.key))
    outcome.check = next(
        (
            check
            for check in latest_check_results(instance, defs, request.key)
            if check.asset == ASSET and check.check == CITATION_CHECK
        ),
        None,
    )
    return outcome
