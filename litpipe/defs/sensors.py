"""The new-paper sensor: files dropped under a corpus root become papers' and collections'
partitions, which Dagster's automation then builds (`litpipe.defs.automation`)."""

import json
from collections.abc import Iterable
from pathlib import Path

import dagster as dg

from litpipe.catalog import Catalog, Registration
from litpipe.defs.jobs import RUN_TAGS, paper_pipeline
from litpipe.defs.partitions import PAPERS, collections, papers
from litpipe.defs.resources import CatalogResource
from litpipe.defs.staleness import built_contents
from litpipe.ingest.sources import corpus_files, discover_file
from litpipe.schemas import PaperSource
from litpipe.settings import HomePaths, OperationsSettings


def file_fingerprint(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def rebuilt_sources(
    instance: dg.DagsterInstance, registered: list[tuple[PaperSource, Registration]]
) -> list[PaperSource]:
    """The registered papers whose `paper_source` must be built again, which no partition or
    upstream stage of Dagster's tells its automation: a paper already among the partitions
    whose source changed (its file, or what a reference manager says of it), or whose
    `paper_source` was built from other content than the catalog holds now. A new paper is its
    automation's (a partition never built), and so is an unchanged one.

    The catalog is written during the tick, but Dagster stores the tick's run requests and
    cursor only after it returns: a tick that fails in between leaves a changed paper
    registered and not requested, which its retry finds unchanged, and built from the old
    content.
    """
    known = set(instance.get_dynamic_partitions(PAPERS))
    latest = {
        source.paper_id: (source, registration)
        for source, registration in registered
        if source.paper_id in known
    }
    built = built_contents(instance, list(latest))
    return [
        source
        for paper_id, (source, registration) in latest.items()
        if registration is Registration.CHANGED
        or built.get(paper_id) not in (None, source.content_sha256[:16])
    ]


_SAME_CONTENT = (Registration.UNCHANGED, Registration.JOINED)


def register_sources(
    catalog: Catalog, sources: Iterable[PaperSource], collection: str
) -> list[tuple[PaperSource, Registration]]:
    """Each source registered into `collection`, with the source the catalog holds for its
    paper now: the one given, or, where the registration changed nothing of the paper, the
    catalog's own (the same file known better from a reference manager keeps its content,
    which is what `unbuilt` compares with what was built)."""
    registered: list[tuple[PaperSource, Registration]] = []
    for source in sources:
        registration = catalog.register(source, collection)
        if registration in _SAME_CONTENT:
            source = catalog.source(source.paper_id)
        registered.append((source, registration))
    return registered


def registered_result(
    context: dg.SensorEvaluationContext,
    registered: list[tuple[PaperSource, Registration]],
    registered_collections: set[str],
    cursor: str,
) -> dg.SensorResult:
    """A tick's result: the partitions of the papers it registered and of their collections
    added (Dagster's automation builds the new ones: `litpipe.defs.automation`), and a run of
    every per-paper stage (the sensor's `paper_pipeline` selection) for each paper whose
    content changed (`rebuilt_sources`): a paper's stages follow an upstream stage only when
    the automation requests both.

    The run key names the paper's content: a tick evaluated again after its result was
    stored asks for nothing twice."""
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=f"{source.paper_id}@{source.content_sha256[:16]}",
                partition_key=source.paper_id,
                tags=RUN_TAGS,
            )
            for source in rebuilt_sources(context.instance, registered)
        ],
        dynamic_partitions_requests=[
            papers.build_add_request(sorted({source.paper_id for source, _ in registered})),
            collections.build_add_request(sorted(registered_collections)),
        ],
        cursor=cursor,
    )


def build_new_papers_sensor(
    paths: HomePaths, operations: OperationsSettings
) -> dg.SensorDefinition:
    @dg.sensor(
        asset_selection=paper_pipeline.selection,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Registers new or changed PDFs and tables under the corpus roots "
        f"({', '.join(map(str, paths.watched_roots))}) as papers and collections, which "
        "the automation condition sensor then builds; a new paper's registration is its "
        "arrival, which puts it in that day's nightly digest.",
    )
    def new_papers_sensor(
        context: dg.SensorEvaluationContext, catalog: CatalogResource
    ) -> dg.SensorResult:
        # The cursor maps each handled file to its size and mtime, so a tick reads only files
        # that are new or changed, and at most a batch of them: a sensor must finish in 60 s.
        handled: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
        pending = [
            (path, collection, fingerprint)
            for path, collection in corpus_files(paths.watched_roots)
            if handled.get(str(path)) != (fingerprint := file_fingerprint(path))
        ]
        batch = pending[: operations.sensor_batch_size]
        papers_catalog = catalog.catalog()
        registered: list[tuple[PaperSource, Registration]] = []
        batch_collections: set[str] = set()
        for path, collection, _ in batch:
            discovery = discover_file(path, collection)
            for failure in discovery.failed:
                context.log.warning(f"{failure.file} row {failure.row}: {failure.reason}")
            registered += register_sources(papers_catalog, discovery.sources, collection)
            if discovery.sources:
                batch_collections.add(collection)
        handled.update((str(path), fingerprint) for path, _, fingerprint in batch)
        if len(pending) > len(batch):
            context.log.info(f"{len(pending) - len(batch)} more files wait for the next tick")
        return registered_result(context, registered, batch_collections, json.dumps(handled))

    return new_papers_sensor
