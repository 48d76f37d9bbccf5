"""`question_evidence` and `corpus_index` in the Dagster graph, as `litpipe run` builds them (a
tiny local embedder): every question gets its evidence with provenance, a retrieval setting
stales only the evidence, scope "all" reads the collection's index, and a failing reranker keeps
the fused order instead of failing the paper."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from litpipe.defs.definitions import build_definitions
from litpipe.defs.resources import artifact_store
from litpipe.defs.staleness import State, partition_states
from litpipe.ingest.sources import discover
from litpipe.runtime.runner import open_instance, paper_asset_keys, phases, register, run_papers
from litpipe.schemas import CorpusIndex, PaperChunks, PaperEvidence, PaperQuestions
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.stub_llm import StubLLM
from litpipe_tests.test_cli import folder_with

EVIDENCE = dg.AssetKey("question_evidence")
CORPUS_INDEX = dg.AssetKey("corpus_index")


def build(settings: Settings, folder: Path) -> tuple[dg.DagsterInstance, list[str]]:
    instance = open_instance(settings.llm, settings.paths)
    registrations = register(settings.paths, instance, discover(folder, "bio"))
    outcome = run_papers(settings, instance, registrations)
    assert outcome.collection_failure is None
    assert all(paper.status != "failed" for paper in outcome.outcomes)
    return instance, list(registrations)


def test_every_question_gets_its_own_papers_evidence_with_provenance(
    tmp_path: Path, tiny_model: Path
) -> None:
    settings = Settings(
        home=tmp_path / "home", corpus_roots=[], ingest={"embedder": str(tiny_model)}
    )
    folder = folder_with(tmp_path / "papers", PDFS_BY_SIZE[:2])
    _, paper_ids = build(settings, folder)

    artifacts = artifact_store(settings.ingest, settings.paths)
    for paper_id in paper_ids:
        questions = artifacts.read(["paper_questions"], paper_id, PaperQuestions)
        evidence = artifacts.read(["question_evidence"], paper_id, PaperEvidence)
        chunks = {
            c.chunk_id: c for c in artifacts.read(["paper_chunks"], paper_id, PaperChunks).chunks
        }
        assert (evidence.scope, evidence.reranker) == ("own", "none")
        assert [item.question for item in evidence.questions] == questions.questions
        for item in evidence.questions:
            assert len(item.chunks) == 3
            assert len({chunk.chunk_id for chunk in item.chunks}) == 3
            for chunk in item.chunks:
                stored = chunks[chunk.chunk_id]
                assert chunk.paper_id == paper_id
                assert (chunk.section, chunk.page_start, chunk.char_start, chunk.text) == (
                    stored.section,
                    stored.page_start,
                    stored.char_start,
                    stored.text,
                )
                assert chunk.fused_rank >= 1
                assert chunk.bm25_rank is not None or chunk.dense_rank is not None

    index = artifacts.read(["corpus_index"], "bio", CorpusIndex)
    all_chunks = sum(
        len(artifacts.read(["paper_chunks"], p, PaperChunks).chunks) for p in paper_ids
    )
    assert (index.papers, index.chunks, index.bm25_built) == (2, all_chunks, True)
    assert len(list(settings.paths.bm25_dir.rglob(f"{index.bm25_fingerprint}*"))) == 1


def test_a_retrieval_setting_stales_only_the_evidence(tmp_path: Path, tiny_model: Path) -> None:
    settings = Settings(
        home=tmp_path / "home", corpus_roots=[], ingest={"embedder": str(tiny_model)}
    )
    folder = folder_with(tmp_path / "papers", PDFS_BY_SIZE[:1])
    instance, paper_ids = build(settings, folder)

    kept = settings.retrieval.model_copy(update={"evidence_per_question": 2})
    fewer = settings.model_copy(update={"retrieval": kept})
    defs = build_definitions(**settings_groups(fewer))
    states = partition_states(instance, defs, paper_asset_keys(defs), paper_ids)
    stale = {key.to_user_string() for key, by in states.items() if by[paper_ids[0]] != State.FRESH}
    assert stale == {"question_evidence", "paper_answers"}

    index_runs = len(instance.fetch_materializations(CORPUS_INDEX, 10).records)
    rerun = run_papers(fewer, instance, register(fewer.paths, instance, discover(folder, "bio")))
    (outcome,) = rerun.outcomes
    assert outcome.status == "materialized" and outcome.embedded == 0
    assert outcome.evidence == 2 * outcome.questions
    # No chunk changed: the collection's index, which reads only the chunks, is not run again;
    # run from the UI, it loads its saved BM25 index instead of building it.
    assert len(instance.fetch_materializations(CORPUS_INDEX, 10).records) == index_runs
    assert (
        defs.resolve_job_def("collection_pipeline")
        .execute_in_process(partition_key="bio", asset_selection=[CORPUS_INDEX], instance=instance)
        .success
    )
    (latest,) = instance.fetch_materializations(CORPUS_INDEX, 1).records
    assert latest.asset_materialization.metadata["bm25_built"].value is False


def test_scope_all_searches_the_collection_after_its_index(
    tmp_path: Path, tiny_model: Path
) -> None:
    settings = Settings(
        home=tmp_path / "home",
        corpus_roots=[],
        ingest={"embedder": str(tiny_model)},
        retrieval={"evidence_scope": "all"},
    )
    defs = build_definitions(**settings_groups(settings))
    plan = [(phase.per, [key.to_user_string() for key in phase.keys]) for phase in phases(defs)]
    # The evidence, and what reads it, waits for the collection's index.
    assert [per for per, _ in plan] == ["paper", "collection", "paper", "collection"]
    assert "paper_questions" in plan[0][1] and "corpus_index" in plan[1][1]
    assert plan[2][1] == ["question_evidence", "paper_answers"]
    assert "relationship_analysis" in plan[3][1]
    assert CORPUS_INDEX in defs.resolve_asset_graph().get(EVIDENCE).parent_keys

    folder = folder_with(tmp_path / "papers", PDFS_BY_SIZE[:2])
    instance, paper_ids = build(settings, folder)
    artifacts = artifact_store(settings.ingest, settings.paths)
    found = set()
    for paper_id in paper_ids:
        evidence = artifacts.read(["question_evidence"], paper_id, PaperEvidence)
        assert evidence.scope == "all"
        found |= {chunk.paper_id for item in evidence.questions for chunk in item.chunks}
    assert found <= set(paper_ids)
    index_at = instance.fetch_materializations(CORPUS_INDEX, 1).records[0].timestamp
    for paper_id in paper_ids:
        evidence_at = (
            instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=EVIDENCE, asset_partitions=[paper_id]), 1
            )
            .records[0]
            .timestamp
        )
        assert evidence_at > index_at


def test_a_failing_llm_reranker_keeps_the_fused_order(
    tmp_path: Path, tiny_model: Path, stub_llm: StubLLM, caplog: pytest.LogCaptureFixture
) -> None:
    folder = folder_with(tmp_path / "papers", PDFS_BY_SIZE[:1])
    plain = Settings(home=tmp_path / "plain", corpus_roots=[], ingest={"embedder": str(tiny_model)})
    _, (paper_id,) = build(plain, folder)
    fused = artifact_store(plain.ingest, plain.paths).read(
        ["question_evidence"], paper_id, PaperEvidence
    )

    # Only the reranker has a model, and its server refuses the key: a permanent failure.
    stub_llm.fail_next("unauthorized", 1000)
    reranking = Settings(
        home=tmp_path / "reranking",
        corpus_roots=[],
        ingest={"embedder": str(tiny_model)},
        retrieval={"reranker": "relevance"},
        llm={"api_base": stub_llm.url, "agents": {"relevance": {"model": "openai/stub-relevance"}}},
    )
    build(reranking, folder)
    evidence = artifact_store(reranking.ingest, reranking.paths).read(
        ["question_evidence"], paper_id, PaperEvidence
    )
    assert stub_llm.request_count >= len(evidence.questions)
    assert evidence.reranker.startswith("relevance")
    assert not any(item.reranked for item in evidence.questions)
    assert [[c.chunk_id for c in item.chunks] for item in evidence.questions] == [
        [c.chunk_id for c in item.chunks] for item in fused.questions
    ]
    assert "reranker relevance failed, keeping the fused order" in caplog.text
