"""Many run workers on one machine under the real Dagster daemon, as a cluster runs them.

A throwaway PostgreSQL holds the instance (litpipe's pool-safe event log storage, the queued
run coordinator, run monitoring, run retries); `dagster-daemon run` serves litpipe's graph
(`daemon_soak_location`), and every model call goes to the stub server of this process. A
table of abstracts from the bundled ICLR corpus is dropped into the inbox: the new-papers
sensor registers it and requests one backfill of its papers, which the backfill daemon runs as
batches of `operations.batch_size` papers, at most `max_runs` at once. Once a run has built a
stage or two, its worker process is killed with SIGKILL; the rest is left to Dagster (the run
failed, its slots freed, the run retried from its failure). The collection's stages are the
daemon's too (its automation requests them once the papers are built: in their backfill, or,
where a killed run's retry left them out of it, on a later tick); their synthesis is read.

Shared by `test_daemon_soak.py` (which asserts) and `benchmarks/daemon_soak.py` (which prints).
"""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import yaml
from dagster._core.execution.backfill import BulkActionStatus

from litpipe.defs.jobs import collection_pipeline
from litpipe.defs.llm_steps import LLM_POOL
from litpipe.instance.run_failures import failure_reason
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.cited import cited_papers
from litpipe_tests.daemon_soak_location import EXECUTOR_VARIABLE
from litpipe_tests.postgres_server import PostgresServer
from litpipe_tests.stub_agents import serve_every_agent
from litpipe_tests.stub_llm import StubLLM

REPOSITORY = Path(__file__).resolve().parents[1]
TEMPLATE = REPOSITORY / "deploy" / "dagster.postgres.yaml"
ICLR = REPOSITORY / "corpora" / "iclr-abstracts" / "iclr_abstracts.csv"
DAEMON = Path(sys.executable).with_name("dagster-daemon")
COLLECTION = "soak"
LOCATION = "litpipe_tests.daemon_soak_location"
# The per-paper stages, source to answers: each paper's partition of each, materialized once.
PAPER_ASSETS = (
    "paper_source",
    "paper_document",
    "paper_chunks",
    "chunk_embeddings",
    "paper_abstract",
    "paper_questions",
    "question_evidence",
    "paper_answers",
)
STARTED_PROCESS = re.compile(r"Started process for run \(pid: (\d+)\)")
STEP_STARTS = {dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_RESTARTED}
STEP_ENDS = {
    dg.DagsterEventType.STEP_SUCCESS,
    dg.DagsterEventType.STEP_FAILURE,
    dg.DagsterEventType.STEP_UP_FOR_RETRY,
}
# Fewer model calls than the defaults: one question per style (two a paper, one answer each).
QUICK = {"LITPIPE_SYNTHESIS__QUESTIONS_PER_STYLE": "1"}
# How long the daemon may stay idle, every run ended and every backfill done, before what is
# unbuilt is taken to stay so: past two ticks of the automation condition sensor (every 30 s),
# which requests the collection's stages a killed run's backfill left out.
IDLE_S = 75.0


@dataclass
class Soak:
    """What one soak did, read back from the instance, the stub server and the outputs."""

    papers: int
    batch_size: int
    max_runs: int
    pool_limit: int
    executor: str
    # From the daemon's start (the table waiting) to the last paper run's end.
    seconds: float = 0.0
    runs: list[dg.DagsterRun] = field(default_factory=list)  # the paper runs, retries included
    # The runs of the collection's stages the daemon's automation launched.
    collection_runs: list[dg.DagsterRun] = field(default_factory=list)
    # The collection's materializations, by stage (each once: the daemon built it once).
    collection_materializations: dict[str, int] = field(default_factory=dict)
    backfills: int = 0
    killed_run: str | None = None
    killed_steps_done: int = 0  # steps the killed run had finished when it was killed
    killed_slots: int = 0  # slots of the pool the killed run held when it was killed
    killed_slots_at_end: int = -1  # and once all runs had ended
    retries_of_killed: list[dg.DagsterRun] = field(default_factory=list)
    materializations: dict[str, Counter[str]] = field(default_factory=dict)  # asset: partitions
    paper_ids: list[str] = field(default_factory=list)
    peak_slots_sampled: int = 0  # the pool's claimed slots, sampled while the runs ran
    peak_pooled_steps: int = 0  # the most model-calling steps running at once, from the events
    pool_waits: int = 0  # times a step waited for a slot of the pool
    slots_held_at_end: int = -1
    model_calls: int = 0
    collection_succeeded: bool = False  # the daemon's runs built every stage of the collection
    collection_failure: str = ""  # why a collection run failed, if one did
    uncited: list[str] = field(default_factory=list)  # papers the synthesis does not cite
    daemon_log: str = ""

    @property
    def duplicates(self) -> dict[str, dict[str, int]]:
        """Partitions materialized more than once, by asset."""
        return {
            asset: {p: n for p, n in counts.items() if n > 1}
            for asset, counts in self.materializations.items()
            if any(n > 1 for n in counts.values())
        }

    @property
    def missing(self) -> dict[str, list[str]]:
        """Papers never materialized, by asset."""
        return {
            asset: [p for p in self.paper_ids if not counts.get(p)]
            for asset, counts in self.materializations.items()
            if any(not counts.get(p) for p in self.paper_ids)
        }

    @property
    def papers_per_minute(self) -> float:
        return round(60 * self.papers / self.seconds, 1) if self.seconds else 0.0

    def figures(self) -> dict[str, object]:
        statuses = Counter(run.status.value for run in self.runs)
        return {
            "papers": self.papers,
            "batch_size": self.batch_size,
            "max_concurrent_runs": self.max_runs,
            "executor": self.executor,
            "backfills": self.backfills,
            "runs": len(self.runs),
            "collection_runs": [run.status.value for run in self.collection_runs],
            "collection_materializations": self.collection_materializations,
            "run_statuses": dict(statuses),
            "seconds": round(self.seconds, 1),
            "papers_per_minute": self.papers_per_minute,
            "pool_limit": self.pool_limit,
            "peak_pool_slots_sampled": self.peak_slots_sampled,
            "peak_model_steps_at_once": self.peak_pooled_steps,
            "pool_waits": self.pool_waits,
            "slots_held_at_end": self.slots_held_at_end,
            "killed_run": self.killed_run,
            "killed_run_steps_done": self.killed_steps_done,
            "killed_run_slots": self.killed_slots,
            "killed_run_slots_at_end": self.killed_slots_at_end,
            "killed_run_retries": [run.status.value for run in self.retries_of_killed],
            "duplicates": sum(len(p) for p in self.duplicates.values()),
            "missing": sum(len(p) for p in self.missing.values()),
            "model_calls": self.model_calls,
            "collection_succeeded": self.collection_succeeded,
            "collection_failure": self.collection_failure,
            "uncited_papers": len(self.uncited),
        }


def instance_config(pool_limit: int, max_runs: int) -> str:
    """deploy/dagster.postgres.yaml, with this machine's bounds and run monitoring quick to see
    a killed worker's run ended and to free its slots."""
    config = yaml.safe_load(TEMPLATE.read_text("utf-8"))
    config["concurrency"]["runs"]["max_concurrent_runs"] = max_runs
    config["concurrency"]["pools"]["default_limit"] = pool_limit
    config["run_monitoring"].update(
        {"poll_interval_seconds": 2, "free_slots_after_run_end_seconds": 2}
    )
    # No run launcher named: Dagster's default starts each run in a worker process of the code
    # server, which marks the run failed when that process dies (a run pod, on a cluster).
    return yaml.safe_dump(config, sort_keys=False)


def write_table(path: Path, papers: int) -> None:
    """The first `papers` abstracts of the bundled ICLR table, as a table of its own."""
    with ICLR.open(encoding="utf-8", newline="") as source:
        rows = list(csv.DictReader(source))[:papers]
    assert len(rows) == papers, f"the ICLR table has {len(rows)} abstracts, not {papers}"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as table:
        writer = csv.DictWriter(table, ["id", "title", "abstract"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def run_pid(instance: dg.DagsterInstance, run_id: str) -> int | None:
    """The run worker's process, as the worker logged it on starting."""
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        found = STARTED_PROCESS.search(entry.message or "")
        if found:
            return int(found.group(1))
    return None


def descends_from(pid: int, ancestor: int) -> bool:
    """Whether `pid` is `ancestor` or one of its descendants (read from /proc)."""
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


def steps_done(instance: dg.DagsterInstance, run_id: str) -> int:
    return len(instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_SUCCESS))


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = most = 0
    for _, change in edges:
        running += change
        most = max(most, running)
    return most


def pooled_steps(instance: dg.DagsterInstance, run_ids: list[str], steps: set[str]) -> int:
    """The most executions of these steps open at one time across the runs (their events)."""
    intervals = []
    for run_id in run_ids:
        started: dict[str, float] = {}
        for entry in instance.all_logs(run_id, of_type=STEP_STARTS | STEP_ENDS):
            if entry.step_key not in steps:
                continue
            if entry.dagster_event_type in STEP_STARTS:
                started[entry.step_key] = entry.timestamp
            elif entry.step_key in started:
                intervals.append((started.pop(entry.step_key), entry.timestamp))
        # A step whose worker was killed never ended: it held its slot until the run's end.
        run = instance.get_run_record_by_id(run_id)
        end = run.end_time if run is not None and run.end_time else time.time()
        intervals.extend((start, end) for start in started.values())
    return most_at_once(intervals)


class PoolSampler(threading.Thread):
    """Reads the pool's claimed slots every `interval` seconds until stopped."""

    def __init__(self, instance: dg.DagsterInstance, interval: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.instance, self.interval = instance, interval
        self.peak = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            try:
                info = self.instance.event_log_storage.get_concurrency_info(LLM_POOL)
            except Exception:  # a read racing the pool's first row: the next one sees it
                continue
            self.peak = max(self.peak, info.active_slot_count)


def run_soak(
    workdir: Path,
    postgres: PostgresServer,
    embedder: Path,
    *,
    papers: int = 200,
    batch_size: int = 50,
    max_runs: int = 3,
    pool_limit: int = 2,
    executor: str = "in_process",
    kill: bool = True,
    timeout_s: float = 600.0,
) -> Soak:
    """The scenario; `embedder` is a sentence-transformers model folder (the tests' tiny one)."""
    soak = Soak(papers, batch_size, max_runs, pool_limit, executor)
    home, dagster_home = workdir / "home", workdir / "dagster"
    dagster_home.mkdir(parents=True)
    (dagster_home / "dagster.yaml").write_text(instance_config(pool_limit, max_runs), "utf-8")
    with StubLLM(latency_s=0.02, lifetime_s=timeout_s + 120) as stub:
        serve_every_agent(stub)
        variables = {
            **postgres.environment(),
            "DAGSTER_HOME": str(dagster_home),
            "LITPIPE_HOME": str(home),
            "LITPIPE_DAGSTER_HOME": str(dagster_home),
            "LITPIPE_INGEST__EMBEDDER": str(embedder),
            # The tiny model as it is: its int8 copy, made by every run's process, buys nothing.
            "LITPIPE_INGEST__EMBEDDER_BACKEND": "torch",
            "LITPIPE_LLM__MODEL": "openai/stub",
            "LITPIPE_LLM__API_BASE": stub.url,
            "LITPIPE_OPERATIONS__BATCH_SIZE": str(batch_size),
            EXECUTOR_VARIABLE: executor,
            **QUICK,
        }
        previous = {name: os.environ.get(name) for name in variables}
        os.environ.update(variables)
        try:
            settings = Settings()
            instance = dg.DagsterInstance.from_config(str(dagster_home))
            stages = _collection_stages(settings)
            write_table(settings.home / "inbox" / f"{COLLECTION}.csv", papers)
            sampler = PoolSampler(instance)
            sampler.start()
            log = (workdir / "daemon.log").open("wb")
            started = time.time()
            daemon = subprocess.Popen(
                [str(DAEMON), "run", "-m", LOCATION, "-d", str(REPOSITORY)],
                cwd=REPOSITORY,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                _until_built(soak, instance, stages, daemon.pid, started, kill, timeout_s)
                soak.slots_held_at_end = _slots_after_runs(instance)
                soak.killed_slots_at_end = sum(
                    slot.run_id == soak.killed_run
                    for slot in instance.event_log_storage.get_concurrency_info(
                        LLM_POOL
                    ).claimed_slots
                )
            finally:
                sampler.stopped.set()
                _stop(daemon)
                log.close()
            soak.peak_slots_sampled = sampler.peak
            _collection(soak, settings, instance, stages)
            soak.model_calls = stub.request_count
            _read_back(soak, instance, settings)
            soak.seconds = _last_run_end(instance, soak.runs) - started
        finally:
            for name, value in previous.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    soak.daemon_log = (workdir / "daemon.log").read_text("utf-8", errors="replace")[-6000:]
    return soak


def _collection_stages(settings: Settings) -> list[dg.AssetKey]:
    """The collection's stages, index to outputs, in the graph these settings build."""
    from litpipe.defs.definitions import build_definitions

    graph = build_definitions(**settings_groups(settings)).resolve_asset_graph()
    return sorted(collection_pipeline.selection.resolve(graph))


def _until_built(
    soak: Soak,
    instance: dg.DagsterInstance,
    stages: list[dg.AssetKey],
    daemon: int,
    started: float,
    kill: bool,
    timeout_s: float,
) -> None:
    """Waits until every paper has its answers, the collection every stage, and no run is left
    to finish or retry, killing one run's worker on the way; or until the daemon, every
    backfill done, has launched nothing for `IDLE_S`: what is unbuilt then stays so."""
    answers = dg.AssetKey("paper_answers")
    while time.time() - started < timeout_s:
        time.sleep(1.0)
        if kill and soak.killed_run is None:
            _kill_one(soak, instance, daemon)
        runs = instance.get_runs()
        pending = [run for run in runs if not run.is_finished]
        retrying = [
            run
            for run in runs
            if run.status == dg.DagsterRunStatus.FAILURE and run.is_complete_and_waiting_to_retry
        ]
        if not runs or pending or retrying or (kill and soak.killed_run is None):
            continue
        registered = instance.get_dynamic_partitions("papers")
        papers_built = len(registered) == soak.papers and set(registered) <= (
            instance.get_materialized_partitions(answers)
        )
        collection_built = all(
            COLLECTION in instance.get_materialized_partitions(stage) for stage in stages
        )
        if papers_built and collection_built:
            return
        if _backfills_done(instance) and time.time() - _last_run_end(instance) > IDLE_S:
            return
    raise TimeoutError(f"the soak did not finish in {timeout_s:.0f} s")


def _backfills_done(instance: dg.DagsterInstance) -> bool:
    backfills = instance.get_backfills()
    return bool(backfills) and all(
        backfill.status != BulkActionStatus.REQUESTED for backfill in backfills
    )


def _kill_one(soak: Soak, instance: dg.DagsterInstance, daemon: int) -> None:
    """SIGKILL to the worker of the first running run that has finished two steps and holds a
    slot of the pool (it is in a model-calling step)."""
    claimed = Counter(
        slot.run_id
        for slot in instance.event_log_storage.get_concurrency_info(LLM_POOL).claimed_slots
    )
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])):
        if not claimed[run.run_id]:
            continue
        done = steps_done(instance, run.run_id)
        pid = run_pid(instance, run.run_id)
        if done < 2 or pid is None or not descends_from(pid, daemon):
            continue
        os.kill(pid, signal.SIGKILL)
        soak.killed_run, soak.killed_steps_done = run.run_id, done
        soak.killed_slots = claimed[run.run_id]
        return


def _last_run_end(instance: dg.DagsterInstance, runs: list[dg.DagsterRun] | None = None) -> float:
    """When the last of these runs (by default, of all runs) ended."""
    filters = None if runs is None else dg.RunsFilter(run_ids=[run.run_id for run in runs])
    return max(
        (record.end_time or 0.0 for record in instance.get_run_records(filters)),
        default=time.time(),
    )


def _slots_after_runs(instance: dg.DagsterInstance, wait_s: float = 30.0) -> int:
    """The pool's claimed slots once run monitoring has had time to free the ended runs'."""
    deadline = time.time() + wait_s
    while True:
        held = instance.event_log_storage.get_concurrency_info(LLM_POOL).active_slot_count
        if held == 0 or time.time() > deadline:
            return held
        time.sleep(1.0)


def _stop(daemon: subprocess.Popen[bytes]) -> None:
    """The daemon and what it started (its code server, any run worker): SIGTERM, then SIGKILL."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(daemon.pid, sent)
        except ProcessLookupError:
            return
        try:
            daemon.wait(timeout=20)
            return
        except subprocess.TimeoutExpired:
            continue


def _collection(
    soak: Soak, settings: Settings, instance: dg.DagsterInstance, stages: list[dg.AssetKey]
) -> None:
    """What the daemon built of the collection: its runs, each stage's materializations, and
    the papers its synthesis cites."""
    soak.collection_runs = [
        run for run in instance.get_runs() if run.asset_selection and not _builds_papers(run)
    ]
    for stage in stages:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=stage, asset_partitions=[COLLECTION]), limit=100
        ).records
        soak.collection_materializations[stage.to_user_string()] = len(records)
    failed = [run for run in soak.collection_runs if run.status != dg.DagsterRunStatus.SUCCESS]
    soak.collection_failure = "; ".join(
        failure_reason(
            entry.dagster_event for entry in instance.all_logs(run.run_id) if entry.dagster_event
        )
        for run in failed
    )
    soak.collection_succeeded = (
        bool(soak.collection_runs) and not failed and all(soak.collection_materializations.values())
    )
    synthesis = settings.home / "outputs" / COLLECTION / "synthesis.md"
    cited = (
        cited_papers(synthesis.read_text("utf-8"), settings.home) if synthesis.exists() else set()
    )
    soak.paper_ids = sorted(instance.get_dynamic_partitions("papers"))
    soak.uncited = [paper for paper in soak.paper_ids if paper not in cited]


def _builds_papers(run: dg.DagsterRun) -> bool:
    """Whether the run builds per-paper stages (the automation's runs are all of one asset
    job, `__ASSET_JOB`: their asset selection says which)."""
    return any(key.to_user_string() in PAPER_ASSETS for key in run.asset_selection or ())


def _read_back(soak: Soak, instance: dg.DagsterInstance, settings: Settings) -> None:
    soak.runs = [run for run in instance.get_runs() if _builds_papers(run)]
    soak.backfills = len(instance.get_backfills())
    soak.retries_of_killed = [
        run for run in soak.runs if run.tags.get("dagster/parent_run_id") == soak.killed_run
    ]
    for asset in PAPER_ASSETS:
        counts: Counter[str] = Counter()
        cursor = None
        while True:
            page = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset)), limit=1000, cursor=cursor
            )
            counts.update(record.partition_key for record in page.records if record.partition_key)
            if not page.has_more:
                break
            cursor = page.cursor
        soak.materializations[asset] = counts
    run_ids = [run.run_id for run in soak.runs]
    soak.peak_pooled_steps = pooled_steps(
        instance, run_ids, {"paper_abstract", "paper_questions", "paper_answers"}
    )
    soak.pool_waits = sum(
        f"blocked by limit for pool {LLM_POOL}" in (entry.message or "")
        for run_id in run_ids
        for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)
    )
