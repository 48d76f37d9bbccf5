"""Runs litpipe's graph in-process, into the same Dagster instance the UI serves.

`litpipe run` registers the papers of a source, adds their partitions and materializes what is
missing or stale, so every run shows in the UI: each paper's assets (one run per paper), then the
collection's (one run), then the per-paper assets that read a collection asset, if any. All runs
of one `litpipe run` share a usage scope: their model calls are summed, and budgeted, together.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

import dagster as dg
import sqlalchemy.exc
from pydantic import BaseModel, Field

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog, Registration
from litpipe.defs.check_results import latest_check_results
from litpipe.defs.definitions import build_definitions
from litpipe.defs.jobs import collection_pipeline, paper_pipeline
from litpipe.defs.llm_steps import USAGE_SCOPE_TAG
from litpipe.defs.partitions import COLLECTIONS, PAPERS, collections, papers
from litpipe.defs.resources import artifact_store, usage_path
from litpipe.defs.staleness import (
    build_next,
    build_next_each,
    built_contents,
    latest_storage_id,
)
from litpipe.files import exclusive_lock
from litpipe.ingest.sources import Discovery
from litpipe.instance.run_liveness import release_dead_runs
from litpipe.instance.sqlite_storage import enable_event_batches
from litpipe.llm.usage import UsageLedger
from litpipe.runtime.execution import execute, interrupted, papers_failed, run_failure
from litpipe.runtime.instance import instance_lock, write_instance_config
from litpipe.schemas import (
    CheckReport,
    EmbeddingResult,
    FailedPaper,
    LLMUsage,
    PaperAnswers,
    PaperChunks,
    PaperEvidence,
    PaperQuestions,
)
from litpipe.settings import HomePaths, LLMSettings, Settings
from litpipe.settings.groups import settings_groups


class PaperOutcome(BaseModel):
    paper_id: str
    status: Literal["materialized", "up_to_date", "failed", "interrupted"]
    seconds: float = 0.0
    chunks: int = 0
    embedded: int = 0
    questions: int = 0
    evidence: int = Field(default=0, description="Evidence chunks kept for its questions.")
    answers: int = Field(default=0, description="Answers written for its questions.")
    failure: FailedPaper | None = None


def open_instance(llm: LLMSettings, paths: HomePaths) -> dg.DagsterInstance:
    """The persistent instance in `dagster_home` (default `LITPIPE_HOME/dagster`), the one
    `litpipe ui` serves: SQLite with litpipe's dagster.yaml (the `llm` pool's limit), or
    whatever one of your own says (PostgreSQL: deploy/dagster.postgres.yaml)."""
    enable_event_batches()
    # Creating the instance creates (or migrates) its storages: one process at a time.
    with instance_lock(paths):
        write_instance_config(llm, paths)
        instance = dg.DagsterInstance.from_config(str(paths.dagster_home))
    # Before any run of ours waits for a pool slot that a killed run still holds.
    release_dead_runs(instance)
    return instance


# Each failed attempt means another writer added keys meanwhile; a few always suffice.
ADD_PARTITION_ATTEMPTS = 5

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


class Phase(BaseModel):
    """Assets `litpipe run` builds together: all per-paper or all per-collection."""

    per: Literal["paper", "collection"]
    keys: list[dg.AssetKey]

    model_config = {"arbitrary_types_allowed": True}


def phases(defs: dg.Definitions) -> list[Phase]:
    """The graph's partitioned assets in the order `litpipe run` builds them: alternately per
    paper and per collection, each phase reading only from earlier phases and itself (by
    default: the papers up to their answers, then the collection's index to its syntheses)."""
    graph = defs.resolve_asset_graph()
    # A phase's parity says what it is partitioned by.
    kinds: dict[dg.PartitionsDefinition | None, int] = {papers: 0, collections: 1}
    level: dict[dg.AssetKey, int] = {}
    for key in graph.toposorted_asset_keys:
        parity = kinds.get(graph.get(key).partitions_def)
        if parity is None:
            continue
        least = 0
        for parent in graph.get(key).parent_keys:
            if parent in level:
                least = max(least, level[parent] + (level[parent] % 2 != parity))
        level[key] = least + (least % 2 != parity)
    return [
        Phase(
            per="paper" if number % 2 == 0 else "collection",
            keys=[key for key in level if level[key] == number],
        )
        for number in sorted(set(level.values()))
    ]


class PapersRun(BaseModel):
    outcomes: list[PaperOutcome]
    llm_usage: LLMUsage
    llm_usage_by_agent: dict[str, LLMUsage]
    collection_failure: str | None = Field(
        default=None, description="Why the collection's assets failed, when they did."
    )
    checks: dict[str, list[CheckReport]] = Field(
        default_factory=dict, description="Each collection's synthesis checks, as last evaluated."
    )
    stopped: bool = Field(
        default=False, description="Whether it stopped on request before building everything."
    )
    not_built: list[str] = Field(
        default_factory=list,
        description="When stopped: the papers it did not reach (in the phase it stopped in).",
    )


def register(
    paths: HomePaths,
    instance: dg.DagsterInstance,
    discovery: Discovery,
    now: datetime | None = None,
    move: bool = False,
) -> dict[str, Registration]:
    """Records the papers in the catalog as members of the discovery's collection and adds
    their partitions to the instance; a new paper arrives `now` (default: the clock), which puts
    it in that day's nightly digest. A paper of other collections stays in them too, or with
    `move` leaves them."""
    catalog = Catalog(paths.catalog_path)
    registrations = {
        source.paper_id: catalog.register(source, discovery.collection, now, move)
        for source in discovery.sources
    }
    add_partitions(instance, COLLECTIONS, [discovery.collection])
    add_partitions(instance, PAPERS, list(registrations))
    return registrations


def add_partitions(instance: dg.DagsterInstance, name: str, keys: list[str]) -> None:
    """Adds the keys not yet among the dynamic partitions `name`, whoever else adds them at once:
    another process's concurrent insert of one of them fails ours (a unique constraint), so the
    partitions are read again and what is still missing added."""
    for attempt in range(ADD_PARTITION_ATTEMPTS):
        known = set(instance.get_dynamic_partitions(name))
        missing = [key for key in dict.fromkeys(keys) if key not in known]
        if not missing:
            return
        try:
            instance.add_dynamic_partitions(name, missing)
            return
        except sqlalchemy.exc.IntegrityError:
            if attempt == ADD_PARTITION_ATTEMPTS - 1:
                raise


def run_papers(
    settings: Settings,
    instance: dg.DagsterInstance,
    registrations: dict[str, Registration],
    on_progress: Callable[[int, int, PaperOutcome], None] = lambda done, total, outcome: None,
    stop_requested: Callable[[], bool] = lambda: False,
    left_collections: Iterable[str] = (),
    on_batch: Callable[[int, int, int], None] = lambda done, papers, total: None,
    rebuild_collections: Iterable[str] = (),
    stages: Collection[dg.AssetKey] | None = None,
) -> PapersRun:
    """Materializes what is new, changed or stale, phase by phase: the papers' assets in
    batches of `operations.batch_size` papers (`build_batch`; `on_batch` hears of each before it
    starts, `on_progress` of each paper once its batch is built), then their collections'
    assets one run per collection, and so on. The
    collections that papers were moved out of (`left_collections`) have their assets rebuilt
    too, when they still hold a paper; so are `rebuild_collections` (whose papers changed
    without a paper of theirs being built again: one retracted or restored). It starts no
    further run once `stop_requested` or once a signal interrupted a run's step (Dagster's
    in-process execution takes the signal there): that paper is `interrupted`, not failed, and
    the papers not reached are returned as `not_built`. With `stages`, only those assets are
    built (a phase holding none of them is left out): an evaluation asking a collection needs
    its papers' chunks and embeddings, not their syntheses."""
    defs = build_definitions(**settings_groups(settings))
    plan = [
        Phase(per=phase.per, keys=[key for key in phase.keys if stages is None or key in stages])
        for phase in phases(defs)
    ]
    plan = [phase for phase in plan if phase.keys]
    paper_ids = list(registrations)
    scope = f"cli-{uuid.uuid4().hex[:12]}"
    # Items a model left to the offline engine before this command are asked again, once.
    fallbacks_before = latest_storage_id(instance)
    total = len(paper_ids) * sum(phase.per == "paper" for phase in plan)
    progress = 0
    catalog = Catalog(settings.paths.catalog_path)
    artifacts = artifact_store(settings.ingest, settings.paths)
    # Every collection of a paper reads what is built of it: each is brought up to date (one
    # whose papers did not change is found fresh, and left as it is).
    papers_of: dict[str, list[str]] = {}
    for paper_id, held_by in catalog.collections_of(paper_ids).items():
        for collection in held_by:
            papers_of.setdefault(collection, []).append(paper_id)
    left = [
        collection
        for collection in dict.fromkeys([*left_collections, *rebuild_collections])
        if collection not in papers_of and catalog.papers(collection)
    ]
    shrank = {*left, *rebuild_collections}

    outcomes: dict[str, PaperOutcome] = {}
    collection_failure = None
    not_built: list[str] = []
    stopped = False
    for phase in plan:
        if stopped or stop_requested():
            stopped = True
            break
        if phase.per == "collection":
            failures = []
            for collection in [*papers_of, *left]:
                with exclusive_lock(build_lock(settings.paths, COLLECTIONS, collection)):
                    failure = _build_collection(
                        defs,
                        instance,
                        catalog,
                        collection,
                        phase.keys,
                        scope,
                        collection in shrank,
                        fallbacks_before,
                    )
                if failure:
                    failures.append(f"{collection}: {failure}")
            if failures:
                collection_failure = "; ".join(failures)
                break
            continue
        size = settings.operations.batch_size
        # Registration order is the partitions' order: a batch of neighbours is one range.
        order = {p: i for i, p in enumerate(instance.get_dynamic_partitions(PAPERS))}
        todo = sorted(
            (
                p
                for p in paper_ids
                if outcomes.get(p) is None or outcomes[p].status not in {"failed", "interrupted"}
            ),
            key=order.__getitem__,
        )
        for start in range(0, len(todo), size):
            batch = todo[start : start + size]
            if stopped or stop_requested():
                not_built, stopped = todo[start:], True
                break
            on_batch(progress, len(batch), total)
            with ExitStack() as locks:
                # In key order, so that two processes never wait on each other.
                for paper_id in sorted(batch):
                    locks.enter_context(
                        exclusive_lock(build_lock(settings.paths, PAPERS, paper_id))
                    )
                built = build_batch(
                    artifacts,
                    defs,
                    instance,
                    catalog,
                    phase.keys,
                    {p: registrations[p] for p in batch},
                    order,
                    {USAGE_SCOPE_TAG: scope},
                    fallbacks_before=fallbacks_before,
                ).outcomes
            for paper_id in batch:
                earlier, outcome = outcomes.get(paper_id), built[paper_id]
                outcomes[paper_id] = outcome if earlier is None else _merged(earlier, outcome)
                progress += 1
                on_progress(progress, total, outcomes[paper_id])
            stopped = any(outcome.status == "interrupted" for outcome in built.values())
    ledger = UsageLedger(usage_path(settings.paths, scope))
    return PapersRun(
        outcomes=list(outcomes.values()),
        llm_usage=ledger.scope_summary(),
        llm_usage_by_agent=ledger.scope_by_agent(),
        collection_failure=collection_failure,
        checks={
            collection: latest_check_results(instance, defs, collection)
            for collection in [*papers_of, *left]
        },
        stopped=stopped,
        not_built=not_built,
    )


def build_lock(paths: HomePaths, partitions: str, key: str) -> Path:
    """The lock a process holds while it decides what to build of one partition and builds it:
    two `litpipe run`s on overlapping sources (or a run and a backfill) then take turns on a
    shared paper or collection, and the second finds it built instead of building it again at
    the same time."""
    return paths.home / "locks" / partitions / f"{key}.lock"


def partitions_read(
    defs: dg.Definitions, catalog: Catalog, partition: str
) -> Callable[[dg.AssetKey], list[str]]:
    """Which partitions of an input from another partitions definition the assets of
    `partition` read: a collection's assets its papers, a paper's assets its collection."""
    graph = defs.resolve_asset_graph()

    def read(parent: dg.AssetKey) -> list[str]:
        kind = graph.get(parent).partitions_def
        if kind == papers:
            return catalog.papers(partition)
        if kind == collections:
            return catalog.collections_of([partition]).get(partition, [])
        return []

    return read


@dataclass
class BatchBuild:
    """What `build_batch` did: each paper's outcome, and the papers each asset was built for."""

    outcomes: dict[str, PaperOutcome]
    built: dict[dg.AssetKey, set[str]]
    ranged_runs: int = 0


def build_batch(
    artifacts: ArtifactStore,
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    catalog: Catalog,
    keys: list[dg.AssetKey],
    registrations: dict[str, Registration],
    order: dict[str, int],
    tags: dict[str, str],
    stop_requested: Callable[[], bool] = lambda: False,
    fallbacks_before: int | None = None,
) -> BatchBuild:
    """Builds a batch of papers' `keys` (one phase's), their build locks held: everything for
    a paper whose current content was never built (a new or changed
    source that no other process built meanwhile); otherwise what is missing or stale, one
    level at a time, so that a stage whose output came back the same leaves what reads it fresh
    (staleness counts everything downstream of a stale asset, in any phase). Neighbouring papers
    (in the partitions' `order`) with the same level to build are built by one run, tagged
    `tags`; a paper that fails in it is left out and the others are built again without it
    (`paper_batches`). Once `stop_requested`, or a signal interrupted a run, no further run
    starts: the papers not finished are `interrupted`. `fallbacks_before`: as
    `staleness.partition_states` takes it (default: when this batch starts). A built paper's
    figures are read from `artifacts`."""
    if fallbacks_before is None:
        fallbacks_before = latest_storage_id(instance)
    paper_keys = paper_asset_keys(defs)
    batch = list(registrations)
    reads = {paper_id: partitions_read(defs, catalog, paper_id) for paper_id in batch}

    def stale_now(papers: list[str]) -> dict[str, list[dg.AssetKey]]:
        return build_next_each(
            instance,
            defs,
            keys,
            papers,
            reads.__getitem__,
            within=paper_keys,
            fallbacks_before=fallbacks_before,
        )

    contents = built_contents(instance, batch)
    unbuilt = [p for p in batch if _content_unbuilt(catalog, p, registrations[p], contents)]
    levels = {**stale_now([p for p in batch if p not in unbuilt]), **dict.fromkeys(unbuilt, keys)}
    seconds = dict.fromkeys(batch, 0.0)
    embedded = dict.fromkeys(batch, 0)
    done: dict[str, PaperOutcome] = {}
    build = BatchBuild(outcomes=done, built={})

    def finished() -> BatchBuild:
        build.outcomes = {
            **done,
            **_finished(artifacts, [p for p in batch if p not in done], seconds, embedded),
        }
        return build

    def interrupt(papers: list[str]) -> BatchBuild:
        done.update(
            (p, PaperOutcome(paper_id=p, status="interrupted", seconds=round(seconds[p], 3)))
            for p in papers
        )
        return finished()

    # Each round builds one level of every paper (or leaves out the papers that failed in it).
    for _ in range(2 * len(keys) + 1):
        left = {p: levels[p] for p in batch if p not in done and levels[p]}
        rebuilt: list[str] = []
        for neighbours, level in _neighbours_alike(left, order):
            if stop_requested():
                return interrupt([p for p in batch if p not in done and levels[p]])
            result, took = _execute_batch(defs, instance, neighbours, level, tags)
            build.ranged_runs += len(neighbours) > 1
            for paper_id in neighbours:
                seconds[paper_id] += took / len(neighbours)
            for key, partitions in materialized(result).items():
                build.built.setdefault(key, set()).update(partitions)
            if interrupted(result):
                return interrupt(neighbours)
            if result.success:
                if EMBEDDINGS in level:
                    for paper_id in neighbours:
                        embedded[paper_id] += _embedded(artifacts, paper_id)
                rebuilt.extend(neighbours)
                continue
            failed = papers_failed(result)
            reasons = failed if failed and set(failed) <= set(neighbours) else None
            for paper_id in neighbours:
                if reasons is None or paper_id in reasons:
                    reason = run_failure(result) if reasons is None else reasons[paper_id]
                    done[paper_id] = _failed(catalog, paper_id, reason, seconds[paper_id])
            # The others of a run that failed by some of its papers are built again without them.
            rebuilt.extend(p for p in neighbours if p not in done)
        if not rebuilt:
            break
        levels.update(stale_now([p for p in rebuilt if p not in done]))
    return finished()


def materialized(result: dg.ExecuteInProcessResult) -> dict[dg.AssetKey, set[str]]:
    """The partitions each asset was materialized for by the run."""
    found: dict[dg.AssetKey, set[str]] = {}
    for event in result.get_asset_materialization_events():
        if event.asset_key is not None and event.partition is not None:
            found.setdefault(event.asset_key, set()).add(event.partition)
    return found


def _neighbours_alike(
    levels: dict[str, list[dg.AssetKey]], order: dict[str, int]
) -> list[tuple[list[str], list[dg.AssetKey]]]:
    """The papers to build as runs: papers next to each other in the partitions' order, with the
    same level to build, are one run (one range of partitions)."""
    runs: list[tuple[list[str], list[dg.AssetKey]]] = []
    for paper_id in sorted(levels, key=order.__getitem__):
        if (
            runs
            and runs[-1][1] == levels[paper_id]
            and order[paper_id] == order[runs[-1][0][-1]] + 1
        ):
            runs[-1][0].append(paper_id)
        else:
            runs.append(([paper_id], levels[paper_id]))
    return runs


def _execute_batch(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    paper_ids: list[str],
    assets: list[dg.AssetKey],
    tags: dict[str, str],
) -> tuple[dg.ExecuteInProcessResult, float]:
    """One run of `assets` over neighbouring papers, and how long it took."""
    started = time.perf_counter()
    result = execute(
        defs,
        instance,
        paper_pipeline.name,
        partition_key=paper_ids[0] if len(paper_ids) == 1 else None,
        partition_range=None if len(paper_ids) == 1 else (paper_ids[0], paper_ids[-1]),
        asset_selection=assets,
        tags=tags,
    )
    return result, time.perf_counter() - started


def _content_unbuilt(
    catalog: Catalog, paper_id: str, registration: Registration, built: dict[str, str]
) -> bool:
    """Whether the paper's content, as registered now, was never built (`built`: each paper's
    content as last built). A paper joined to another collection was built for the first."""
    if registration in (Registration.UNCHANGED, Registration.JOINED):
        return False
    return built.get(paper_id) != catalog.source(paper_id).content_sha256[:16]


def _failed(catalog: Catalog, paper_id: str, reason: str, seconds: float) -> PaperOutcome:
    source = catalog.source(paper_id)
    return PaperOutcome(
        paper_id=paper_id,
        status="failed",
        seconds=round(seconds, 3),
        failure=FailedPaper(
            paper_id=paper_id, file=source.path, row=source.row_number, reason=reason
        ),
    )


def _finished(
    artifacts: ArtifactStore,
    paper_ids: list[str],
    seconds: dict[str, float],
    embedded: dict[str, int],
) -> dict[str, PaperOutcome]:
    """The outcomes of papers that neither failed nor were interrupted."""
    return {
        paper_id: _outcome(
            artifacts,
            paper_id,
            "materialized" if seconds[paper_id] else "up_to_date",
            round(seconds[paper_id], 3),
            embedded[paper_id],
        )
        for paper_id in paper_ids
    }


def _embedded(artifacts: ArtifactStore, paper_id: str) -> int:
    return artifacts.read(list(EMBEDDINGS.path), paper_id, EmbeddingResult).embedded


def _merged(earlier: PaperOutcome, later: PaperOutcome) -> PaperOutcome:
    """A paper's outcome over two phases: the later figures, time and embeddings summed."""
    return later.model_copy(
        update={
            "seconds": round(earlier.seconds + later.seconds, 3),
            "embedded": earlier.embedded + later.embedded,
            "status": "up_to_date"
            if earlier.status == later.status == "up_to_date"
            else later.status,
        }
    )


def _build_collection(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    catalog: Catalog,
    collection: str,
    keys: list[dg.AssetKey],
    scope: str,
    shrank: bool,
    fallbacks_before: int,
) -> str | None:
    """Materializes the collection's assets of a phase, its build lock held, one level at a
    time: those missing or stale, and those whose papers changed since they read them (a paper
    added, or rebuilt with another data version; a run that built the collection after this
    process built its papers leaves nothing to do). All of them when a paper left it (`shrank`):
    its papers are fewer though none of them changed. Returns why they failed, or None."""
    read = partitions_read(defs, catalog, collection)
    left_out = set(keys) if shrank else set()
    for _ in keys:
        todo = build_next(
            instance,
            defs,
            keys,
            collection,
            read,
            pending=left_out,
            fallbacks_before=fallbacks_before,
        )
        if not todo:
            return None
        result = execute(
            defs,
            instance,
            collection_pipeline.name,
            partition_key=collection,
            asset_selection=todo,
            tags={USAGE_SCOPE_TAG: scope},
        )
        if not result.success:
            return run_failure(result)
        left_out -= set(todo)
    return None


def _outcome(
    artifacts: ArtifactStore,
    paper_id: str,
    status: Literal["materialized", "up_to_date"],
    seconds: float,
    embedded: int,
) -> PaperOutcome:
    """A built paper's figures, read from its artifacts."""
    return PaperOutcome(
        paper_id=paper_id,
        status=status,
        seconds=seconds,
        chunks=len(artifacts.read(["paper_chunks"], paper_id, PaperChunks).chunks),
        embedded=embedded,
        questions=len(artifacts.read(["paper_questions"], paper_id, PaperQuestions).questions)
        if artifacts.exists(["paper_questions"], paper_id)
        else 0,
        evidence=sum(
            len(item.chunks)
            for item in artifacts.read(["question_evidence"], paper_id, PaperEvidence).questions
        )
        if artifacts.exists(["question_evidence"], paper_id)
        else 0,
        answers=len(artifacts.read(["paper_answers"], paper_id, PaperAnswers).answers)
        if artifacts.exists(["paper_answers"], paper_id)
        else 0,
    )
