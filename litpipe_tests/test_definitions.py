"""The Dagster graph: it loads, materializes a paper, and recomputes only what an edit affects."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest
from pydantic import BaseModel

from litpipe.artifacts import ArtifactStore
from litpipe.catalog import Catalog
from litpipe.defs.definitions import build_definitions
from litpipe.defs.partitions import (
    collection_questions,
    collections,
    nightly,
    papers,
    query_requests,
    related_work_requests,
)
from litpipe.defs.resources import PER_EMBEDDER_ASSETS, artifact_store
from litpipe.defs.staleness import State, partition_states
from litpipe.evaluation.registry import EVALUATIONS
from litpipe.ingest.sources import pdf_source
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.store import ChunkStore
from litpipe.runtime.runner import open_instance, paper_asset_keys
from litpipe.schemas import EmbeddingResult, PaperChunks
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.tiny_model import build_tiny_model

SMALL_PDF = PDFS_BY_SIZE[0]


@pytest.fixture
def settings(tmp_path: Path, tiny_model: Path) -> Settings:
    return Settings(home=tmp_path / "home", corpus_roots=[], ingest={"embedder": str(tiny_model)})


def test_definitions_load_with_every_asset_versioned(settings: Settings) -> None:
    defs = build_definitions(**settings_groups(settings))
    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    assert {key.to_user_string() for key in graph.get_all_asset_keys()} == {
        "paper_source",
        "paper_document",
        "paper_chunks",
        "chunk_embeddings",
        "paper_abstract",
        "paper_questions",
        "question_evidence",
        "paper_answers",
        "paper_references",
        "corpus_index",
        "citation_graph",
        "cross_paper_questions",
        "relationship_analysis",
        "comparison_table",
        "synthesis",
        "plain_summary",
        "collection_outputs",
        "related_work",
        "query_summary",
        "collection_answer",
        "nightly_digest",
        "vector_maintenance",
        *(f"eval_{name.replace('-', '_')}" for name in EVALUATIONS),
    }
    per_collection = {
        "corpus_index",
        "citation_graph",
        "cross_paper_questions",
        "relationship_analysis",
        "comparison_table",
        "synthesis",
        "plain_summary",
        "collection_outputs",
    }
    per_request = {
        "related_work": related_work_requests,
        "query_summary": query_requests,
        "collection_answer": collection_questions,
        "nightly_digest": nightly,
    }
    for key in graph.get_all_asset_keys():
        assert graph.get(key).code_version, f"{key} has no code_version"
        name = key.to_user_string()
        expected = per_request.get(name, collections if name in per_collection else papers)
        if graph.get(key).group_name == "evaluation" or name == "vector_maintenance":
            expected = None  # a run per evaluation, its dataset in the run's config; one store
        assert graph.get(key).partitions_def == expected
    # What is kept per embedder: the chunks and all that is built from them, nothing else.
    chunks = dg.AssetKey("paper_chunks")
    built_from_chunks = {chunks, *graph.get(chunks).child_keys}
    for key in graph.toposorted_asset_keys:
        if graph.get(key).parent_keys & built_from_chunks:
            built_from_chunks.add(key)
    assert {key.to_user_string() for key in built_from_chunks} == PER_EMBEDDER_ASSETS


def test_materializing_a_paper_partition_fills_artifacts_and_lancedb(settings: Settings) -> None:
    instance = open_instance(settings.llm, settings.paths)
    source = pdf_source(SMALL_PDF)
    Catalog(settings.paths.catalog_path).register(source, "bio")
    instance.add_dynamic_partitions(papers.name, [source.paper_id])

    result = (
        build_definitions(**settings_groups(settings))
        .resolve_job_def("paper_pipeline")
        .execute_in_process(partition_key=source.paper_id, instance=instance)
    )

    assert result.success
    artifacts = artifact_store(settings.ingest, settings.paths)
    chunks = artifacts.read(["paper_chunks"], source.paper_id, PaperChunks)
    embedding = artifacts.read(["chunk_embeddings"], source.paper_id, EmbeddingResult)
    assert len(chunks.chunks) > 20
    assert embedding.embedded == len(chunks.chunks)
    store = ChunkStore(settings.paths.lancedb_dir)
    assert store.count_rows(embedding.embedder_id) == len(chunks.chunks)
    materialization = instance.get_latest_materialization_event(dg.AssetKey("paper_document"))
    assert materialization.asset_materialization.tags["dagster/data_version"]
    assert materialization.asset_materialization.partition == source.paper_id


class Written(BaseModel):
    by: str


def test_an_embedder_reads_its_own_output_else_the_newest_copy(tmp_path: Path) -> None:
    """Its own once written; before that the output Dagster's records describe, the newest:
    the one file of a home from an older litpipe, or another embedder's (an asset a backfill
    left fresh because the new embedder found the same inputs)."""
    a, b = (ArtifactStore(tmp_path, e, PER_EMBEDDER_ASSETS) for e in ("model-a", "model-b"))
    asset = ["paper_answers"]

    def write(store: ArtifactStore, by: str, at: int) -> None:
        os.utime(store.write(asset, "p1", Written(by=by)), (at, at))

    def read(store: ArtifactStore) -> str:
        return store.read(asset, "p1", Written).by

    assert not a.exists(asset, "p1")
    write(ArtifactStore(tmp_path), "older litpipe", 1)
    assert read(a) == read(b) == "older litpipe"
    write(b, "model-b", 2)
    assert read(a) == "model-b"
    write(a, "model-a", 3)
    write(b, "model-b", 4)
    assert (read(a), read(b)) == ("model-a", "model-b")
    assert b.latest_of_another_embedder(asset, "p1", Written) == Written(by="model-a")


@pytest.mark.slow
def test_each_embedder_reads_its_own_chunks_when_another_chunks_the_same_paper(
    settings: Settings, tmp_path: Path
) -> None:
    """A backfill to another embedder beside a run: the other model's tokenizer cuts the paper
    into more chunks, and the run's later steps must still read its own (issue 16)."""
    short = build_tiny_model(tmp_path / "short", max_seq_length=64)
    shorter = settings.model_copy(
        update={"ingest": settings.ingest.model_copy(update={"embedder": str(short)})}
    )
    instance = open_instance(settings.llm, settings.paths)
    source = pdf_source(SMALL_PDF)
    Catalog(settings.paths.catalog_path).register(source, "bio")
    instance.add_dynamic_partitions(papers.name, [source.paper_id])
    ingest = [dg.AssetKey(name) for name in ("paper_source", "paper_document", "paper_chunks")]

    def materialize(run_settings: Settings, keys: list[dg.AssetKey]) -> None:
        job = build_definitions(**settings_groups(run_settings)).resolve_job_def("paper_pipeline")
        result = job.execute_in_process(
            partition_key=source.paper_id, instance=instance, asset_selection=keys
        )
        assert result.success

    def chunk_ids(run_settings: Settings) -> list[str]:
        chunks = artifact_store(run_settings.ingest, run_settings.paths).read(
            ["paper_chunks"], source.paper_id, PaperChunks
        )
        return [chunk.chunk_id for chunk in chunks.chunks]

    materialize(settings, ingest)
    own = chunk_ids(settings)
    materialize(shorter, ingest)  # the other embedder, between the run's steps
    assert len(chunk_ids(shorter)) > len(own)
    materialize(settings, [dg.AssetKey("chunk_embeddings")])  # the run goes on

    assert chunk_ids(settings) == own
    embedder_id = Embedder(settings.ingest.embedder).embedder_id
    table = ChunkStore(settings.paths.lancedb_dir).paper_chunk_ids(embedder_id, source.paper_id)
    assert sorted(table) == sorted(own)


def test_an_embedder_retrained_in_place_changes_the_code_version_of_all_it_decides(
    tiny_model: Path, tmp_path: Path
) -> None:
    """The same folder name with other model files: every asset whose output the embedder
    decides (its tokens, vectors, retrieval or support scores) must be recomputed, not only
    the chunks and their vectors."""
    folder = shutil.copytree(tiny_model, tmp_path / "model")
    settings = Settings(home=tmp_path / "home", corpus_roots=[], ingest={"embedder": str(folder)})

    def code_versions() -> dict[str, str | None]:
        graph = build_definitions(**settings_groups(settings)).resolve_asset_graph()
        return {
            key.to_user_string(): graph.get(key).code_version for key in graph.get_all_asset_keys()
        }

    before = code_versions()
    (folder / "README.md").write_text("Retrained in place.\n")
    after = code_versions()
    assert {name for name in before if before[name] != after[name]} == {
        "paper_chunks",
        "chunk_embeddings",
        "corpus_index",
        "question_evidence",
        "query_summary",
        "collection_answer",
        "related_work",
        # Relationship candidates are nearest neighbours by the embedder.
        "relationship_analysis",
        "comparison_table",
        "nightly_digest",
    }


def test_changing_chunk_overlap_makes_only_chunks_and_embeddings_stale(
    settings: Settings, tmp_path: Path
) -> None:
    instance = open_instance(settings.llm, settings.paths)
    folder = tmp_path / "two"
    folder.mkdir()
    shutil.copy(SMALL_PDF, folder)
    source = pdf_source(folder / SMALL_PDF.name)
    Catalog(settings.paths.catalog_path).register(source, "bio")
    instance.add_dynamic_partitions(papers.name, [source.paper_id, "never-built"])
    defs = build_definitions(**settings_groups(settings))
    defs.resolve_job_def("paper_pipeline").execute_in_process(
        partition_key=source.paper_id, instance=instance
    )
    ids = [source.paper_id, "never-built"]
    keys = paper_asset_keys(defs)
    states = partition_states(instance, defs, keys, ids)
    assert {states[key][source.paper_id] for key in keys} == {State.FRESH}
    assert {states[key]["never-built"] for key in keys} == {State.MISSING}

    overlap = settings.ingest.model_copy(update={"chunk_overlap_tokens": 8})
    edited = build_definitions(**settings_groups(settings.model_copy(update={"ingest": overlap})))
    states = partition_states(instance, edited, keys, ids)
    by_name = {key.to_user_string(): states[key][source.paper_id] for key in keys}
    assert by_name == {
        "paper_source": State.FRESH,
        "paper_document": State.FRESH,
        "paper_chunks": State.CODE_CHANGED,
        "chunk_embeddings": State.UPSTREAM_CHANGED,
        "paper_abstract": State.FRESH,
        "paper_questions": State.FRESH,
        "question_evidence": State.UPSTREAM_CHANGED,
        "paper_answers": State.UPSTREAM_CHANGED,
        # Read from the document, not the chunks.
        "paper_references": State.FRESH,
    }
    # Dagster's own resolver (what the UI shows) agrees on the edited asset and its parent.
    resolver = CachingStaleStatusResolver(
        instance, edited.resolve_asset_graph(), LoadingContextForTest(instance)
    )
    key = dg.AssetKey("paper_chunks")
    assert resolver.get_status(key, source.paper_id) == StaleStatus.STALE
    assert resolver.get_status(dg.AssetKey("paper_document"), source.paper_id) == (
        StaleStatus.FRESH
    )
