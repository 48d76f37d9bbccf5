"""Soak: four litpipe processes share one home for `--seconds`, then the home is checked.

In a fresh temporary LITPIPE_HOME, four loops each run one command again and again until the
time is up (a command running then is let finish, within `--grace` seconds):

- run-a and run-b: `litpipe run TABLE --collection soak`, on overlapping tables of real
  abstracts (SciFact's corpus by default): shared papers first, `--start` of them and `--step`
  more each round, so that the two build the same new papers at the same time, then 4 papers of
  each one's own;
- backfill: `litpipe backfill --embedder TINY --collection soak --batch 4`, TINY being a one-layer
  sentence-transformers model built offline from the packaged MiniLM's tokenizer
  (litpipe_tests/tiny_model.py): a second embedder, its own LanceDB table, and the per-paper
  assets' code versions flipping between the two embedders (docs/how-to/embedders-and-backfill.md,
  "Swapping the embedding model": the instance keeps one latest materialization per asset
  partition, so the runs and the backfill take turns rebuilding them); `--backfill-embedder
  same`: MiniLM, the runs' own;
- ask: `litpipe ask --paper P QUERY`, over two shared papers and three queries in turn.

Offline (no model) by default; `--stub` routes every agent to the local stub server
(litpipe_tests/stub_llm.py with litpipe_tests/stub_agents.py's scripted replies), so that
model-calling steps claim slots of the `llm` pool; `--model`/`--api-base` to a server of yours.
Until the first paper is registered (backfill) or ingested (ask) these two exit 2, "run
`litpipe run` first": such exits before their first success are counted as not ready, not as
failures.

Then the check, reading the home directly once every process has exited:

1. Rows: in every LanceDB table, the row count equals the number of distinct chunk_ids (read
   with LanceDB itself: `ChunkStore.open_table` would repair the table first).
2. Runs: none left unfinished (STARTED, STARTING, QUEUED, NOT_STARTED, CANCELING), read with a
   plain `DagsterInstance.from_config`, before `litpipe.runtime.runner.open_instance` (which marks
   the runs of dead processes failed and frees their slots); what that then released is reported.
3. Slots: no pool slot claimed, no step waiting for one, no run holding a slot.
4. Once per version: a materialization of an asset partition is a duplicate when the previous
   materialization of the same asset partition has the same code version, the same input data
   version for every input and the same data version: it was built again while nothing it
   depends on or produces had changed (two processes building the same stale partition at
   once, or a rebuild of a fresh one). A return to a version seen before with another version
   in between (the runs and the backfill taking turns, above) is counted apart and allowed.
5. No lost paper: every registered paper has every per-paper asset `litpipe run` builds
   materialized.
6. Every command exited 0 (or 2 while not ready, above), and none outlived the grace period.

Usage: python benchmarks/concurrency.py [--data ../shared/data/scifact] [--seconds 300]
           [--stub | --model M --api-base URL] [--keep DIR]
Prints each process's figures and the check's, then one JSON object as the last line; exits 1
when a check fails.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pydantic import BaseModel, Field

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # litpipe_tests: the tiny embedder and the stub server
DATA = ROOT.parent / "shared" / "data"  # ../shared beside the checkout

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dagster as dg  # noqa: E402
import lancedb  # noqa: E402

from litpipe.catalog import Catalog  # noqa: E402
from litpipe.defs.definitions import build_definitions  # noqa: E402
from litpipe.ingest.ids import table_paper_id  # noqa: E402
from litpipe.instance.run_liveness import PID_TAG  # noqa: E402
from litpipe.retrieval.store import TABLE_PREFIX  # noqa: E402
from litpipe.runtime.runner import open_instance, phases  # noqa: E402
from litpipe.settings import Settings  # noqa: E402
from litpipe.settings.groups import settings_groups  # noqa: E402

COLLECTION = "soak"
OWN_PAPERS = 4  # papers only one of the two runs has
QUERIES = (
    "What is the main finding?",
    "Which methods and data were used?",
    "What limitations do the authors state?",
)
NOT_READY_EXIT = 2
NOT_READY_PAUSE_S = 10.0
UNFINISHED = (
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.CANCELING,
)
LITPIPE = "import sys; from litpipe.cli import main; sys.exit(main())"
# The line of a command's output that says why it failed, best first.
_EXCEPTION_LINE = re.compile(r"^\w[\w.]*(Error|Exception|Interrupt)\b.*")
_REASON_LINE = re.compile(r"^(litpipe \w[\w-]*: .*|.*\bFAILED\b.*)$")


class Abstract(BaseModel):
    id: str
    title: str
    abstract: str


class Command(BaseModel):
    role: str
    round: int
    pid: int
    exit_code: int
    seconds: float
    not_ready: bool = False
    outlived_grace: bool = False
    error: str | None = Field(default=None, description="Why it failed: one line of its output.")
    paper_failures: list[str] = Field(
        default_factory=list, description="`litpipe run`'s FAILED paper lines, exit code aside."
    )


class ProcessFigures(BaseModel):
    commands: int
    not_ready: int
    succeeded: int
    failed: int
    exit_codes: dict[str, int]
    outlived_grace: int
    mean_s: float | None = Field(description="Mean seconds of a command, the not ready aside.")
    max_s: float | None
    errors: dict[str, int] = Field(description="Each failed command's reason, and how often.")
    paper_failures: int = Field(description="Papers listed FAILED by `litpipe run`.")
    first_paper_failure: str | None


def read_abstracts(path: Path) -> list[Abstract]:
    """A BEIR folder's corpus.jsonl (`_id`, `title`, `text`) or a table with id,title,abstract;
    rows without a title or an abstract left out."""
    rows: list[Abstract] = []
    if path.is_dir():
        with (path / "corpus.jsonl").open(encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    record = json.loads(line)
                    rows.append(
                        Abstract(
                            id=str(record["_id"]),
                            title=record.get("title") or "",
                            abstract=record.get("text") or "",
                        )
                    )
    else:
        with path.open(encoding="utf-8", newline="") as table:
            for record in csv.DictReader(table):
                values = {key.strip().lower(): value for key, value in record.items() if key}
                rows.append(
                    Abstract(id=values["id"], title=values["title"], abstract=values["abstract"])
                )
    return [row for row in rows if row.title.strip() and row.abstract.strip()]


def write_table(path: Path, rows: list[Abstract]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(["id", "title", "abstract"])
        writer.writerows([row.id, row.title, row.abstract] for row in rows)
    return path


def error_line(output: str) -> str:
    """The line saying why a command failed: a traceback's exception, else litpipe's reason."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if any(line.startswith("Traceback") for line in lines):
        exceptions = [line for line in lines if _EXCEPTION_LINE.match(line)]
        if exceptions:
            return exceptions[-1][:300]
    reasons = [line for line in lines if _REASON_LINE.match(line) and "check " not in line]
    return (reasons or lines or ["(no output)"])[0][:300]


class Loop:
    """One role: its command, run again until the deadline, each exit recorded."""

    def __init__(
        self,
        role: str,
        arguments: Callable[[int], list[str]],
        env: dict[str, str],
        logs: Path,
        waits_for_papers: bool = False,
    ) -> None:
        self.role = role
        self.arguments = arguments
        self.env = env
        self.logs = logs
        self.waits_for_papers = waits_for_papers
        self.commands: list[Command] = []
        self.pids: set[int] = set()

    def run(self, deadline: float, grace: float) -> None:
        round_number = 0
        while time.monotonic() < deadline:
            command = self._once(round_number, deadline + grace)
            self.commands.append(command)
            round_number += 1
            if command.not_ready:
                # Nothing to do until a run has registered or ingested papers: leave the cores
                # to the runs meanwhile (each attempt costs seconds of imports).
                time.sleep(NOT_READY_PAUSE_S)

    def _once(self, round_number: int, give_up_at: float) -> Command:
        log = self.logs / f"{self.role}-{round_number:03d}.log"
        started = time.monotonic()
        with log.open("w") as output:
            process = subprocess.Popen(
                [sys.executable, "-c", LITPIPE, *self.arguments(round_number)],
                env=self.env,
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )
            self.pids.add(process.pid)
            outlived = False
            try:
                process.wait(timeout=max(0.0, give_up_at - time.monotonic()))
            except subprocess.TimeoutExpired:
                outlived = True
                process.send_signal(signal.SIGINT)  # litpipe's own stop: after the current step
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        seconds = time.monotonic() - started
        text = log.read_text(errors="replace")
        succeeded_before = any(c.exit_code == 0 for c in self.commands)
        not_ready = (
            self.waits_for_papers
            and not succeeded_before
            and process.returncode == NOT_READY_EXIT
            and "run `litpipe run" in text
        )
        failed = process.returncode != 0 and not not_ready
        return Command(
            role=self.role,
            round=round_number,
            pid=process.pid,
            exit_code=process.returncode,
            seconds=round(seconds, 2),
            not_ready=not_ready,
            outlived_grace=outlived,
            error=error_line(text) if failed or outlived else None,
            paper_failures=[
                line.strip()
                for line in text.splitlines()
                if re.match(r"^\[\d+/\d+\] \S+: .*FAILED", line.strip())
            ],
        )

    def figures(self) -> ProcessFigures:
        ran = [c for c in self.commands if not c.not_ready]
        failed = [c for c in ran if c.exit_code != 0 or c.outlived_grace]
        return ProcessFigures(
            commands=len(self.commands),
            not_ready=len(self.commands) - len(ran),
            succeeded=len(ran) - len(failed),
            failed=len(failed),
            exit_codes=dict(Counter(str(c.exit_code) for c in self.commands)),
            outlived_grace=sum(c.outlived_grace for c in self.commands),
            mean_s=round(statistics.mean(c.seconds for c in ran), 1) if ran else None,
            max_s=round(max(c.seconds for c in ran), 1) if ran else None,
            errors=dict(Counter(c.error for c in failed if c.error)),
            paper_failures=sum(len(c.paper_failures) for c in self.commands),
            first_paper_failure=next(
                (line for c in self.commands for line in c.paper_failures), None
            ),
        )


@contextmanager
def sampled_load(every_s: float = 5.0) -> Iterator[list[float]]:
    """The 1-minute load average, sampled while open."""
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(every_s):
            samples.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield samples
    finally:
        done.set()
        sampler.join()


# ---------------------------------------------------------------------------------------------
# The check.
# ---------------------------------------------------------------------------------------------


class TableFigures(BaseModel):
    rows: int
    distinct_chunk_ids: int


class RunFigures(BaseModel):
    by_status: dict[str, int]
    unfinished: list[str] = Field(description="Run id, status and process of each.")


class PoolFigures(BaseModel):
    limit: int | None
    claimed: int
    pending_steps: int


class SlotFigures(BaseModel):
    pools: dict[str, PoolFigures]
    runs_holding: list[str]

    @property
    def held(self) -> bool:
        return bool(self.runs_holding) or any(
            pool.claimed or pool.pending_steps for pool in self.pools.values()
        )


class AssetFigures(BaseModel):
    partitions: int = 0
    materializations: int = 0
    duplicates: int = Field(default=0, description="Same version as the partition's previous.")
    duplicates_overlapping: int = Field(
        default=0, description="Duplicates whose run started before the previous one's ended."
    )
    returns: int = Field(default=0, description="Back to a version seen before another one.")


def check_tables(settings: Settings) -> dict[str, TableFigures]:
    """Per LanceDB table: rows and distinct chunk_ids."""
    db = lancedb.connect(str(settings.paths.lancedb_dir))
    figures = {}
    for name in db.list_tables().tables:
        if name.startswith(TABLE_PREFIX):
            chunk_ids = db.open_table(name).to_arrow().column("chunk_id").to_pylist()
            figures[name] = TableFigures(
                rows=len(chunk_ids), distinct_chunk_ids=len(set(chunk_ids))
            )
    return figures


def check_runs(instance: dg.DagsterInstance) -> RunFigures:
    runs = instance.get_runs()
    return RunFigures(
        by_status=dict(Counter(run.status.value for run in runs)),
        unfinished=[
            f"{run.run_id} {run.status.value} (pid {run.tags.get(PID_TAG)})"
            for run in runs
            if run.status in UNFINISHED
        ],
    )


def check_slots(instance: dg.DagsterInstance) -> SlotFigures:
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return SlotFigures(pools={}, runs_holding=[])
    pools = {}
    for key in storage.get_concurrency_keys():
        info = storage.get_concurrency_info(key)
        pools[key] = PoolFigures(
            limit=info.slot_count,
            claimed=len(info.claimed_slots),
            pending_steps=len(info.pending_steps),
        )
    return SlotFigures(pools=pools, runs_holding=sorted(storage.get_concurrency_run_ids()))


def _materializations(instance: dg.DagsterInstance, key: dg.AssetKey) -> list[dg.EventLogRecord]:
    """Every materialization of the asset, oldest first."""
    records: list[dg.EventLogRecord] = []
    cursor = None
    while True:
        page = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key), limit=1000, cursor=cursor, ascending=True
        )
        records.extend(page.records)
        if not page.has_more:
            return records
        cursor = page.cursor


def _version(record: dg.EventLogRecord) -> tuple[tuple[str, str], ...]:
    """What makes two materializations the same version: code, inputs' data, own data."""
    materialization = record.event_log_entry.asset_materialization
    tags = (materialization.tags if materialization else None) or {}
    return tuple(
        sorted(
            (tag, value)
            for tag, value in tags.items()
            if tag in ("dagster/code_version", "dagster/data_version")
            or tag.startswith("dagster/input_data_version/")
        )
    )


def check_versions(
    instance: dg.DagsterInstance, role_of_pid: dict[str, str]
) -> tuple[dict[str, AssetFigures], list[str]]:
    """Per asset: materializations, duplicates and returns (see the module's docstring); and a
    few duplicates named, with the roles whose processes built the two."""
    per_asset: dict[str, AssetFigures] = {}
    examples: list[str] = []
    runs: dict[str, dg.RunRecord | None] = {}

    def run_of(record: dg.EventLogRecord) -> dg.RunRecord | None:
        if record.run_id not in runs:
            runs[record.run_id] = instance.get_run_record_by_id(record.run_id)
        return runs[record.run_id]

    def role(run: dg.RunRecord | None) -> str:
        pid = run.dagster_run.tags.get(PID_TAG, "?") if run else "?"
        return role_of_pid.get(pid, f"pid {pid}")

    for key in sorted(instance.get_asset_keys(), key=lambda key: key.to_user_string()):
        by_partition: dict[str | None, list[dg.EventLogRecord]] = {}
        for record in _materializations(instance, key):
            by_partition.setdefault(record.partition_key, []).append(record)
        figures = per_asset[key.to_user_string()] = AssetFigures(partitions=len(by_partition))
        for partition, records in by_partition.items():
            seen: set[tuple[tuple[str, str], ...]] = set()
            previous: dg.EventLogRecord | None = None
            for record in records:
                version = _version(record)
                figures.materializations += 1
                if previous is not None and version == _version(previous):
                    figures.duplicates += 1
                    earlier, later = run_of(previous), run_of(record)
                    # The later run started before the earlier one ended: both were building it.
                    overlapping = (
                        earlier is not None
                        and later is not None
                        and (earlier.end_time or float("inf")) > (later.start_time or 0.0)
                    )
                    figures.duplicates_overlapping += overlapping
                    if len(examples) < 8:
                        examples.append(
                            f"{key.to_user_string()}[{partition}]: run {record.run_id[:8]} of "
                            f"{role(later)} after run {previous.run_id[:8]} of {role(earlier)}"
                            + (", both running at once" if overlapping else ", which had ended")
                        )
                elif version in seen:
                    figures.returns += 1
                seen.add(version)
                previous = record
    return per_asset, examples


def check_lost(settings: Settings, instance: dg.DagsterInstance) -> list[str]:
    """The registered papers' per-paper assets (those `litpipe run` builds) never materialized."""
    keys = [
        key
        for phase in phases(build_definitions(**settings_groups(settings)))
        if phase.per == "paper"
        for key in phase.keys
    ]
    catalog = Catalog(settings.paths.catalog_path)
    paper_ids = {paper for name in catalog.collections() for paper in catalog.papers(name)}
    lost = []
    for key in keys:
        built = set(instance.get_materialized_partitions(key))
        lost.extend(f"{key.to_user_string()}[{paper}]" for paper in sorted(paper_ids - built))
    return lost


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=DATA / "scifact",
        help="a BEIR folder (corpus.jsonl) or a table with id,title,abstract",
    )
    parser.add_argument("--seconds", type=float, default=300.0, help="how long the loops run")
    parser.add_argument(
        "--grace", type=float, default=600.0, help="how long a command may outlive --seconds"
    )
    parser.add_argument("--start", type=int, default=4, help="shared papers in the first round")
    parser.add_argument("--step", type=int, default=4, help="shared papers added each round")
    parser.add_argument("--papers", type=int, default=60, help="shared papers at most")
    parser.add_argument(
        "--backfill-embedder",
        choices=("tiny", "same"),
        default="tiny",
        help="the backfill's embedder: a tiny model built here (default), or the runs' MiniLM",
    )
    parser.add_argument("--stub", action="store_true", help="agents call the local stub server")
    parser.add_argument("--model", help="litellm model for every agent (default: offline)")
    parser.add_argument("--api-base", help="base URL of an OpenAI-compatible server")
    parser.add_argument("--keep", type=Path, help="use this (new) folder, and keep it")
    args = parser.parse_args(argv)
    if args.stub and args.model:
        parser.error("--stub and --model are exclusive")

    rows = read_abstracts(args.data)[: 2 * OWN_PAPERS + args.papers]
    if len(rows) < 2 * OWN_PAPERS + args.start:
        parser.error(f"{args.data}: {len(rows)} usable rows, {2 * OWN_PAPERS + args.start} needed")
    own = {"run-a": rows[:OWN_PAPERS], "run-b": rows[OWN_PAPERS : 2 * OWN_PAPERS]}
    shared = rows[2 * OWN_PAPERS :]

    with ExitStack() as stack:
        if args.keep:
            args.keep.mkdir(parents=True)
            work = args.keep
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="litpipe-soak-")))
        home, tables, logs = work / "home", work / "tables", work / "logs"
        tables.mkdir()
        logs.mkdir()
        from litpipe_tests.tiny_model import build_tiny_model

        backfill = ["backfill", "--collection", COLLECTION, "--batch", "4"]
        if args.backfill_embedder == "tiny":
            backfill += ["--embedder", str(build_tiny_model(work / "tiny"))]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LITPIPE_HOME": str(home)}
        model: list[str] = []
        if args.stub:
            from litpipe_tests.stub_agents import serve_every_agent
            from litpipe_tests.stub_llm import StubLLM

            stub = stack.enter_context(StubLLM(lifetime_s=args.seconds + args.grace + 600))
            serve_every_agent(stub)
            model = ["--model", "openai/stub", "--api-base", stub.url]
            env["OPENAI_API_KEY"] = "sk-soak-stub"
        elif args.model:
            model = ["--model", args.model] + (
                ["--api-base", args.api_base] if args.api_base else []
            )

        def run_arguments(role: str) -> Callable[[int], list[str]]:
            def arguments(round_number: int) -> list[str]:
                papers = shared[: args.start + args.step * round_number] + own[role]
                table = write_table(tables / f"{role}-{round_number:03d}.csv", papers)
                return ["run", str(table), "--collection", COLLECTION, *model]

            return arguments

        asked = [table_paper_id(COLLECTION, row.id) for row in shared[:2]]
        loops = [
            Loop("run-a", run_arguments("run-a"), env, logs),
            Loop("run-b", run_arguments("run-b"), env, logs),
            Loop(
                "backfill",
                lambda _: [*backfill, *model],
                env,
                logs,
                waits_for_papers=True,
            ),
            Loop(
                "ask",
                lambda n: ["ask", "--paper", asked[n % 2], QUERIES[n % len(QUERIES)], *model],
                env,
                logs,
                waits_for_papers=True,
            ),
        ]
        cores = os.cpu_count()
        engine = "stub server" if args.stub else args.model or "offline"
        backfilled = "a tiny second embedder" if args.backfill_embedder == "tiny" else "MiniLM"
        print(
            f"{len(loops)} loops on one home for {args.seconds:.0f} s ({cores} cores, load "
            f"{os.getloadavg()[0]:.2f} at the start); {len(rows)} abstracts from {args.data}; "
            f"engine: {engine}; backfill to {backfilled}; work: {work}"
        )
        started = time.monotonic()
        deadline = started + args.seconds
        with sampled_load() as load:
            threads = [
                threading.Thread(target=loop.run, args=(deadline, args.grace)) for loop in loops
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        wall = time.monotonic() - started

        per_process = {loop.role: loop.figures() for loop in loops}
        for role, process in per_process.items():
            print(
                f"{role:<9} {process.commands:>3} commands: {process.succeeded} ok, "
                f"{process.failed} failed, {process.not_ready} not ready; mean {process.mean_s} s, "
                f"max {process.max_s} s; exit codes {process.exit_codes}; papers FAILED in its "
                f"output: {process.paper_failures}"
            )
            for error, count in process.errors.items():
                print(f"          {count} x {error}")
            if process.first_paper_failure:
                print(f"          first paper failure: {process.first_paper_failure}")

        settings = Settings(home=home)
        role_of_pid = {str(pid): loop.role for loop in loops for pid in loop.pids}
        # Read before open_instance, which fails the runs of dead processes and frees their slots.
        plain = dg.DagsterInstance.from_config(str(settings.dagster_home))
        runs, slots = check_runs(plain), check_slots(plain)
        per_asset, duplicate_examples = check_versions(plain, role_of_pid)
        reopened = open_instance(settings.llm, settings.paths)
        runs_after, slots_after = check_runs(reopened), check_slots(reopened)
        tables_figures = check_tables(settings)
        lost = check_lost(settings, plain)
        registered = len(Catalog(settings.paths.catalog_path).papers(COLLECTION))

        print(
            f"wall {wall:.0f} s; 1-minute load average while running: mean "
            f"{statistics.mean(load or [0.0]):.2f}, max {max(load or [0.0]):.2f}"
        )
        print(f"papers registered in {COLLECTION!r}: {registered}")
        for name, table in tables_figures.items():
            print(f"table {name}: {table.rows} rows, {table.distinct_chunk_ids} distinct chunk ids")
        print(f"runs by status: {runs.by_status}; unfinished: {len(runs.unfinished)}")
        for line in runs.unfinished[:5]:
            print(f"  unfinished: {line}")
        print(
            f"  after open_instance: {len(runs_after.unfinished)} unfinished, "
            f"{len(slots_after.runs_holding)} runs holding a slot"
        )
        print(
            f"pool slots: { {key: pool.model_dump() for key, pool in slots.pools.items()} }; "
            f"runs holding a slot: {len(slots.runs_holding)}"
        )
        duplicates = sum(figures.duplicates for figures in per_asset.values())
        overlapping = sum(figures.duplicates_overlapping for figures in per_asset.values())
        returns = sum(figures.returns for figures in per_asset.values())
        print(
            f"{'asset':<24}{'partitions':>11}{'materialized':>13}{'duplicates':>11}"
            f"{'(at once)':>10}{'returns':>9}"
        )
        for asset, figures in per_asset.items():
            print(
                f"{asset:<24}{figures.partitions:>11}{figures.materializations:>13}"
                f"{figures.duplicates:>11}{figures.duplicates_overlapping:>10}{figures.returns:>9}"
            )
        for example in duplicate_examples:
            print(f"  duplicate: {example}")
        print(f"registered papers' assets never materialized: {len(lost)} {lost[:5]}")

        checks = {
            "rows_equal_distinct_chunk_ids": all(
                table.rows == table.distinct_chunk_ids for table in tables_figures.values()
            ),
            "no_run_unfinished": not runs.unfinished,
            "no_slot_held": not slots.held,
            "materialized_once_per_version": duplicates == 0,
            "no_paper_lost": not lost,
            "every_command_succeeded": all(f.failed == 0 for f in per_process.values()),
        }
        for name, passed in checks.items():
            print(f"check {name}: {'passed' if passed else 'FAILED'}")
        print(
            json.dumps(
                {
                    "seconds": args.seconds,
                    "wall_s": round(wall, 1),
                    "cores": cores,
                    "load_mean": round(statistics.mean(load or [0.0]), 2),
                    "load_max": round(max(load or [0.0]), 2),
                    "engine": engine,
                    "backfill_embedder": args.backfill_embedder,
                    "processes": {role: f.model_dump() for role, f in per_process.items()},
                    "papers_registered": registered,
                    "tables": {name: t.model_dump() for name, t in tables_figures.items()},
                    "runs_by_status": runs.by_status,
                    "runs_unfinished": len(runs.unfinished),
                    "runs_unfinished_after_open_instance": len(runs_after.unfinished),
                    "pools": {key: pool.model_dump() for key, pool in slots.pools.items()},
                    "runs_holding_slots": len(slots.runs_holding),
                    "materializations": {a: f.model_dump() for a, f in per_asset.items()},
                    "duplicates": duplicates,
                    "duplicates_overlapping": overlapping,
                    "returns": returns,
                    "lost": len(lost),
                    "checks": checks,
                }
            )
        )
        return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
