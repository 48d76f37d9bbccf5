"""Runs litpipe's graph in-process, into the same Dagster instance the UI serves.

`litpipe run` registers the papers of a source, adds their partitions and materializes each
paper's assets that are missing or stale, one run per paper, so every run shows in the UI. All
runs of one `litpipe run` share a usage scope: their model calls are summed, and budgeted, together.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Literal

import dagster as dg
from pydantic import BaseModel

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog, Registration
from litpipe.defs.definitions import build_definitions
from litpipe.defs.jobs import paper_pipeline
from litpipe.defs.llm_steps import USAGE_SCOPE_TAG
from litpipe.defs.partitions import collections, papers
from litpipe.defs.resources import usage_path
from litpipe.defs.staleness import State, partition_states
from litpipe.ingest.sources import Discovery
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import EmbeddingResult, FailedPaper, LLMUsage, PaperChunks, PaperQuestions
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


class PapersRun(BaseModel):
    outcomes: list[PaperOutcome]
    llm_usage: LLMUsage


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
    """Materializes, one run per paper, the papers whose assets are new, changed or stale."""
    defs = build_definitions(settings)
    job = defs.resolve_job_def(paper_pipeline.name)
    keys = paper_asset_keys(defs)
    paper_ids = list(registrations)
    states = partition_states(instance, defs, keys, paper_ids)
    scope = f"cli-{uuid.uuid4().hex[:12]}"
    outcomes: list[PaperOutcome] = []
    for done, paper_id in enumerate(paper_ids, start=1):
        # A new or changed source rebuilds everything; otherwise only what is missing or stale
        # (stale includes everything downstream of a stale asset).
        todo = (
            keys
            if registrations[paper_id] is not Registration.UNCHANGED
            else [key for key in keys if states[key][paper_id] is not State.FRESH]
        )
        if todo:
            outcome = _materialize(settings, job, instance, paper_id, todo, scope)
        else:
            outcome = _outcome(settings, paper_id, "up_to_date", seconds=0.0, embedded=0)
        outcomes.append(outcome)
        on_progress(done, len(paper_ids), outcome)
    usage = UsageLedger(usage_path(settings, scope)).scope_summary()
    return PapersRun(outcomes=outcomes, llm_usage=usage)


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
