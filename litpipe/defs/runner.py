"""Runs litpipe's graph in-process, into the same Dagster instance the UI serves.

`litpipe run` registers the papers of a source, adds their partitions and materializes each
paper's assets that are missing or stale, one run per paper, so every run shows in the UI.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

import dagster as dg
from pydantic import BaseModel

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog, Registration
from litpipe.defs.definitions import build_definitions
from litpipe.defs.jobs import ingest_job
from litpipe.defs.partitions import collections, papers
from litpipe.defs.staleness import State, partition_states
from litpipe.ingest.sources import Discovery
from litpipe.schemas import EmbeddingResult, FailedPaper, PaperChunks
from litpipe.settings import Settings

# Dagster's console log repeats what the progress lines say; keep its warnings and errors.
QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


class PaperOutcome(BaseModel):
    paper_id: str
    status: Literal["materialized", "up_to_date", "failed"]
    seconds: float = 0.0
    chunks: int = 0
    embedded: int = 0
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


INGEST_KEYS = [
    dg.AssetKey(name)
    for name in ("paper_source", "paper_document", "paper_chunks", "chunk_embeddings")
]


class IngestRun(BaseModel):
    outcomes: list[PaperOutcome]


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


def ingest(
    settings: Settings,
    instance: dg.DagsterInstance,
    registrations: dict[str, Registration],
    on_progress: Callable[[int, int, PaperOutcome], None] = lambda done, total, outcome: None,
) -> IngestRun:
    """Materializes, one run per paper, the papers whose assets are new, changed or stale."""
    defs = build_definitions(settings)
    job = defs.resolve_job_def(ingest_job.name)
    paper_ids = list(registrations)
    states = partition_states(instance, defs, INGEST_KEYS, paper_ids)
    outcomes: list[PaperOutcome] = []
    for done, paper_id in enumerate(paper_ids, start=1):
        up_to_date = registrations[paper_id] is Registration.UNCHANGED and all(
            states[key][paper_id] is State.FRESH for key in INGEST_KEYS
        )
        if up_to_date:
            outcome = PaperOutcome(
                paper_id=paper_id, status="up_to_date", chunks=_chunk_count(settings, paper_id)
            )
        else:
            outcome = _materialize(settings, job, instance, paper_id)
        outcomes.append(outcome)
        on_progress(done, len(paper_ids), outcome)
    return IngestRun(outcomes=outcomes)


def _materialize(
    settings: Settings, job: dg.JobDefinition, instance: dg.DagsterInstance, paper_id: str
) -> PaperOutcome:
    started = time.perf_counter()
    result = job.execute_in_process(
        partition_key=paper_id,
        instance=instance,
        raise_on_error=False,
        run_config=QUIET_RUN_CONFIG,
        tags={"litpipe/launched_by": "cli"},
    )
    seconds = round(time.perf_counter() - started, 3)
    if not result.success:
        return PaperOutcome(
            paper_id=paper_id,
            status="failed",
            seconds=seconds,
            failure=FailedPaper(
                paper_id=paper_id,
                file=Catalog(settings.catalog_path).source(paper_id).path,
                reason=_failure_reason(result),
            ),
        )
    embedding = ArtifactStore(settings.artifacts_dir).read(
        ["chunk_embeddings"], paper_id, EmbeddingResult
    )
    return PaperOutcome(
        paper_id=paper_id,
        status="materialized",
        seconds=seconds,
        chunks=embedding.chunks,
        embedded=embedding.embedded,
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


def _chunk_count(settings: Settings, paper_id: str) -> int:
    return len(
        ArtifactStore(settings.artifacts_dir).read(["paper_chunks"], paper_id, PaperChunks).chunks
    )
