"""The new-paper sensor: files dropped under a corpus root become partitions and runs."""

import json
from pathlib import Path

import dagster as dg

from litpipe.catalog import Registration
from litpipe.defs.jobs import paper_pipeline
from litpipe.defs.partitions import collections, papers
from litpipe.defs.resources import CatalogResource
from litpipe.ingest.sources import corpus_files, discover_file
from litpipe.settings import Settings


def file_fingerprint(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


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
        batch = pending[: settings.sensor_batch_size]
        papers_catalog = catalog.catalog()
        run_requests: list[dg.RunRequest] = []
        new_collections: set[str] = set()
        for path, collection, fingerprint in batch:
            discovery = discover_file(path, collection)
            for failure in discovery.failed:
                context.log.warning(f"{failure.file} row {failure.row}: {failure.reason}")
            for source in discovery.sources:
                if papers_catalog.register(source) is Registration.UNCHANGED:
                    continue
                new_collections.add(source.collection)
                run_requests.append(
                    dg.RunRequest(
                        partition_key=source.paper_id,
                        run_key=f"{source.paper_id}:{source.content_sha256[:16]}",
                    )
                )
            handled[str(path)] = fingerprint
        if len(pending) > len(batch):
            context.log.info(f"{len(pending) - len(batch)} more files wait for the next tick")
        return dg.SensorResult(
            run_requests=run_requests,
            dynamic_partitions_requests=[
                papers.build_add_request(sorted({r.partition_key for r in run_requests})),
                collections.build_add_request(sorted(new_collections)),
            ],
            cursor=json.dumps(handled),
        )

    return new_papers_sensor
