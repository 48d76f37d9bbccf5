"""Scale-out configuration on a real PostgreSQL: deploy/dagster.postgres.yaml as the instance,
several papers' runs at once through the stub model, the `llm` pool's limit holding across them,
and the step retries of transient model errors.

The server is a throwaway cluster on 127.0.0.1 (litpipe_tests/postgres_server.py). Without
PostgreSQL's binaries these tests skip, saying why; `.ci/run` installs them and sets
LITPIPE_REQUIRE_POSTGRES=1, under which they fail instead.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar, cast

import dagster as dg
import pytest
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext

from litpipe.defs.definitions import build_definitions
from litpipe.defs.llm_steps import LLM_POOL
from litpipe.ingest.sources import discover
from litpipe.instance.pool_wait import PatientConcurrencyContext
from litpipe.runtime.execution import QUIET_RUN_CONFIG
from litpipe.runtime.runner import open_instance, register
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.postgres_server import (
    PostgresServer,
    postgres_for_a_test,
    template_instance_folder,
)
from litpipe_tests.stub_agents import serve_every_agent
from litpipe_tests.stub_llm import StubLLM, stub_settings

# One worker builds this module's shared fixtures (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group("test_postgres")

COLLECTION = "bio"
# The runs below are threads of one process, and compute-log capture redirects the process's
# stdout and stderr (its file descriptors): concurrent runs would capture each other's output
# and restore the wrong descriptors. A deployment's run workers are processes of their own.
THREADED_RUNS_CONFIG = """
compute_logs:
  module: dagster._core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
"""
# A step's execution starts with STEP_START, or STEP_RESTARTED when it is a retry.
STEP_STARTS = {dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_RESTARTED}
STEP_ENDS = {
    dg.DagsterEventType.STEP_SUCCESS,
    dg.DagsterEventType.STEP_FAILURE,
    dg.DagsterEventType.STEP_UP_FOR_RETRY,
}
STEP_EVENTS = STEP_STARTS | STEP_ENDS
RUNS_TIMEOUT_S = 300

K = TypeVar("K")
T = TypeVar("T")


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with postgres_for_a_test() as server:
        yield server


@pytest.fixture
def dagster_home(tmp_path: Path, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding the deploy template as its dagster.yaml, on a database of its own,
    with the template's DAGSTER_PG_* variables set."""
    folder = tmp_path / "dagster"
    for name, value in template_instance_folder(postgres, folder).items():
        monkeypatch.setenv(name, value)
    return folder


def fit_for_threads(dagster_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The instance folder, and Dagster, made fit for runs in threads of one process."""
    with (dagster_home / "dagster.yaml").open("a", encoding="utf-8") as config:
        config.write(THREADED_RUNS_CONFIG)
    # Every run's start calls logging.config.dictConfig (for the `python_logs` handlers of the
    # dagster.yaml, which this one has none of): it holds the logging module's lock while it
    # takes each handler's, and another run logging at that moment takes them the other way
    # round, a deadlock. One process per run, as in a deployment, never meets it.
    monkeypatch.setattr(dg.DagsterInstance, "get_yaml_python_handlers", lambda self: [])

    # A run whose step waits for a pool slot polls again at once rather than at its next check
    # time (`min([0, ...])` is never above 0: the fix, dagster-io/dagster#20367, was closed
    # unmerged). A run worker process of its own only burns its core; here the waiting runs
    # would hold the one interpreter lock the working ones need. They sleep until their next
    # check instead: when they claim is unchanged.
    def until_next_check(self: InstanceConcurrencyContext) -> float:
        if not self.has_pending_claims():
            return 0.0
        now = time.time()
        return max(0.0, min((ready - now for ready in self._pending_timeouts.values()), default=0))

    monkeypatch.setattr(
        InstanceConcurrencyContext, "interval_to_next_pending_claim_check", until_next_check
    )
    return dagster_home


def all_at_once(function: Callable[[K], T], keys: list[K]) -> list[T]:
    """`function` of every key, each in a thread of its own, started together; a hang fails
    the test rather than the session (the threads are daemons)."""
    results: list[T | None] = [None] * len(keys)
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            results[index] = function(keys[index])
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(len(keys))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(RUNS_TIMEOUT_S)
    assert not any(thread.is_alive() for thread in threads), f"still going after {RUNS_TIMEOUT_S} s"
    if errors:
        raise errors[0]
    return cast("list[T]", results)


def test_the_template_puts_storage_queue_pool_and_retries_on_postgres(
    tmp_path: Path, dagster_home: Path
) -> None:
    template = (dagster_home / "dagster.yaml").read_text("utf-8")
    settings = Settings(home=tmp_path / "home", dagster_home=dagster_home, corpus_roots=[])

    instance = open_instance(settings.llm, settings.paths)

    assert (dagster_home / "dagster.yaml").read_text("utf-8") == template  # not litpipe's
    assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    assert type(instance.event_log_storage).__name__ == "PoolSafePostgresEventLogStorage"
    assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"
    assert instance.event_log_storage.supports_global_concurrency_limits
    assert instance.event_log_storage.get_pool_config().default_pool_limit == 4
    run_queue = instance.get_concurrency_config().run_queue_config
    assert run_queue is not None and run_queue.max_concurrent_runs == 16
    assert instance.run_retries_enabled and instance.run_retries_max_retries == 2
    assert not instance.run_retries_retry_on_asset_or_op_failure
    assert instance.run_monitoring_enabled


def test_workers_claiming_at_once_never_hold_more_slots_than_the_pool(
    tmp_path: Path, dagster_home: Path
) -> None:
    """Eight workers (each with its own instance, as run workers have) claim a 2-slot pool at
    the same moment, twelve times over. Stock dagster-postgres let up to six through."""
    settings = Settings(home=tmp_path / "home", dagster_home=dagster_home)
    instance = open_instance(settings.llm, settings.paths)
    assert type(instance.event_log_storage).__name__ == "PoolSafePostgresEventLogStorage"
    instance.event_log_storage.set_concurrency_slots(LLM_POOL, 2)
    workers = [open_instance(settings.llm, settings.paths) for _ in range(8)]
    most = 0
    for attempt in range(12):
        start = threading.Barrier(len(workers))

        def claim(
            worker: dg.DagsterInstance, start: threading.Barrier = start, attempt: int = attempt
        ) -> bool:
            run_id = f"run-{attempt}-{workers.index(worker)}"
            start.wait()
            return worker.event_log_storage.claim_concurrency_slot(
                LLM_POOL, run_id, "step"
            ).is_claimed

        claimed = sum(all_at_once(claim, workers))
        most = max(most, claimed)
        assert claimed <= 2, f"attempt {attempt}: {claimed} workers hold a slot of 2"
        for worker in range(len(workers)):
            instance.event_log_storage.free_concurrency_slots_for_run(f"run-{attempt}-{worker}")
    assert most == 2  # the slots were used, not merely refused


def step_intervals(
    instance: dg.DagsterInstance, run_ids: list[str], steps: set[str]
) -> list[tuple[float, float]]:
    """(start, end) of every execution of these steps in these runs, from the event log."""
    intervals = []
    for run_id in run_ids:
        started: dict[str, float] = {}
        for entry in instance.all_logs(run_id, of_type=STEP_EVENTS):
            step = entry.step_key
            if step not in steps:
                continue
            if entry.dagster_event_type in STEP_STARTS:
                started[step] = entry.timestamp
            elif entry.dagster_event_type in STEP_ENDS and step in started:
                intervals.append((started.pop(step), entry.timestamp))
    return intervals


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one time (one ending as another starts: not both)."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = most = 0
    for _, change in edges:  # at equal times, -1 sorts before +1
        running += change
        most = max(most, running)
    return most


def blocked_by_pool(instance: dg.DagsterInstance, run_ids: list[str]) -> int:
    """Times a step waited for a slot of the `llm` pool (Dagster logs an engine event)."""
    return sum(
        f"blocked by limit for pool {LLM_POOL}" in (entry.message or "")
        for run_id in run_ids
        for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)
    )


def test_concurrent_paper_runs_materialize_each_partition_once_within_the_llm_pool(
    tmp_path: Path, dagster_home: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool_limit = 2
    # Each model call takes 0.5 s, so a paper's model-calling steps (questions, answers) hold a
    # slot for a second or more: four papers at once need more than two slots.
    with StubLLM(latency_s=0.5) as stub:
        serve_every_agent(stub)
        settings = stub_settings(
            tmp_path / "home",
            stub,
            corpus_roots=[],
            dagster_home=fit_for_threads(dagster_home, monkeypatch),
            ingest={"embedder": str(tiny_model)},
        )
        folder = tmp_path / "papers"
        folder.mkdir()
        for pdf in PDFS_BY_SIZE[:4]:
            shutil.copy(pdf, folder)
        instance = open_instance(settings.llm, settings.paths)
        # The per-pool limit, as `dagster instance concurrency set llm 2` sets it: below the
        # template's default (4), so that four concurrent runs contend for it.
        instance.event_log_storage.set_concurrency_slots(LLM_POOL, pool_limit)
        paper_ids = sorted(register(settings.paths, instance, discover(folder, COLLECTION)))
        assert len(paper_ids) == 4
        defs = build_definitions(**settings_groups(settings))
        graph = defs.resolve_asset_graph()
        pooled = {
            key.to_user_string() for key in graph.get_all_asset_keys() if graph.get(key).pools
        }
        assert {"paper_questions", "paper_answers", "synthesis"} <= pooled
        paper_job = defs.resolve_job_def("paper_pipeline")

        def run_paper(paper_id: str) -> dg.ExecuteInProcessResult:
            # Its own instance, as a run worker has: the runs share only PostgreSQL.
            return paper_job.execute_in_process(
                partition_key=paper_id,
                instance=open_instance(settings.llm, settings.paths),
                raise_on_error=False,
                run_config=QUIET_RUN_CONFIG,
            )

        results = all_at_once(run_paper, paper_ids)
        collection = defs.resolve_job_def("collection_pipeline").execute_in_process(
            partition_key=COLLECTION,
            instance=instance,
            raise_on_error=False,
            run_config=QUIET_RUN_CONFIG,
        )

    assert all(result.success for result in results)
    assert collection.success
    run_ids = [result.run_id for result in [*results, collection]]
    assert {run.run_id for run in instance.get_runs()} == set(run_ids)  # in PostgreSQL

    # Every partition of every asset materialized once: none lost, none twice.
    for key in graph.get_all_asset_keys():
        partitions_def = graph.get(key).partitions_def
        partitions = {"papers": paper_ids, "collections": [COLLECTION]}.get(
            getattr(partitions_def, "name", ""), []
        )
        for partition in partitions:
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=5
            ).records
            assert len(records) == 1, f"{key.to_user_string()}[{partition}]: {len(records)}"
    materialized = {
        key.to_user_string()
        for key in graph.get_all_asset_keys()
        if instance.fetch_materializations(key, limit=1).records
    }
    assert {"paper_answers", "synthesis", "collection_outputs"} <= materialized

    # The pool held: never more than its limit of model-calling steps at once, across runs,
    # and it was needed (steps waited for a slot).
    at_once = most_at_once(step_intervals(instance, run_ids, pooled))
    blocked = blocked_by_pool(instance, run_ids)
    print(f"llm pool: limit {pool_limit}, at most {at_once} steps at once, {blocked} waits")
    assert at_once == pool_limit
    assert blocked > 0
    info = instance.event_log_storage.get_concurrency_info(LLM_POOL)
    assert info.slot_count == pool_limit and info.active_slot_count == 0  # all slots freed


def test_a_transient_model_error_retries_the_step_and_a_permanent_one_does_not(
    tmp_path: Path, dagster_home: Path, tiny_model: Path
) -> None:
    with StubLLM() as stub:
        serve_every_agent(stub)
        settings = stub_settings(
            tmp_path / "home",
            stub,
            corpus_roots=[],
            dagster_home=dagster_home,
            ingest={"embedder": str(tiny_model)},
            llm={"max_retries": 0, "step_retries": 1, "step_retry_delay_s": 0.1},
        )
        folder = tmp_path / "papers"
        folder.mkdir()
        for pdf in PDFS_BY_SIZE[:2]:
            shutil.copy(pdf, folder)
        instance = open_instance(settings.llm, settings.paths)
        first, second = sorted(register(settings.paths, instance, discover(folder, COLLECTION)))
        paper_job = build_definitions(**settings_groups(settings)).resolve_job_def("paper_pipeline")

        def run_paper(paper_id: str) -> dg.ExecuteInProcessResult:
            return paper_job.execute_in_process(
                partition_key=paper_id,
                instance=instance,
                raise_on_error=False,
                run_config=QUIET_RUN_CONFIG,
            )

        # The questions agent's first call: a 500 (transient), then the step's retry succeeds.
        stub.fail_next("server_error", marker='questions of style "broad"')
        retried = run_paper(first)
        # A refused key (permanent): no retry, the step fails with what to fix.
        stub.fail_next("unauthorized", marker='questions of style "broad"')
        refused = run_paper(second)

    def events(result: dg.ExecuteInProcessResult, step: str) -> list[dg.DagsterEventType]:
        return [
            entry.dagster_event_type
            for entry in instance.all_logs(result.run_id, of_type=STEP_EVENTS)
            if entry.step_key == step
        ]

    assert retried.success
    assert events(retried, "paper_questions") == [
        dg.DagsterEventType.STEP_START,
        dg.DagsterEventType.STEP_UP_FOR_RETRY,
        dg.DagsterEventType.STEP_RESTARTED,
        dg.DagsterEventType.STEP_SUCCESS,
    ]
    questions = dg.AssetKey("paper_questions")
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=questions, asset_partitions=[first]), limit=5
    ).records
    assert len(records) == 1

    assert not refused.success
    assert events(refused, "paper_questions") == [
        dg.DagsterEventType.STEP_START,
        dg.DagsterEventType.STEP_FAILURE,
    ]
    (failure,) = [event for event in refused.all_events if event.is_step_failure]
    assert "API key" in (failure.step_failure_data.user_failure_data.description or "")


def first_claim(instance: dg.DagsterInstance, pool: str, run_id: str) -> bool:
    """A step of a run claiming a slot of `pool`, as litpipe's executors do: the claim that
    creates a pool with the instance's `default_limit`, or brings its limit to it."""
    run = dg.DagsterRun(job_name="paper_pipeline", run_id=run_id)
    return PatientConcurrencyContext(instance, run).claim(pool, "paper_questions")


def set_default_limit(dagster_home: Path, limit: int) -> None:
    config = dagster_home / "dagster.yaml"
    text = config.read_text("utf-8")
    assert "default_limit: 4\n" in text
    config.write_text(text.replace("default_limit: 4\n", f"default_limit: {limit}\n"), "utf-8")


def test_a_default_limit_changed_after_the_pool_exists_applies_at_the_next_claim(
    tmp_path: Path, dagster_home: Path
) -> None:
    settings = Settings(home=tmp_path / "home", dagster_home=dagster_home)
    instance = open_instance(settings.llm, settings.paths)
    assert first_claim(instance, LLM_POOL, "run-1")
    before = instance.event_log_storage.get_concurrency_info(LLM_POOL)
    assert (before.limit, before.slot_count, before.using_default_limit) == (4, 4, True)
    instance.event_log_storage.free_concurrency_slots_for_run("run-1")

    # `concurrency: pools: default_limit:` lowered in dagster.yaml; the pool's row exists.
    set_default_limit(dagster_home, 2)
    reopened = open_instance(settings.llm, settings.paths)
    assert reopened.event_log_storage.get_pool_config().default_pool_limit == 2

    assert first_claim(reopened, LLM_POOL, "run-2")
    after = reopened.event_log_storage.get_concurrency_info(LLM_POOL)
    assert (after.limit, after.slot_count, after.using_default_limit) == (2, 2, True)
    assert [slot.run_id for slot in after.claimed_slots] == ["run-2"]


def test_a_limit_set_for_a_pool_survives_the_default(tmp_path: Path, dagster_home: Path) -> None:
    """`dagster instance concurrency set llm 3` wins over `default_limit`, even against a claim
    that read the pool as defaulted just before the limit was set (and so sets the default)."""
    settings = Settings(home=tmp_path / "home", dagster_home=dagster_home)
    instance = open_instance(settings.llm, settings.paths)
    instance.event_log_storage.set_concurrency_slots(LLM_POOL, 3)

    instance.event_log_storage.initialize_concurrency_limit_to_default(LLM_POOL)

    assert first_claim(instance, LLM_POOL, "run-1")
    info = instance.event_log_storage.get_concurrency_info(LLM_POOL)
    assert (info.limit, info.slot_count, info.using_default_limit) == (3, 3, False)


def test_two_first_claims_of_a_new_pool_at_once_both_succeed_at_the_default_limit(
    tmp_path: Path, dagster_home: Path
) -> None:
    """Two runs' steps (each run with its own instance, as run workers have) claim a pool that
    does not exist yet at the same moment, in rounds of a new pool each."""
    settings = Settings(home=tmp_path / "home", dagster_home=dagster_home)
    workers = [open_instance(settings.llm, settings.paths) for _ in range(2)]
    for attempt in range(10):
        pool = f"new-pool-{attempt}"
        start = threading.Barrier(len(workers))

        def claim(worker: int, start: threading.Barrier = start, pool: str = pool) -> bool:
            start.wait()
            return first_claim(workers[worker], pool, f"run-{worker}")

        assert all_at_once(claim, [0, 1]) == [True, True], f"attempt {attempt}"
        info = workers[0].event_log_storage.get_concurrency_info(pool)
        assert (info.limit, info.slot_count, info.using_default_limit) == (4, 4, True)
        assert sorted(slot.run_id for slot in info.claimed_slots) == ["run-0", "run-1"]
