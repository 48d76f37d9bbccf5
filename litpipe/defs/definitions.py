"""Assembles litpipe's Dagster definitions from the settings (`dagster dev -w workspace.yaml`)."""

from __future__ import annotations

import gc
import os

import dagster as dg

from litpipe.defs.assets.chunk_embeddings import build_chunk_embeddings_assets
from litpipe.defs.assets.citation_graph import build_citation_graph_assets
from litpipe.defs.assets.collection_answer import build_collection_answer_assets
from litpipe.defs.assets.comparison_table import build_comparison_table_assets
from litpipe.defs.assets.corpus_index import build_corpus_index_assets
from litpipe.defs.assets.cross_paper_questions import build_cross_paper_questions_assets
from litpipe.defs.assets.evaluation import build_evaluation_assets, evaluation_job
from litpipe.defs.assets.ingest import build_ingest_assets
from litpipe.defs.assets.nightly_digest import build_nightly_digest_assets
from litpipe.defs.assets.paper_abstract import build_paper_abstract_assets
from litpipe.defs.assets.paper_answers import build_paper_answers_assets
from litpipe.defs.assets.paper_questions import build_paper_questions_assets
from litpipe.defs.assets.paper_references import build_paper_references_assets
from litpipe.defs.assets.query_summary import build_query_summary_assets
from litpipe.defs.assets.question_evidence import build_question_evidence_assets
from litpipe.defs.assets.related_work import build_related_work_assets
from litpipe.defs.assets.relationship_analysis import build_relationship_analysis_assets
from litpipe.defs.assets.synthesis import build_synthesis_assets
from litpipe.defs.assets.vector_maintenance import build_vector_maintenance_assets
from litpipe.defs.automation import automation_sensor, with_automation
from litpipe.defs.io_manager import PydanticJSONIOManager
from litpipe.defs.jobs import (
    collection_answer_job,
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
from litpipe.defs.standing_questions import build_standing_questions_sensor
from litpipe.defs.versions import embedder_version
from litpipe.defs.zotero_sync import build_zotero_sync_sensor
from litpipe.settings import (
    ComparisonSettings,
    GradingSettings,
    HomePaths,
    IngestSettings,
    LLMSettings,
    OperationsSettings,
    QuerySummarySettings,
    RelatedWorkSettings,
    RetrievalSettings,
    SynthesisSettings,
    ZoteroSettings,
    code_location_settings,
    credentials_environment,
)
from litpipe.settings.groups import SettingsGroups, settings_groups


def build_definitions(
    *,
    paths: HomePaths,
    ingest: IngestSettings,
    llm: LLMSettings,
    retrieval: RetrievalSettings,
    synthesis: SynthesisSettings,
    grading: GradingSettings,
    related_work: RelatedWorkSettings,
    comparison: ComparisonSettings,
    query_summary: QuerySummarySettings,
    operations: OperationsSettings,
    zotero: ZoteroSettings,
    executor: dg.ExecutorDefinition | None = None,
) -> dg.Definitions:
    """The graph for these settings groups (`build_definitions(**settings_groups(settings))`):
    code versions depend on them (embedder, chunk sizes, prompts, models). Each asset factory,
    sensor and resource takes the groups it reads.

    `executor` runs the steps of the runs Dagster launches (UI, sensor, schedule, backfill);
    by default each step in its own process, `operations.max_concurrent_steps` at once. A deployment
    passes another, e.g. dagster-k8s' `k8s_job_executor` (a pod per step). `litpipe run`
    executes in-process whatever is set here.
    """
    return dg.Definitions(
        executor=executor
        or dg.multiprocess_executor.configured({"max_concurrent": operations.max_concurrent_steps}),
        # Each per-paper and per-collection stage and the digest with its automation condition.
        assets=dg.map_asset_specs(
            with_automation,
            [
                *build_ingest_assets(ingest, operations, paths),
                *build_chunk_embeddings_assets(ingest, operations, paths),
                *build_paper_abstract_assets(llm, operations),
                *build_paper_questions_assets(llm, synthesis, operations),
                *build_question_evidence_assets(retrieval, ingest, llm, operations, paths),
                *build_paper_answers_assets(llm, synthesis, operations),
                *build_paper_references_assets(operations),
                *build_citation_graph_assets(),
                *build_corpus_index_assets(ingest, paths),
                *build_cross_paper_questions_assets(llm, retrieval, synthesis, ingest),
                *build_relationship_analysis_assets(llm, retrieval, synthesis, ingest, paths),
                *build_comparison_table_assets(comparison, llm, retrieval, grading, ingest, paths),
                *build_synthesis_assets(llm, synthesis, grading, ingest, paths),
                *build_related_work_assets(related_work, ingest, retrieval, grading, llm, paths),
                *build_query_summary_assets(query_summary, retrieval, grading, ingest, llm, paths),
                *build_collection_answer_assets(synthesis, retrieval, grading, ingest, llm, paths),
                *build_nightly_digest_assets(llm, synthesis, ingest, paths),
                # An evaluation runs stages of the pipeline under every group.
                *build_evaluation_assets(
                    SettingsGroups(
                        paths=paths,
                        ingest=ingest,
                        llm=llm,
                        retrieval=retrieval,
                        synthesis=synthesis,
                        grading=grading,
                        related_work=related_work,
                        query_summary=query_summary,
                        operations=operations,
                        zotero=zotero,
                    )
                ),
                *build_vector_maintenance_assets(),
            ],
        ),
        jobs=[
            paper_pipeline,
            collection_pipeline,
            related_work_job,
            query_summary_job,
            collection_answer_job,
            nightly_digest_job,
            evaluation_job,
            vector_maintenance_job,
        ],
        schedules=[vector_maintenance_schedule],
        sensors=[
            automation_sensor(),
            build_new_papers_sensor(paths, operations),
            build_standing_questions_sensor(paths),
            # Only where a Zotero library is named (zotero.data_dir).
            *([build_zotero_sync_sensor(zotero, operations)] if zotero.data_dir else []),
        ],
        resources={
            "io_manager": PydanticJSONIOManager(
                base_dir=str(paths.artifacts_dir), embedder_id=embedder_version(ingest, paths)
            ),
            "artifacts": ArtifactsResource.of(ingest, paths),
            "catalog": CatalogResource(path=str(paths.catalog_path)),
            "embedder": EmbedderResource.of(ingest, paths),
            "chunker": ChunkingResource(
                max_tokens=ingest.chunk_tokens, overlap_tokens=ingest.chunk_overlap_tokens
            ),
            "lancedb": LanceDBResource(uri=str(paths.lancedb_dir)),
            "retrieval": RetrievalResource.of(retrieval, paths),
            "llm": LLMResource.of(llm, paths),
        },
    )


def served_groups() -> SettingsGroups:
    """The groups of the settings this code location serves: those the command serving it
    resolved (`litpipe ui` names their file in LITPIPE_SETTINGS_FILE, which the runs it launches
    inherit), else this process's own (`dagster dev -w workspace.yaml`, a Kubernetes code
    location: its environment and litpipe.toml).

    A credential the resource config names by its variable (`LLMResource`: the api base with
    its password, `dg.EnvVar("LITPIPE_LLM__API_BASE")`) is put in this process's environment
    where it is not set, from where these settings found it (litpipe.toml): the steps here, and
    the runs this code server launches, which inherit its environment, read it there."""
    served = code_location_settings()
    for variable, value in credentials_environment(served).items():
        os.environ.setdefault(variable, value)
    return settings_groups(served)


defs = build_definitions(**served_groups())

# Every Dagster process of litpipe's (code server, run worker, step worker) loads this module
# once and keeps what its imports made for life. Frozen, those objects are left out of the
# cyclic garbage collector's passes: the passes during a run, and the full one at exit, which
# took about 0.7 s of the nightly digest's 7 s run worker (benchmarks/nightly_changes.py).
gc.freeze()
