"""`litpipe backfill`: brings every registered paper (or a collection's) up to date under the
current settings, in batches, in-process into the instance the UI serves. Made for swapping the
embedding model; after any other change (a chunk setting, a prompt) it does the same.

Per batch of `batch_size` papers (in the order the papers were registered, so that a batch is a
range of the `papers` partitions), as `litpipe run` builds them (`runner.build_batch`): one run
over the batch per level of stale stages, as a backfill launched from the UI does (the assets'
`BackfillPolicy.multi_run`), one encode and one LanceDB commit for its chunks; each later stage
only while it is still stale: a stage whose output came back the same (the same evidence found
by the new embedder) leaves what follows it fresh, so its answers are not rerun. Then the
collections of those papers, one level at a time. The previous embedder's table is never
written: it stays queryable throughout.

It holds the build locks of what it builds, as `litpipe run` does (`runner.build_lock`): a
batch's papers, taken in key order so that two backfills never wait on each other, then each
collection; under them it reads again what is stale, so a paper a concurrent run built meanwhile
is not built twice.

Stopped on request (SIGINT/SIGTERM), it starts no further run: the report names the batches
finished, the one interrupted with its papers not finished, the batches not started and the
collections not brought up to date. Run again, it continues: what was built is fresh, and skipped.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import dagster as dg
from pydantic import BaseModel, Field

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog, Registration
from litpipe.defs.definitions import build_definitions
from litpipe.defs.jobs import collection_pipeline
from litpipe.defs.llm_steps import USAGE_SCOPE_TAG
from litpipe.defs.partitions import COLLECTIONS, PAPERS
from litpipe.defs.resources import LanceDBResource, artifact_store, usage_path
from litpipe.defs.staleness import build_next, latest_storage_id
from litpipe.files import exclusive_lock, write_atomically
from litpipe.llm.usage import UsageLedger, calls_line
from litpipe.retrieval.store import ChunkStore
from litpipe.runtime.execution import execute, interrupted, run_failure
from litpipe.runtime.runner import (
    EMBEDDINGS,
    Phase,
    build_batch,
    build_lock,
    partitions_read,
    phases,
)
from litpipe.schemas import EmbeddingResult, FailedPaper, LLMUsage
from litpipe.settings import HomePaths, IngestSettings, Settings
from litpipe.settings.groups import settings_groups
from litpipe.stopping import stop_line
from litpipe.text import counted
from litpipe.workflows.ingest import settings_embedder

if TYPE_CHECKING:
    from litpipe.evaluation.embedder_gate import EmbedderGate

BACKFILL_TAG = "litpipe/backfill"
# The asset a gated backfill's scores are observed on: the index whose embedder the gate decides.
CORPUS_INDEX = dg.AssetKey("corpus_index")


class TableState(BaseModel):
    """A chunk table as it was before the backfill and after it."""

    table: str
    rows_before: int
    rows_after: int
    version_before: int | None = Field(description="LanceDB table version (None: no table).")
    version_after: int | None

    @property
    def untouched(self) -> bool:
        return (self.rows_before, self.version_before) == (self.rows_after, self.version_after)


class BatchOutcome(BaseModel):
    """One batch of papers: what was rebuilt, for how many papers, in how long."""

    number: int
    batches: int
    papers: list[str]
    seconds: float
    rebuilt: dict[str, int] = Field(
        default_factory=dict, description="Per asset, the papers of the batch it was rebuilt for."
    )
    chunks: int = Field(default=0, description="Chunks of the papers whose embeddings rebuilt.")
    embedded: int = Field(default=0, description="Of those, chunks encoded by this batch.")
    batched_runs: int = Field(default=0, description="Runs over a range of papers.")
    failed: list[FailedPaper] = Field(default_factory=list)
    status: Literal["finished", "interrupted", "not_started"] = Field(
        default="finished",
        description="interrupted: stopped on request during the batch; not_started: before it.",
    )
    unfinished: list[str] = Field(
        default_factory=list,
        description="Papers a stop left not up to date (its run interrupted, or not reached).",
    )


class BackfillReport(BaseModel):
    """What `litpipe backfill` did: `HOME/outputs/backfill/<embedder id>.json`."""

    backfill_id: str
    embedder: str = Field(description="The embedder id the papers were brought up to date for.")
    table: TableState
    previous_tables: list[TableState] = Field(
        description="The tables of the embedders the papers had before: never written."
    )
    papers: int
    papers_up_to_date: int = Field(description="Papers none of whose assets was stale.")
    batch_size: int
    batches: list[BatchOutcome]
    rebuilt: dict[str, int] = Field(description="Per per-paper asset, the papers it rebuilt.")
    chunks: int
    embedded: int
    collections: dict[str, list[str]] = Field(
        description="Per collection, the collection assets rebuilt."
    )
    collection_failure: str | None = None
    failed_papers: list[FailedPaper]
    llm_calls: LLMUsage
    llm_calls_by_agent: dict[str, LLMUsage]
    seconds: float
    stopped: bool = Field(
        default=False,
        description="Stopped on request (SIGINT/SIGTERM): the batches not finished and the "
        "unfinished collections are left to a rerun, which skips what is fresh.",
    )
    unfinished_collections: list[str] = Field(
        default_factory=list, description="When stopped: the collections not brought up to date."
    )


def backfill(
    settings: Settings,
    instance: dg.DagsterInstance,
    paper_ids: Iterable[str],
    batch_size: int | None = None,
    on_batch: Callable[[BatchOutcome], None] = lambda outcome: None,
    stop_requested: Callable[[], bool] = lambda: False,
) -> BackfillReport:
    """Materializes what is missing or stale of `paper_ids` (registered papers) and of their
    collections, `batch_size` papers at a time (default: `operations.batch_size`). It
    starts no further run once `stop_requested` or once a signal interrupted a run's step."""
    started = time.perf_counter()
    size = batch_size or settings.operations.batch_size
    if size < 1:
        raise ValueError(f"the batch size must be at least 1, not {size}")
    defs = build_definitions(**settings_groups(settings))
    embedder_id = settings_embedder(settings.ingest, settings.paths).embedder_id
    store = LanceDBResource(uri=str(settings.paths.lancedb_dir)).store()
    artifacts = artifact_store(settings.ingest, settings.paths)
    catalog = Catalog(settings.paths.catalog_path)
    # Registration order is the partitions' order: a batch of neighbours is one range.
    order = {p: i for i, p in enumerate(instance.get_dynamic_partitions(PAPERS))}
    wanted = sorted(set(paper_ids), key=lambda p: order.get(p, len(order)))
    failed = [
        FailedPaper(paper_id=p, file=catalog.source(p).path, reason="not a `papers` partition")
        for p in wanted
        if p not in order
    ]
    wanted = [p for p in wanted if p in order]
    # The embedder each paper had before this one: the latest embeddings of another.
    latest = [
        artifacts.latest_of_another_embedder(list(EMBEDDINGS.path), p, EmbeddingResult)
        for p in wanted
    ]
    previous = sorted({result.embedder_id for result in latest if result} - {embedder_id})
    before = {e: _table_now(store, e) for e in [embedder_id, *previous]}
    backfill_id = f"backfill-{uuid.uuid4().hex[:12]}"
    tags = {USAGE_SCOPE_TAG: backfill_id, BACKFILL_TAG: backfill_id}
    runs = _Runs(artifacts, defs, instance, catalog, tags, stop_requested)

    rebuilt: dict[dg.AssetKey, set[str]] = {}
    failed_ids = {failure.paper_id for failure in failed}
    batch_outcomes: list[BatchOutcome] = []
    # Every collection of a rebuilt paper reads it (with `--collection`, others may hold it too).
    held_by = catalog.collections_of(wanted).values()
    built_collections: dict[str, list[str]] = {
        c: [] for c in sorted({c for h in held_by for c in h})
    }
    collection_failure = None
    unfinished_collections: set[str] = set()
    # Once stopped, the phases left only record what they would have built.
    for phase in phases(defs):
        if phase.per == "collection":
            for collection in built_collections:
                if runs.stopping():
                    unfinished_collections.add(collection)
                    continue
                with exclusive_lock(build_lock(settings.paths, COLLECTIONS, collection)):
                    built, failure = runs.settle(collection_pipeline.name, phase.keys, collection)
                built_collections[collection].extend(k.to_user_string() for k in built)
                for key in built:
                    rebuilt.setdefault(key, set()).add(collection)
                if runs.stopped:
                    unfinished_collections.add(collection)
                if failure:
                    collection_failure = f"{collection}: {failure}"
                    break
            if collection_failure:
                break
            continue
        todo = [p for p in wanted if p not in failed_ids]
        batches = [todo[start : start + size] for start in range(0, len(todo), size)]
        for number, batch in enumerate(batches, 1):
            if runs.stopping():
                batch_outcomes.append(
                    BatchOutcome(
                        number=number,
                        batches=len(batches),
                        papers=batch,
                        seconds=0.0,
                        status="not_started",
                        unfinished=batch,
                    )
                )
                continue
            built_before = {key: set(partitions) for key, partitions in rebuilt.items()}
            with ExitStack() as locks:
                for paper_id in sorted(batch):
                    locks.enter_context(
                        exclusive_lock(build_lock(settings.paths, PAPERS, paper_id))
                    )
                outcome = _run_batch(runs, phase, batch, order, rebuilt, number, len(batches))
            for failed_paper in outcome.failed:
                source = catalog.source(failed_paper.paper_id or "")
                failed_paper.file, failed_paper.row = source.path, source.row_number
                failed_ids.add(failed_paper.paper_id)
                failed.append(failed_paper)
            embedded = [
                artifacts.read(list(EMBEDDINGS.path), p, EmbeddingResult)
                for p in batch
                if p in rebuilt.get(EMBEDDINGS, set()) - built_before.get(EMBEDDINGS, set())
            ]
            outcome.chunks = sum(result.chunks for result in embedded)
            outcome.embedded = sum(result.embedded for result in embedded)
            batch_outcomes.append(outcome)
            on_batch(outcome)

    ledger = UsageLedger(usage_path(settings.paths, backfill_id))
    paper_keys = {key for phase in phases(defs) if phase.per == "paper" for key in phase.keys}
    touched = {p for key in paper_keys for p in rebuilt.get(key, set())}
    unfinished = {p for outcome in batch_outcomes for p in outcome.unfinished}
    report = BackfillReport(
        backfill_id=backfill_id,
        embedder=embedder_id,
        table=_table_state(before[embedder_id], _table_now(store, embedder_id)),
        previous_tables=[_table_state(before[e], _table_now(store, e)) for e in previous],
        papers=len(wanted),
        papers_up_to_date=sum(
            p not in touched and p not in failed_ids and p not in unfinished for p in wanted
        ),
        batch_size=size,
        batches=batch_outcomes,
        rebuilt={
            key.to_user_string(): len(rebuilt.get(key, set()) & set(wanted))
            for key in defs.resolve_asset_graph().toposorted_asset_keys
            if key in paper_keys
        },
        chunks=sum(outcome.chunks for outcome in batch_outcomes),
        embedded=sum(outcome.embedded for outcome in batch_outcomes),
        collections=built_collections,
        collection_failure=collection_failure,
        failed_papers=failed,
        llm_calls=ledger.scope_summary(),
        llm_calls_by_agent=ledger.scope_by_agent(),
        seconds=round(time.perf_counter() - started, 3),
        stopped=runs.stopped,
        unfinished_collections=sorted(unfinished_collections),
    )
    out = report_path(settings.paths, embedder_id)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, report.model_dump_json(indent=2))
    return report


def report_path(paths: HomePaths, embedder_id: str) -> Path:
    """The report of the latest backfill to an embedder."""
    return paths.outputs_root / "backfill" / f"{embedder_id}.json"


def report_gate(
    instance: dg.DagsterInstance, collections: Iterable[str], gate: EmbedderGate
) -> None:
    """Records the gate's scores and decision on each collection's `corpus_index`, so that the
    UI shows them beside the index they decide on: as an observation, passed or not, since the
    gate materializes nothing (the index a query uses changes only with the home's default)."""
    metadata = {
        "old_embedder": dg.MetadataValue.text(gate.old.embedder),
        "new_embedder": dg.MetadataValue.text(gate.new.embedder),
        "old_ndcg_at_10": dg.MetadataValue.float(gate.old.ndcg_at_10),
        "new_ndcg_at_10": dg.MetadataValue.float(gate.new.ndcg_at_10),
        "old_recall_at_10": dg.MetadataValue.float(gate.old.recall_at_10),
        "new_recall_at_10": dg.MetadataValue.float(gate.new.recall_at_10),
        "drop": dg.MetadataValue.float(gate.drop),
        "margin": dg.MetadataValue.float(gate.margin),
        "passed": dg.MetadataValue.bool(gate.passed),
        "switched": dg.MetadataValue.bool(gate.switched),
        "decision": dg.MetadataValue.text(gate.decision),
        "qrels": dg.MetadataValue.path(gate.qrels),
        "queries": dg.MetadataValue.int(gate.queries),
        "papers": dg.MetadataValue.int(gate.papers),
    }
    for collection in collections:
        instance.report_runless_asset_event(
            dg.AssetObservation(
                asset_key=CORPUS_INDEX,
                partition=collection,
                description="embedder gate of `litpipe backfill --gate`",
                metadata=metadata,
            )
        )


def batch_line(outcome: BatchOutcome) -> str:
    """`[batch 2/5] 25 papers in 41.3 s: paper_chunks 25, chunk_embeddings 25 (612 chunks,
    612 embedded), question_evidence 25, paper_answers 7`."""
    done = []
    for asset, papers_rebuilt in outcome.rebuilt.items():
        detail = (
            f" ({counted(outcome.chunks, 'chunk')}, {outcome.embedded} embedded)"
            if asset == EMBEDDINGS.to_user_string()
            else ""
        )
        done.append(f"{asset} {papers_rebuilt}{detail}")
    failed = "".join(f"; FAILED {f.paper_id}: {f.reason}" for f in outcome.failed)
    if outcome.unfinished:
        nothing = "nothing rebuilt"
        left = counted(len(outcome.unfinished), "paper")
        stopped = f"; interrupted (stop requested): {left} not finished"
    else:
        nothing, stopped = "up to date", ""
    return (
        f"[batch {outcome.number}/{outcome.batches}] {counted(len(outcome.papers), 'paper')} in "
        f"{outcome.seconds:.1f} s: {', '.join(done) or nothing}{failed}{stopped}"
    )


def summary_lines(report: BackfillReport, ingest: IngestSettings, paths: HomePaths) -> list[str]:
    """What `litpipe backfill` prints when it is done."""
    rebuilt = ", ".join(f"{asset} {n}" for asset, n in report.rebuilt.items() if n)
    usage = report.llm_calls
    by_agent = "; ".join(
        f"{agent} {calls.made} made, {calls.cached} cached"
        for agent, calls in report.llm_calls_by_agent.items()
    )
    table = report.table
    lines = [
        f"{counted(report.papers, 'paper')} in "
        f"{counted(len(report.batches), 'batch', 'batches')} of at most {report.batch_size} "
        f"({report.seconds:.1f} s): rebuilt {rebuilt or 'nothing'}; "
        f"{report.papers_up_to_date} up to date, {len(report.failed_papers)} failed",
        f"{table.table}: {report.embedded} of the rebuilt papers' "
        f"{counted(report.chunks, 'chunk')} embedded now; {counted(table.rows_after, 'row')} "
        f"(before: {table.rows_before})",
    ]
    for old in report.previous_tables:
        state = (
            "untouched"
            if old.untouched
            else f"CHANGED (rows {old.rows_before} -> {old.rows_after}, version "
            f"{old.version_before} -> {old.version_after})"
        )
        lines.append(f"{old.table}: {state}, {counted(old.rows_after, 'row')}, still queryable")
    for collection, assets in report.collections.items():
        lines.append(f"collection {collection}: rebuilt {', '.join(assets) or 'nothing'}")
    if report.collection_failure:
        lines.append(f"  collection assets FAILED: {report.collection_failure}")
    lines.append(f"model calls: {calls_line(usage)}" + (f" ({by_agent})" if by_agent else ""))
    lines.extend(f"  failed: {f.paper_id}: {f.reason}" for f in report.failed_papers)
    lines.append(f"Report: {report_path(paths, report.embedder)}")
    if report.previous_tables:
        name = embedder_setting(ingest)
        lines.append(
            f'To make {report.embedder} the default, set `embedder = "{name}"` under [ingest] in '
            f"litpipe.toml or export LITPIPE_INGEST__EMBEDDER={name}; until then `litpipe run`, "
            "`litpipe ask` and the UI keep the embedder configured there, and its table."
        )
    if report.stopped:
        lines.append(_stop_line(report))
    return lines


def embedder_setting(ingest: IngestSettings) -> str:
    """`ingest.embedder` as a setting that names the same model from any folder: a local
    model's folder resolved, a hub name as it is."""
    folder = Path(ingest.embedder).expanduser()
    return str(folder.resolve()) if folder.is_dir() else ingest.embedder


def _stop_line(report: BackfillReport) -> str:
    by_status: dict[str, list[BatchOutcome]] = {}
    for outcome in report.batches:
        by_status.setdefault(outcome.status, []).append(outcome)
    done = (
        f"{counted(len(by_status.get('finished', [])), 'batch', 'batches')} finished, "
        f"{counted(len(report.failed_papers), 'paper')} failed"
    )
    left = [
        f"batch {outcome.number}/{outcome.batches} interrupted "
        f"({counted(len(outcome.unfinished), 'paper')} not finished)"
        for outcome in by_status.get("interrupted", [])
    ]
    left.append(f"{counted(len(by_status.get('not_started', [])), 'batch', 'batches')} not started")
    if report.unfinished_collections:
        left.append(
            f"collections not brought up to date: {', '.join(report.unfinished_collections)}"
        )
    return stop_line("backfill", done, "; ".join(left))


def _run_batch(
    runs: _Runs,
    phase: Phase,
    batch: list[str],
    order: dict[str, int],
    rebuilt: dict[dg.AssetKey, set[str]],
    number: int,
    batches: int,
) -> BatchOutcome:
    """Brings a batch of papers up to date, its build locks held, as `litpipe run` does: one
    run per level of neighbouring papers alike (`runner.build_batch`)."""
    started = time.perf_counter()
    build = build_batch(
        runs.artifacts,
        runs.defs,
        runs.instance,
        runs.catalog,
        phase.keys,
        dict.fromkeys(batch, Registration.UNCHANGED),
        order,
        runs.tags,
        runs.stopping,
        runs.fallbacks_before,
    )
    for key, partitions in build.built.items():
        rebuilt.setdefault(key, set()).update(partitions)
    unfinished = [p for p in batch if build.outcomes[p].status == "interrupted"]
    runs.stopped = runs.stopped or bool(unfinished)
    counts = {
        key.to_user_string(): len(build.built.get(key, set()) & set(batch)) for key in phase.keys
    }
    return BatchOutcome(
        number=number,
        batches=batches,
        papers=batch,
        seconds=round(time.perf_counter() - started, 3),
        rebuilt={key: n for key, n in counts.items() if n},
        batched_runs=build.ranged_runs,
        failed=[o.failure for o in build.outcomes.values() if o.failure is not None],
        status="interrupted" if unfinished else "finished",
        unfinished=unfinished,
    )


@dataclass
class _Runs:
    """In-process runs into the instance, all tagged as this backfill's (one usage scope). Once
    a stop is requested, or a signal interrupted a run's step, `stopped` holds and no further
    run starts."""

    artifacts: ArtifactStore
    defs: dg.Definitions
    instance: dg.DagsterInstance
    catalog: Catalog
    tags: dict[str, str]
    stop_requested: Callable[[], bool]
    stopped: bool = field(default=False, init=False)
    # Items a model left to the offline engine before the backfill are asked again, once.
    fallbacks_before: int = field(init=False)

    def __post_init__(self) -> None:
        self.fallbacks_before = latest_storage_id(self.instance)

    def stopping(self) -> bool:
        """Whether to start nothing more."""
        self.stopped = self.stopped or self.stop_requested()
        return self.stopped

    def settle(
        self, job: str, keys: list[dg.AssetKey], partition: str
    ) -> tuple[list[dg.AssetKey], str | None]:
        """Materializes the partition's stale `keys`, and those whose input from another
        partition changed, one level at a time (`staleness.build_next`). Returns what was
        materialized, and why it failed, if it did; once `stopped` (before or during one of its
        runs), the partition is left not up to date."""
        read = partitions_read(self.defs, self.catalog, partition)
        built: list[dg.AssetKey] = []
        for _ in keys:
            todo = build_next(
                self.instance,
                self.defs,
                keys,
                partition,
                read,
                fallbacks_before=self.fallbacks_before,
            )
            if not todo or self.stopping():
                break
            result = execute(
                self.defs,
                self.instance,
                job,
                partition_key=partition,
                asset_selection=todo,
                tags=self.tags,
            )
            self.stopped = interrupted(result)
            if self.stopped:
                return built, None
            if not result.success:
                return built, run_failure(result)
            built.extend(todo)
        return built, None


def _table_now(store: ChunkStore, embedder_id: str) -> tuple[str, int, int | None]:
    table = store.open_table(embedder_id)
    name = store.table_name(embedder_id)
    return (name, 0, None) if table is None else (name, table.count_rows(), table.version)


def _table_state(
    before: tuple[str, int, int | None], after: tuple[str, int, int | None]
) -> TableState:
    return TableState(
        table=before[0],
        rows_before=before[1],
        rows_after=after[1],
        version_before=before[2],
        version_after=after[2],
    )
