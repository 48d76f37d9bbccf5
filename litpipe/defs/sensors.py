"""The new-paper sensor: files dropped under a corpus root become partitions and runs."""

import json
from collections.abc import Iterable
from pathlib import Path

import dagster as dg

from litpipe.catalog import Catalog, Registration
from litpipe.defs.jobs import paper_pipeline
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
    never requested, which its retry finds unchanged. Asking again costs nothing when the first
    request was stored after all: Dagster starts one run per run key.
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


def registered_result(
    instance: dg.DagsterInstance,
    registered: list[tuple[PaperSource, Registration]],
    registered_collections: set[str],
    cursor: str,
) -> dg.SensorResult:
    """A tick's result: a `paper_pipeline` run for each paper `unbuilt` finds among those it
    registered, keyed by its content (a paper found twice, by two sensors or two ticks, runs
    once), its partition and those of the collections it registered papers into added."""
    to_build = unbuilt(instance, registered)
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                partition_key=source.paper_id,
                run_key=f"{source.paper_id}:{source.content_sha256[:16]}",
            )
            for source in to_build
        ],
        dynamic_partitions_requests=[
            papers.build_add_request(sorted({source.paper_id for source in to_build})),
            collections.build_add_request(sorted(registered_collections)),
        ],
        cursor=cursor,
    )


def build_new_papers_sensor(settings: Settings) -> dg.SensorDefinition:
    @dg.sensor(
        job=paper_pipeline,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Registers new or changed PDFs and tables under the corpus roots "
        f"({', '.join(map(str, settings.watched_roots))}) and requests their ingestion; a new "
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
            for path, collection in corpus_files(settings.watched_roots)
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
            context.instance, registered, batch_collections, json.dumps(handled)
        )

    return new_papers_sensor
