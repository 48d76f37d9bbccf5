"""The new-paper sensor: files dropped under a corpus root become partitions and runs."""

import json
from collections.abc import Iterable
from pathlib import Path

import dagster as dg

# Private to Dagster (1.13.27): `RunRequest.for_asset_graph_subset`, the way a sensor asks for a
# backfill, takes an asset-graph subset, which no public API builds or exports.
from dagster._core.definitions.assets.graph.asset_graph_subset import AssetGraphSubset
from dagster._core.definitions.events import AssetKeyPartitionKey

from litpipe.catalog import Catalog, Registration
from litpipe.defs.jobs import RUN_TAGS, paper_pipeline
from litpipe.defs.partitions import collections, papers
from litpipe.defs.resources import CatalogResource
from litpipe.defs.staleness import built_contents
from litpipe.ingest.sources import corpus_files, discover_file
from litpipe.schemas import PaperSource
from litpipe.settings import Settings


def file_fingerprint(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def unbuilt(
    instance: dg.DagsterInstance, registered: list[tuple[PaperSource, Registration]]
) -> list[PaperSource]:
    """The papers a tick requests: the new and changed ones, and the unchanged ones (joined
    to one more collection, or not) whose content `paper_source` never built.

    The catalog is written during the tick, but Dagster stores the tick's run requests and
    cursor only after it returns: a tick that fails in between leaves papers registered and
    never requested, which its retry finds unchanged.
    """
    latest = {source.paper_id: (source, registration) for source, registration in registered}
    unchanged = [paper_id for paper_id, (_, how) in latest.items() if how in _SAME_CONTENT]
    built = built_contents(instance, unchanged) if unchanged else {}
    return [
        source
        for paper_id, (source, registration) in latest.items()
        if registration not in _SAME_CONTENT or built.get(paper_id) != source.content_sha256[:16]
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


# The tag naming the sensor on the backfills it requests (Dagster tags a sensor's runs, not them).
REQUESTED_BY_TAG = "litpipe/requested_by"


def registered_result(
    context: dg.SensorEvaluationContext,
    registered: list[tuple[PaperSource, Registration]],
    registered_collections: set[str],
    cursor: str,
    sensor: str,
) -> dg.SensorResult:
    """A tick's result: one backfill of `paper_pipeline`'s assets over every paper `unbuilt`
    finds among those it registered (`paper_backfill`), their partitions and those of the
    collections it registered papers into added."""
    to_build = sorted({source.paper_id for source in unbuilt(context.instance, registered)})
    return dg.SensorResult(
        run_requests=[paper_backfill(context, to_build, sensor)] if to_build else [],
        dynamic_partitions_requests=[
            papers.build_add_request(to_build),
            collections.build_add_request(sorted(registered_collections)),
        ],
        cursor=cursor,
    )


def paper_backfill(
    context: dg.SensorEvaluationContext, paper_ids: list[str], sensor: str
) -> dg.RunRequest:
    """A backfill of every per-paper stage (`paper_pipeline`'s assets) over `paper_ids`, tagged
    with the `sensor` that requests it.

    Dagster's backfill daemon runs it as the assets' `BackfillPolicy` says: runs of up to
    `operations.batch_size` neighbouring partitions, each building a stage once for all of
    them (`paper_batches`), as `litpipe run` and a backfill from the UI do; not one run per
    paper, each importing the graph, loading the embedder and committing to LanceDB. It waits
    for a run that run retries will launch again (a killed worker), and the run queue bounds
    how many of its runs go at once.

    `RunRequest.for_asset_graph_subset` is how a sensor asks Dagster 1.13 for a backfill (its
    declarative automation asks the same way); a backfill has no run key, so a tick evaluated
    again after its result was stored would ask again: Dagster stores a tick's requests with
    its cursor, and `unbuilt` leaves out what was built."""
    if context.repository_def is None:
        raise TypeError("the sensor is evaluated without its definitions")
    graph = context.repository_def.asset_graph
    wanted = {
        AssetKeyPartitionKey(key, paper_id)
        for key in paper_pipeline.selection.resolve(graph)
        for paper_id in paper_ids
    }
    return dg.RunRequest.for_asset_graph_subset(
        AssetGraphSubset.from_asset_partition_set(wanted, graph),
        tags={**RUN_TAGS, REQUESTED_BY_TAG: sensor},
    )


def build_new_papers_sensor(settings: Settings) -> dg.SensorDefinition:
    @dg.sensor(
        asset_selection=paper_pipeline.selection,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Registers new or changed PDFs and tables under the corpus roots "
        f"({', '.join(map(str, settings.paths.watched_roots))}) and requests their ingestion; a new "
        "paper's registration is its arrival, which puts it in that day's nightly digest.",
    )
    def new_papers_sensor(
        context: dg.SensorEvaluationContext, catalog: CatalogResource
    ) -> dg.SensorResult:
        # The cursor maps each handled file to its size and mtime, so a tick reads only files
        # that are new or changed, and at most a batch of them: a sensor must finish in 60 s.
        handled: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
        pending = [
            (path, collection, fingerprint)
            for path, collection in corpus_files(settings.paths.watched_roots)
            if handled.get(str(path)) != (fingerprint := file_fingerprint(path))
        ]
        batch = pending[: settings.operations.sensor_batch_size]
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
        return registered_result(
            context, registered, batch_collections, json.dumps(handled), "new_papers_sensor"
        )

    return new_papers_sensor
