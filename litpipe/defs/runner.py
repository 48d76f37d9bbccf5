"""Runs litpipe's graph in-process, into the same Dagster instance the UI serves.

`litpipe run` registers the papers of a source, adds their partitions and materializes what is
missing or stale, so every run shows in the UI: each paper's assets (one run per paper), then the
collection's (one run), then the per-paper assets that read a collection asset, if any. All runs
of one `litpipe run` share a usage scope: their model calls are summed, and budgeted, together.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Literal

import dagster as dg
from pydantic import BaseModel, Field

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog, Registration
from litpipe.defs.definitions import build_definitions
from litpipe.defs.jobs import collection_pipeline, paper_pipeline
from litpipe.defs.llm_steps import USAGE_SCOPE_TAG
from litpipe.defs.partitions import collections, papers
from litpipe.defs.resources import usage_path
from litpipe.defs.staleness import State, partition_states
from litpipe.ingest.sources import Discovery
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import (
    EmbeddingResult,
    FailedPaper,
    LLMUsage,
    PaperChunks,
    PaperEvidence,
    PaperQuestions,
)
from litpipe.settings import Settings

# The progress lines say what happened, and a failed paper's reason is in them and in the
# report; Dagster's console log would repeat it with a traceback per paper. The run's full log
# is still in the instance, for the UI.
QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


class PaperOutcome(BaseModel):
    paper_id: str
    status: Literal["materialized", "up_to_date", "failed"]
    seconds: float = 0.0
    chunks: int = 0
    embedded: int = 0
    questions: int = 0
    evidence: int = Field(default=0, description="Evidence chunks kept for its questions.")
    failure: FailedPaper | None = None


# litpipe never reaches the internet on its own; Dagster's telemetry would.
INSTANCE_CONFIG = "telemetry:\n  enabled: false\n"


def open_instance(settings: Settings) -> dg.DagsterInstance:
    """The persistent instance under `LITPIPE_HOME/dagster`, the one `litpipe ui` serves."""
    settings.dagster_home.mkdir(parents=True, exist_ok=True)
    config = settings.dagster_home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_CONFIG, encoding="utf-8")
    return dg.DagsterInstance.from_config(str(settings.dagster_home))


EMBEDDINGS = dg.AssetKey("chunk_embeddings")


def paper_asset_keys(defs: dg.Definitions) -> list[dg.AssetKey]:
    """The per-paper assets, upstream first."""
    graph = defs.resolve_asset_graph()
    return [key for key in graph.toposorted_asset_keys if graph.get(key).partitions_def == papers]


def collection_asset_keys(defs: dg.Definitions) -> list[dg.AssetKey]:
    """The per-collection assets, upstream first."""
    graph = defs.resolve_asset_graph()
    return [
        key for key in graph.toposorted_asset_keys if graph.get(key).partitions_def == collections
    ]


def paper_phases(defs: dg.Definitions) -> tuple[list[dg.AssetKey], list[dg.AssetKey]]:
    """The per-paper assets split in two: those built before the collection's assets, and those
    that read one of them (evidence searched across the collection), built after."""
    graph = defs.resolve_asset_graph()
    after: set[dg.AssetKey] = set()
    for key in paper_asset_keys(defs):
        parents = graph.get(key).parent_keys
        if any(graph.get(parent).partitions_def == collections for parent in parents) or (
            parents & after
        ):
            after.add(key)
    keys = paper_asset_keys(defs)
    return [key for key in keys if key not in after], [key for key in keys if key in after]


class PapersRun(BaseModel):
    outcomes: list[PaperOutcome]
    llm_usage: LLMUsage
    collection_failure: str | None = Field(
        default=None, description="Why the collection's assets failed, when they did."
    )


def register(
    settings: Settings, instance: dg.DagsterInstance, discovery: Discovery
) -> dict[str, Registration]:
    """Records the papers in the catalog and adds their partitions to the instance."""
    catalog = Catalog(settings.catalog_path)
    registrations = {source.paper_id: catalog.register(source) for source in discovery.sources}
    instance.add_dynamic_partitions(collections.name, [discovery.collection])
    known = set(instance.get_dynamic_partitions(papers.name))
    instance.add_dynamic_partitions(papers.name, [p for p in registrations if p not in known])
    return registrations


def run_papers(
    settings: Settings,
    instance: dg.DagsterInstance,
    registrations: dict[str, Registration],
    on_progress: Callable[[int, int, PaperOutcome], None] = lambda done, total, outcome: None,
) -> PapersRun:
    """Materializes what is new, changed or stale: the papers' assets one run per paper, then
    their collections', then the papers' assets that read a collection's (none by default)."""
    defs = build_definitions(settings)
    paper_job = defs.resolve_job_def(paper_pipeline.name)
    before, after = paper_phases(defs)
    paper_ids = list(registrations)
    states = partition_states(instance, defs, [*before, *after], paper_ids)
    scope = f"cli-{uuid.uuid4().hex[:12]}"
    total = len(paper_ids) * (2 if after else 1)
    progress = 0

    def build_papers(keys: list[dg.AssetKey], ids: list[str]) -> dict[str, PaperOutcome]:
        nonlocal progress
        outcomes = {}
        for paper_id in ids:
            # A new or changed source rebuilds everything; otherwise only what is missing or
            # stale (stale includes everything downstream of a stale asset).
            todo = (
                keys
                if registrations[paper_id] is not Registration.UNCHANGED
                else [key for key in keys if states[key][paper_id] is not State.FRESH]
            )
            if todo:
                outcome = _materialize(settings, paper_job, instance, paper_id, todo, scope)
            else:
                outcome = _outcome(settings, paper_id, "up_to_date", seconds=0.0, embedded=0)
            outcomes[paper_id] = outcome
            progress += 1
            on_progress(progress, total, outcome)
        return outcomes

    outcomes = build_papers(before, paper_ids)
    catalog = Catalog(settings.catalog_path)
    papers_of: dict[str, list[str]] = {}
    for paper_id in paper_ids:
        papers_of.setdefault(catalog.source(paper_id).collection, []).append(paper_id)
    failures = [
        f"{collection}: {failure}"
        for collection, members in papers_of.items()
        if (
            failure := _build_collection(
                settings,
                defs,
                instance,
                collection,
                scope,
                papers_changed=any(outcomes[p].status != "up_to_date" for p in members),
            )
        )
    ]
    collection_failure = "; ".join(failures) or None
    if after:
        built = [paper_id for paper_id in paper_ids if outcomes[paper_id].status != "failed"]
        if collection_failure is None:
            for paper_id, outcome in build_papers(after, built).items():
                first = outcomes[paper_id]
                outcomes[paper_id] = outcome.model_copy(
                    update={
                        "seconds": round(first.seconds + outcome.seconds, 3),
                        "embedded": first.embedded,
                        "status": "up_to_date"
                        if first.status == outcome.status == "up_to_date"
                        else outcome.status,
                    }
                )
    usage = UsageLedger(usage_path(settings, scope)).scope_summary()
    return PapersRun(
        outcomes=list(outcomes.values()), llm_usage=usage, collection_failure=collection_failure
    )


def _build_collection(
    settings: Settings,
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    collection: str,
    scope: str,
    papers_changed: bool,
) -> str | None:
    """Materializes the collection's assets when a paper changed or they are missing or stale;
    returns why they failed, or None."""
    keys = collection_asset_keys(defs)
    states = partition_states(instance, defs, keys, [collection])
    if not keys or (
        not papers_changed and all(states[key][collection] is State.FRESH for key in keys)
    ):
        return None
    result = defs.resolve_job_def(collection_pipeline.name).execute_in_process(
        partition_key=collection,
        instance=instance,
        raise_on_error=False,
        run_config=QUIET_RUN_CONFIG,
        tags={"litpipe/launched_by": "cli", USAGE_SCOPE_TAG: scope},
    )
    return None if result.success else _failure_reason(result)


def _materialize(
    settings: Settings,
    job: dg.JobDefinition,
    instance: dg.DagsterInstance,
    paper_id: str,
    assets: list[dg.AssetKey],
    scope: str,
) -> PaperOutcome:
    started = time.perf_counter()
    result = job.execute_in_process(
        partition_key=paper_id,
        asset_selection=assets,
        instance=instance,
        raise_on_error=False,
        run_config=QUIET_RUN_CONFIG,
        tags={"litpipe/launched_by": "cli", USAGE_SCOPE_TAG: scope},
    )
    seconds = round(time.perf_counter() - started, 3)
    if not result.success:
        source = Catalog(settings.catalog_path).source(paper_id)
        return PaperOutcome(
            paper_id=paper_id,
            status="failed",
            seconds=seconds,
            failure=FailedPaper(
                paper_id=paper_id,
                file=source.path,
                row=source.row_number,
                reason=_failure_reason(result),
            ),
        )
    embedded = 0
    if EMBEDDINGS in assets:
        artifacts = ArtifactStore(settings.artifacts_dir)
        embedded = artifacts.read(list(EMBEDDINGS.path), paper_id, EmbeddingResult).embedded
    return _outcome(settings, paper_id, "materialized", seconds, embedded)


def _outcome(
    settings: Settings,
    paper_id: str,
    status: Literal["materialized", "up_to_date"],
    seconds: float,
    embedded: int,
) -> PaperOutcome:
    """A built paper's figures, read from its artifacts."""
    artifacts = ArtifactStore(settings.artifacts_dir)
    return PaperOutcome(
        paper_id=paper_id,
        status=status,
        seconds=seconds,
        chunks=len(artifacts.read(["paper_chunks"], paper_id, PaperChunks).chunks),
        embedded=embedded,
        questions=len(artifacts.read(["paper_questions"], paper_id, PaperQuestions).questions),
        evidence=sum(
            len(item.chunks)
            for item in artifacts.read(["question_evidence"], paper_id, PaperEvidence).questions
        )
        if artifacts.exists(["question_evidence"], paper_id)
        else 0,
    )


def _failure_reason(result: dg.ExecuteInProcessResult) -> str:
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        failure = event.step_failure_data
        if failure.user_failure_data is not None and failure.user_failure_data.description:
            return failure.user_failure_data.description
        error = failure.error
        if error is not None:
            while error.cause is not None:  # the user code's own exception, not Dagster's wrapper
                error = error.cause
            return f"{event.step_key}: {error.message.strip().splitlines()[-1]}"
    return "the run failed before any step ran (see the run in the Dagster UI)"
