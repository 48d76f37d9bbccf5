"""Assembles litpipe's Dagster definitions from the settings (`dagster dev -w workspace.yaml`)."""

from __future__ import annotations

import gc

import dagster as dg

from litpipe.defs.assets.chunk_embeddings import build_chunk_embeddings_assets
from litpipe.defs.assets.corpus_index import build_corpus_index_assets
from litpipe.defs.assets.cross_paper_questions import build_cross_paper_questions_assets
from litpipe.defs.assets.evaluation import build_evaluation_assets, evaluation_job
from litpipe.defs.assets.ingest import build_ingest_assets
from litpipe.defs.assets.nightly_digest import build_nightly_digest_assets
from litpipe.defs.assets.paper_abstract import build_paper_abstract_assets
from litpipe.defs.assets.paper_answers import build_paper_answers_assets
from litpipe.defs.assets.paper_questions import build_paper_questions_assets
from litpipe.defs.assets.query_summary import build_query_summary_assets
from litpipe.defs.assets.question_evidence import build_question_evidence_assets
from litpipe.defs.assets.related_work import build_related_work_assets
from litpipe.defs.assets.relationship_analysis import build_relationship_analysis_assets
from litpipe.defs.assets.synthesis import build_synthesis_assets
from litpipe.defs.assets.vector_maintenance import build_vector_maintenance_assets
from litpipe.defs.automation import automation_sensor, with_automation
from litpipe.defs.io_manager import PydanticJSONIOManager
from litpipe.defs.jobs import (
    collection_pipeline,
    nightly_digest_job,
    paper_pipeline,
    query_summary_job,
    related_work_job,
    vector_maintenance_job,
)
from litpipe.defs.resources import (
    ArtifactsResource,
    CatalogResource,
    ChunkingResource,
    EmbedderResource,
    LanceDBResource,
    LLMResource,
    RetrievalResource,
)
from litpipe.defs.schedules import vector_maintenance_schedule
from litpipe.defs.sensors import build_new_papers_sensor
from litpipe.defs.versions import embedder_version
from litpipe.defs.zotero_sync import build_zotero_sync_sensor
from litpipe.settings import Settings, code_location_settings


def build_definitions(
    settings: Settings, executor: dg.ExecutorDefinition | None = None
) -> dg.Definitions:
    """The graph for these settings: code versions depend on them (embedder, chunk sizes,
    prompts, models).

    `executor` runs the steps of the runs Dagster launches (UI, sensor, schedule, backfill);
    by default each step in its own process, `operations.max_concurrent_steps` at once. A deployment
    passes another, e.g. dagster-k8s' `k8s_job_executor` (a pod per step). `litpipe run`
    executes in-process whatever is set here.
    """
    return dg.Definitions(
        executor=executor
        or dg.multiprocess_executor.configured(
            {"max_concurrent": settings.operations.max_concurrent_steps}
        ),
        # Each per-paper and per-collection stage and the digest with its automation condition.
        assets=dg.map_asset_specs(
            with_automation,
            [
                *build_ingest_assets(settings),
                *build_chunk_embeddings_assets(settings),
                *build_paper_abstract_assets(settings),
                *build_paper_questions_assets(settings),
                *build_question_evidence_assets(settings),
                *build_paper_answers_assets(settings),
                *build_corpus_index_assets(settings),
                *build_cross_paper_questions_assets(settings),
                *build_relationship_analysis_assets(settings),
                *build_synthesis_assets(settings),
                *build_related_work_assets(settings),
                *build_query_summary_assets(settings),
                *build_nightly_digest_assets(settings),
                *build_evaluation_assets(settings),
                *build_vector_maintenance_assets(settings),
            ],
        ),
        jobs=[
            paper_pipeline,
            collection_pipeline,
            related_work_job,
            query_summary_job,
            nightly_digest_job,
            evaluation_job,
            vector_maintenance_job,
        ],
        schedules=[vector_maintenance_schedule],
        sensors=[
            automation_sensor(),
            build_new_papers_sensor(settings),
            # Only where a Zotero library is named (zotero.data_dir).
            *([build_zotero_sync_sensor(settings)] if settings.zotero.data_dir else []),
        ],
        resources={
            "io_manager": PydanticJSONIOManager(
                base_dir=str(settings.paths.artifacts_dir), embedder_id=embedder_version(settings)
            ),
            "artifacts": ArtifactsResource.from_settings(settings),
            "catalog": CatalogResource(path=str(settings.paths.catalog_path)),
            "embedder": EmbedderResource.from_settings(settings),
            "chunker": ChunkingResource(
                max_tokens=settings.ingest.chunk_tokens,
                overlap_tokens=settings.ingest.chunk_overlap_tokens,
            ),
            "lancedb": LanceDBResource(uri=str(settings.paths.lancedb_dir)),
            "retrieval": RetrievalResource.from_settings(settings),
            "llm": LLMResource.of(settings.llm, settings.paths),
        },
    )


# The settings the command serving this code location resolved (`litpipe ui` names their file
# in LITPIPE_SETTINGS_FILE, which the runs it launches inherit), else this process's own.
defs = build_definitions(code_location_settings())

# Every Dagster process of litpipe's (code server, run worker, step worker) loads this module
# once and keeps what its imports made for life. Frozen, those objects are left out of the
# cyclic garbage collector's passes: the passes during a run, and the full one at exit, which
# took about 0.7 s of the nightly digest's 7 s run worker (benchmarks/nightly_changes.py).
gc.freeze()
