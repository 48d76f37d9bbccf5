"""Scale-out settings without a server: which steps are in the `llm` pool and retry, the executor's
bound, run tags, the dagster.yaml litpipe writes (or leaves alone), LanceDB at a URI.

test_postgres.py runs the same configuration against a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from litpipe.defs.definitions import build_definitions
from litpipe.defs.llm_steps import LLM_POOL
from litpipe.defs.resources import LanceDBResource
from litpipe.runtime.instance import MANAGED, write_instance_config
from litpipe.runtime.runner import open_instance
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.test_store import TEXTS, paper

# Every step whose agents can call a model, when every agent has one.
MODEL_STEPS = {
    "paper_abstract",
    "paper_questions",
    "paper_answers",
    "cross_paper_questions",
    "relationship_analysis",
    "comparison_table",
    "synthesis",
    "plain_summary",
    "related_work",
    "query_summary",
    "collection_answer",
    "nightly_digest",
    # The evaluations whose step writes with litpipe's agents.
    "eval_related_work",
    "eval_tldr",
    "eval_scholarqa_answer_modes",
    "eval_synthesis_pipelines",
}


def pools_and_retries(settings: Settings) -> dict[str, tuple[set[str], dg.RetryPolicy | None]]:
    graph = build_definitions(**settings_groups(settings)).resolve_asset_graph()
    found = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        if not node.is_executable:  # reported by a command (eval_litqa): no step of its own
            continue
        found[key.to_user_string()] = (set(node.pools), node.assets_def.op.retry_policy)
    return found


def test_steps_that_may_call_a_model_are_in_the_llm_pool_and_retry(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path,
        corpus_roots=[],
        llm={"model": "openai/any", "step_retries": 3, "step_retry_delay_s": 7},
    )
    found = pools_and_retries(settings)
    assert {name for name, (pools, _) in found.items() if pools} == MODEL_STEPS
    for name in MODEL_STEPS:
        pools, policy = found[name]
        assert pools == {LLM_POOL}
        assert policy is not None and (policy.max_retries, policy.delay) == (3, 7)
        assert policy.backoff == dg.Backoff.EXPONENTIAL
    assert found["paper_chunks"] == (set(), None)


def test_offline_steps_claim_no_slot_and_an_llm_reranker_puts_evidence_in_the_pool(
    tmp_path: Path,
) -> None:
    offline = pools_and_retries(Settings(home=tmp_path, corpus_roots=[]))
    assert all(pools == set() and policy is None for pools, policy in offline.values())

    # One agent with a model: only its steps are in the pool.
    questions_only = pools_and_retries(
        Settings(
            home=tmp_path,
            corpus_roots=[],
            llm={"agents": {"paper_questions": {"model": "openai/any"}}},
        )
    )
    # (and the pipelines' evaluation, which runs the whole chain, its questions included)
    assert {name for name, (pools, _) in questions_only.items() if pools} == {
        "paper_questions",
        "eval_synthesis_pipelines",
    }

    reranked = pools_and_retries(
        Settings(
            home=tmp_path,
            corpus_roots=[],
            llm={"model": "openai/any"},
            retrieval={"reranker": "debate"},
        )
    )
    assert reranked["question_evidence"][0] == {LLM_POOL}
    no_retries = pools_and_retries(
        Settings(home=tmp_path, corpus_roots=[], llm={"model": "openai/any", "step_retries": 0})
    )
    assert no_retries["paper_questions"] == ({LLM_POOL}, None)


def test_launched_runs_get_a_bounded_multiprocess_executor_and_no_rerun_of_failed_steps(
    tmp_path: Path,
) -> None:
    defs = build_definitions(
        **settings_groups(
            Settings(home=tmp_path, corpus_roots=[], operations={"max_concurrent_steps": 3})
        )
    )
    for name in (
        "paper_pipeline",
        "collection_pipeline",
        "related_work_job",
        "query_summary_job",
        "collection_answer_job",
    ):
        job = defs.resolve_job_def(name)
        assert job.executor_def.name == "multiprocess"
        resolved = job.executor_def.apply_config_mapping({})
        assert resolved.success and resolved.value["config"]["max_concurrent"] == 3
        assert job.run_tags["dagster/retry_on_asset_or_op_failure"] == "false"
    # A deployment brings its own (dagster-k8s' k8s_job_executor, say).
    other = build_definitions(
        **settings_groups(Settings(home=tmp_path, corpus_roots=[])), executor=dg.in_process_executor
    )
    assert other.resolve_job_def("paper_pipeline").executor_def is dg.in_process_executor


def test_litpipe_writes_its_dagster_yaml_with_the_pool_limit_and_keeps_yours(
    tmp_path: Path,
) -> None:
    settings = Settings(home=tmp_path / "home", corpus_roots=[], llm={"pool_limit": 3})
    instance = open_instance(settings.llm, settings.paths)
    config = settings.dagster_home / "dagster.yaml"
    assert config.read_text("utf-8").startswith(MANAGED)
    assert instance.event_log_storage.get_pool_config().default_pool_limit == 3

    # Another limit rewrites litpipe's file; so does the file litpipe wrote before pools.
    llm = settings.llm.model_copy(update={"pool_limit": 5})
    write_instance_config(llm, settings.paths)
    assert "default_limit: 5" in config.read_text("utf-8")
    config.write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    write_instance_config(settings.llm, settings.paths)
    assert "default_limit: 3" in config.read_text("utf-8")

    # A dagster.yaml of your own, in a folder named by LITPIPE_DAGSTER_HOME, is left as it is.
    own = tmp_path / "own"
    own.mkdir()
    (own / "dagster.yaml").write_text("telemetry:\n  enabled: true\n", encoding="utf-8")
    settings_own = Settings(home=tmp_path / "home", dagster_home=own, corpus_roots=[])
    assert open_instance(settings_own.llm, settings_own.paths).root_directory == str(own)
    assert (own / "dagster.yaml").read_text("utf-8") == "telemetry:\n  enabled: true\n"


def test_the_dagster_home_follows_the_home_unless_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Settings(home=tmp_path / "a").dagster_home == tmp_path / "a" / "dagster"
    monkeypatch.setenv("LITPIPE_DAGSTER_HOME", str(tmp_path / "instance"))
    assert Settings(home=tmp_path / "a").dagster_home == tmp_path / "instance"


def test_lancedb_at_a_uri_is_not_a_local_folder(tmp_path: Path) -> None:
    # memory:// stands in for s3://bucket/path: a URI LanceDB opens, not a path to create.
    settings = Settings(
        home=tmp_path, corpus_roots=[], operations={"lancedb_uri": "memory://litpipe-test"}
    )
    assert settings.paths.lancedb_dir == "memory://litpipe-test"
    store = LanceDBResource(uri=str(settings.paths.lancedb_dir)).store()
    embedder = FakeEmbedder()
    assert store.embed_paper(paper("p1", TEXTS), embedder).embedded == len(TEXTS)
    # The URI kept as given (a Path would fold `s3://` into `s3:/`), written as object storage
    # is: without a lock file beside the tables.
    assert store.db_dir == "memory://litpipe-test" and not store.lock_writes
    assert store.count_rows(embedder.embedder_id) == len(TEXTS)
    assert not (tmp_path / "memory:").exists() and not Path("memory:").exists()
