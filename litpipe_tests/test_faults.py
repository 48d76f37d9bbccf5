"""Process-level faults: real processes sharing one LITPIPE_HOME, killed runs, signals."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import lancedb
import numpy as np
import pytest

from litpipe.cli import main, stop_on_signals
from litpipe.commands.evaluations import eval_command
from litpipe.defs.llm_steps import LLM_POOL
from litpipe.defs.partitions import collections, papers
from litpipe.ingest.sources import discover
from litpipe.instance.run_liveness import PID_TAG, process_tags
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.store import table_name
from litpipe.runtime import backfill as backfilling
from litpipe.runtime.execution import RANGE_END_TAG, RANGE_START_TAG
from litpipe.runtime.runner import open_instance, register
from litpipe.settings import Settings
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.homes import home_instance
from litpipe_tests.stub_agents import serve_every_agent
from litpipe_tests.stub_llm import StubLLM
from litpipe_tests.test_eval_tldr import SAMPLE as TLDR_SAMPLE

REPO = Path(__file__).resolve().parent.parent
DEMO_CSV = REPO / "corpora" / "iclr-abstracts-demo" / "iclr_abstracts_demo.csv"


def litpipe_env(home: Path) -> dict[str, str]:
    """The environment of a child process importing this checkout's litpipe, offline."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "LITPIPE_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


# ---------------------------------------------------------------------------------------------
# Runtime faults: concurrent instance creation, killed runs' pool slots, stopping a run.
# ---------------------------------------------------------------------------------------------

# Opens the instance and registers the demo table's papers once "go" arrives on stdin, so that
# every process has paid for its imports and they all start at the same moment.
REGISTER = """
import sys
from litpipe.runtime.runner import open_instance, register
from litpipe.ingest.sources import discover
from litpipe.settings import Settings

discovery = discover(__import__("pathlib").Path(sys.argv[1]), "demo")
sys.stdin.readline()
settings = Settings()
register(settings.paths, open_instance(settings.llm, settings.paths), discovery)
"""


@pytest.mark.slow
def test_processes_opening_a_fresh_home_at_once_all_register_its_papers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", REGISTER, str(DEMO_CSV)],
            env=litpipe_env(home),
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    errors = [writer.communicate(timeout=120)[1] for writer in writers]

    assert [writer.returncode for writer in writers] == [0] * len(writers), errors
    instance = home_instance(home)
    paper_keys = instance.get_dynamic_partitions(papers.name)
    assert len(paper_keys) == len(set(paper_keys)) > 0
    assert instance.get_dynamic_partitions(collections.name) == ["demo"]


def test_a_run_whose_process_is_gone_is_failed_and_frees_its_pool_slot(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", llm={"pool_limit": 1})
    instance = open_instance(settings.llm, settings.paths)
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()  # its pid now names no process (a killed `litpipe run`)
    killed = dg.DagsterRun(
        job_name="paper_pipeline",
        run_id="killed-run",
        status=dg.DagsterRunStatus.STARTED,
        tags={**process_tags(), PID_TAG: str(gone.pid)},
    )
    alive = dg.DagsterRun(
        job_name="paper_pipeline",
        run_id="alive-run",
        status=dg.DagsterRunStatus.STARTED,
        tags=process_tags(),
    )
    instance.add_run(killed)
    instance.add_run(alive)
    storage = instance.event_log_storage
    storage.set_concurrency_slots(LLM_POOL, 2)
    for run in (killed, alive):
        assert storage.claim_concurrency_slot(LLM_POOL, run.run_id, "paper_questions").is_claimed

    # What the next `litpipe run` does before its runs.
    reopened = open_instance(settings.llm, settings.paths)

    assert reopened.get_run_by_id("killed-run").status == dg.DagsterRunStatus.FAILURE
    assert reopened.get_run_by_id("alive-run").status == dg.DagsterRunStatus.STARTED
    assert reopened.event_log_storage.get_concurrency_run_ids() == {"alive-run"}


@pytest.mark.slow
def test_ctrl_c_stops_litpipe_run_after_the_batch_being_built(
    tmp_path: Path, tiny_model: Path
) -> None:
    rows = DEMO_CSV.read_text(encoding="utf-8").splitlines(keepends=True)
    table = tmp_path / "thirty.csv"
    table.write_text("".join(rows[:31]), encoding="utf-8")  # the header and 30 papers
    command = "import sys; from litpipe.cli import main; sys.exit(main())"
    litpipe_run = subprocess.Popen(
        [sys.executable, "-c", command, "run", str(table), "--embedder", str(tiny_model)],
        # Six batches of five papers: the first batch's papers are printed once it is built.
        env={**litpipe_env(tmp_path / "home"), "LITPIPE_OPERATIONS__BATCH_SIZE": "5"},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert litpipe_run.stderr is not None
    printed = []
    for line in litpipe_run.stderr:
        printed.append(line)
        if line.startswith("[1/"):  # the first batch is built
            litpipe_run.send_signal(signal.SIGINT)
            break
    printed.append(litpipe_run.communicate(timeout=60)[1])
    output = "".join(printed)

    assert litpipe_run.returncode == 130, output
    assert "stopped on request" in output
    assert "FAILED" not in output
    built = [line for line in output.splitlines() if line.startswith("[")]
    assert 1 <= len(built) < 30
    assert not (tmp_path / "home" / "outputs" / "thirty" / "synthesis.html").exists()


# ---------------------------------------------------------------------------------------------
# Two processes embedding the same papers into one chunk table at once (issue 16, point 2).
# ---------------------------------------------------------------------------------------------

EMBEDDER_PAPERS = 20
EMBEDDER_CHUNKS_PER_PAPER = 10

# Each writer announces it is ready, waits for the test's "go" on stdin (so both write at once),
# then stores the papers one commit each, as the `chunk_embeddings` asset does.
_EMBEDDING_WRITER = """
import sys
from pathlib import Path
from litpipe.retrieval.store import ChunkStore
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.stub_agents import serve_every_agent
from litpipe_tests.stub_llm import StubLLM
from litpipe_tests.test_faults import embedder_papers

store = ChunkStore(Path(sys.argv[1]))
embedder = FakeEmbedder()
papers = embedder_papers()
print("ready", flush=True)
sys.stdin.readline()
for chunks in papers:
    store.embed_paper(chunks, embedder)
"""


def embedder_papers() -> list:
    from litpipe_tests.test_store import paper

    return [
        paper(
            f"paper{number:02d}",
            [
                f"Paper {number} passage {index} on enzyme {number * 31 + index} kinetics."
                for index in range(EMBEDDER_CHUNKS_PER_PAPER)
            ],
        )
        for number in range(EMBEDDER_PAPERS)
    ]


def _start_embedding_writer(db_dir: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", _EMBEDDING_WRITER, str(db_dir)],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_two_processes_embedding_the_same_papers_leave_one_row_per_chunk(tmp_path: Path) -> None:
    db_dir = tmp_path / "home" / "lancedb"
    writers = [_start_embedding_writer(db_dir) for _ in range(2)]
    try:
        for writer in writers:
            assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        for writer in writers:
            assert writer.stdin is not None
            writer.stdin.write("go\n")
            writer.stdin.flush()
        for writer in writers:
            _, stderr = writer.communicate(timeout=120)
            assert writer.returncode == 0, stderr
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()

    # Read with LanceDB itself: what the writers left, before any repair on open.
    rows = lancedb.connect(str(db_dir)).open_table(table_name(FakeEmbedder.embedder_id)).to_arrow()
    chunk_ids = rows.column("chunk_id").to_pylist()
    assert len(chunk_ids) == len(set(chunk_ids)) == EMBEDDER_PAPERS * EMBEDDER_CHUNKS_PER_PAPER
    text_of = {chunk.chunk_id: chunk.text for p in embedder_papers() for chunk in p.chunks}
    vectors = np.stack(rows.column("vector").to_numpy(zero_copy_only=False))
    expected = FakeEmbedder().encode([text_of[chunk_id] for chunk_id in chunk_ids])
    np.testing.assert_allclose(vectors, expected, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Stopping `litpipe backfill` and `litpipe eval` (issue 16, point 12): SIGTERM while a run's step
# waits for a model call.
# ---------------------------------------------------------------------------------------------

LITPIPE = "import sys; from litpipe.cli import main; sys.exit(main())"


def demo_table(path: Path, papers: int) -> Path:
    """The demo table's header and first `papers` rows."""
    rows = DEMO_CSV.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(rows[: papers + 1]), encoding="utf-8")
    return path


def stopped_in_its_first_model_call(
    arguments: list[str],
    env: dict[str, str],
    stub: StubLLM,
    stderr_file: Path,
    on_another_thread: bool = False,
) -> tuple[int, str]:
    """Runs `litpipe ARGUMENTS`, sends it SIGTERM once its first model call reaches the stub
    (which holds its replies for minutes: the command is then inside a run's step), and returns
    its exit status and what it printed on stderr. `on_another_thread`: the signal goes to a
    thread other than the main one, as the kernel may choose for one sent to the process."""
    called = threading.Event()
    stub.respond("stub", lambda body: called.set())
    with stderr_file.open("w", encoding="utf-8") as stderr:
        command = subprocess.Popen(
            [sys.executable, "-c", LITPIPE, *arguments], env=env, stderr=stderr
        )
    try:
        while not called.wait(0.5):
            assert command.poll() is None, stderr_file.read_text(encoding="utf-8")
        if on_another_thread:
            # kill(2) given a thread's id hands the signal to that thread when it can take it.
            threads = sorted(int(thread) for thread in os.listdir(f"/proc/{command.pid}/task"))
            os.kill(threads[-1], signal.SIGTERM)
        else:
            command.send_signal(signal.SIGTERM)
        try:
            command.wait(timeout=150)  # the rest of the run; a second model call would outlast it
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 150 s after SIGTERM; stderr:\n{stderr_file.read_text()}")
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    return command.returncode, stderr_file.read_text(encoding="utf-8")


@pytest.mark.slow
def test_sigterm_stops_a_backfill_in_its_first_batch_and_its_report_says_what_is_left(
    tmp_path: Path, tiny_model: Path
) -> None:
    table = demo_table(tmp_path / "four.csv", papers=4)
    home = tmp_path / "home"
    settings = Settings(home=home, ingest={"embedder": str(tiny_model)})
    paper_ids = list(
        register(settings.paths, open_instance(settings.llm, settings.paths), discover(table))
    )

    with StubLLM(latency_s=300, lifetime_s=600) as stub:
        arguments = ["backfill", "--batch", "2", "--embedder", str(tiny_model)]
        arguments += ["--model", "openai/stub", "--api-base", stub.url]
        code, output = stopped_in_its_first_model_call(
            arguments, litpipe_env(home), stub, tmp_path / "stderr.txt"
        )
        model_calls = stub.request_count

    assert code == 130, output
    assert "litpipe backfill: stopped on request: 0 batches finished" in output
    assert "batch 1/2 interrupted (2 papers not finished); 1 batch not started" in output
    assert "FAILED" not in output
    report = backfilling.BackfillReport.model_validate_json(
        backfilling.report_path(settings.paths, Embedder(str(tiny_model)).embedder_id).read_text()
    )
    assert report.stopped and report.unfinished_collections == ["four"]
    assert [(b.status, b.unfinished) for b in report.batches] == [
        ("interrupted", paper_ids[:2]),
        ("not_started", paper_ids[2:]),
    ]
    assert report.failed_papers == [] and report.papers_up_to_date == 0
    # Nothing started after the interrupted step: one model call, runs of the first batch only.
    assert model_calls == 1
    runs = open_instance(settings.llm, settings.paths).get_runs()
    assert {(run.tags.get(RANGE_START_TAG), run.tags.get(RANGE_END_TAG)) for run in runs} == {
        (paper_ids[0], paper_ids[1])
    }


@pytest.mark.slow
def test_sigterm_taken_on_another_thread_stops_eval_mais_in_a_question_and_asks_no_more(
    tmp_path: Path, tiny_model: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdf = Path(shutil.copy(PDFS_BY_SIZE[0], corpus))
    questions = ["Which Rev1 domain matters most?", "What does rev3 do?", "Which polymerase?"]
    dataset = tmp_path / "questions.jsonl"
    dataset.write_text(
        "".join(
            json.dumps({"id": f"q{n}", "question": text, "pdf_file": pdf.name}) + "\n"
            for n, text in enumerate(questions, 1)
        ),
        encoding="utf-8",
    )
    home = tmp_path / "home"

    with StubLLM(latency_s=300, lifetime_s=600) as stub:
        # The papers are built offline; the summaries' writer calls the stub.
        env = {
            **litpipe_env(home),
            "LITPIPE_LLM__AGENTS": json.dumps({"query_summary": {"model": "openai/stub"}}),
            "LITPIPE_LLM__API_BASE": stub.url,
        }
        arguments = ["eval", "mais", "--dataset", str(dataset), "--corpus", str(corpus)]
        code, output = stopped_in_its_first_model_call(
            [*arguments, "--embedder", str(tiny_model)],
            env,
            stub,
            tmp_path / "stderr.txt",
            on_another_thread=True,
        )
        model_calls = stub.request_count

    assert code == 130, output
    assert "q1: interrupted (stop requested)" in output
    assert (
        "litpipe eval mais: stopped on request: 0 questions answered, 0 failed, 1 interrupted; "
        "not asked: 2 questions; no report written"
    ) in output
    assert "FAILED" not in output
    assert not (home / "outputs" / "corpus" / "convergence.json").exists()
    # Nothing started after the interrupted step: one model call, one summary run.
    assert model_calls == 1
    runs = home_instance(home).get_runs()
    assert len([run for run in runs if run.job_name == "query_summary_job"]) == 1


def test_a_stop_signal_that_another_handler_took_still_counts_and_a_second_stops_at_once() -> None:
    with stop_on_signals("test") as stop_requested:
        assert not stop_requested()
        # As during a run: Dagster's handler takes the signal (between steps it only notes it).
        ours = signal.signal(signal.SIGTERM, lambda number, frame: None)
        os.kill(os.getpid(), signal.SIGTERM)
        signal.signal(signal.SIGTERM, ours)

        assert stop_requested()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.slow
def test_a_registered_evaluation_asked_to_stop_starts_no_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(home=tmp_path / "home")

    code = eval_command(settings, "tldr", TLDR_SAMPLE, None, None, stop_requested=lambda: True)

    assert code == 130
    assert "litpipe eval tldr: stopped on request: no run started" in capsys.readouterr().err
    assert open_instance(settings.llm, settings.paths).get_runs() == []
    assert not (tmp_path / "home" / "outputs" / "eval").exists()


# Model-calling steps and the `llm` pool: a run killed in one, a step waiting for a slot
# (issue 16, point 1).
# ---------------------------------------------------------------------------------------------


def start_run_with_model(
    home: Path, table: Path, tiny_model: Path, stub: StubLLM, **llm: str
) -> subprocess.Popen[str]:
    """`litpipe run` of the table with every agent calling the stub; `llm` settings as
    LITPIPE_LLM__*."""
    arguments = ["run", str(table), "--embedder", str(tiny_model)]
    model = ["--model", "openai/stub", "--api-base", stub.url]
    return subprocess.Popen(
        [sys.executable, "-c", LITPIPE, *arguments, *model],
        env={**litpipe_env(home), **{f"LITPIPE_LLM__{k.upper()}": v for k, v in llm.items()}},
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    """Polls `condition` until it holds; fails the test after `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not after {seconds} s: {what}"
        time.sleep(0.05)


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) a running process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def waiting_for_a_slot(instance: dg.DagsterInstance) -> set[str]:
    """The runs with a step waiting for a slot of the `llm` pool."""
    info = instance.event_log_storage.get_concurrency_info(LLM_POOL)
    return {step.run_id for step in info.pending_steps if step.assigned_timestamp is None}


def embedded(instance: dg.DagsterInstance) -> bool:
    """Whether a paper's chunk embeddings are stored: its last step before the model calls."""
    return bool(instance.fetch_materializations(dg.AssetKey("chunk_embeddings"), limit=1).records)


def hold_the_only_llm_slot(settings: Settings) -> dg.DagsterInstance:
    """Gives the `llm` pool one slot, held by a run of a live process (this one)."""
    instance = open_instance(settings.llm, settings.paths)
    holder = dg.DagsterRun(
        job_name="paper_pipeline",
        run_id="holder-run",
        status=dg.DagsterRunStatus.STARTED,
        tags=process_tags(),
    )
    instance.add_run(holder)
    storage = instance.event_log_storage
    storage.set_concurrency_slots(LLM_POOL, 1)
    assert storage.claim_concurrency_slot(LLM_POOL, holder.run_id, "paper_questions").is_claimed
    return instance


@pytest.mark.slow
def test_a_run_waiting_for_an_llm_slot_sleeps_and_stops_on_sigterm(
    tmp_path: Path, tiny_model: Path
) -> None:
    home = tmp_path / "home"
    instance = hold_the_only_llm_slot(Settings(home=home, llm={"pool_limit": 1}))
    with StubLLM() as stub:
        serve_every_agent(stub)
        litpipe_run = start_run_with_model(
            home, demo_table(tmp_path / "one.csv", 1), tiny_model, stub, pool_limit="1"
        )
        try:
            # Its paper's other steps done (the embeddings, the last not downstream of a model
            # call), all that is left to it is waiting.
            wait_until(
                lambda: waiting_for_a_slot(instance) and embedded(instance),
                120,
                "the run has nothing to do but wait for a slot",
            )
            started, used = time.monotonic(), cpu_seconds(litpipe_run.pid)
            time.sleep(2)  # the time measured, not a synchronisation
            share = (cpu_seconds(litpipe_run.pid) - used) / (time.monotonic() - started)
            print(f"waiting for a slot: {share:.0%} of a core")
            assert share < 0.2, f"the waiting run used {share:.0%} of a core"
            litpipe_run.send_signal(signal.SIGTERM)
            _, printed = litpipe_run.communicate(timeout=30)
        finally:
            if litpipe_run.poll() is None:
                litpipe_run.kill()
    assert litpipe_run.returncode == 130, printed
    assert "interrupted (stop requested)" in printed
    assert "stopped on request" in printed
    assert stub.request_count == 0  # no model was called without a slot
    assert waiting_for_a_slot(instance) == set()


@pytest.mark.slow
def test_a_step_gives_up_waiting_for_an_llm_slot_after_the_setting_and_says_why(
    tmp_path: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "home"
    instance = hold_the_only_llm_slot(Settings(home=home, llm={"pool_limit": 1}))
    serve_every_agent(stub_llm)
    monkeypatch.setenv("LITPIPE_LLM__POOL_LIMIT", "1")
    monkeypatch.setenv("LITPIPE_LLM__SLOT_WAIT_SECONDS", "1")
    table = demo_table(tmp_path / "one.csv", 1)
    arguments = ["run", str(table), "--home", str(home), "--embedder", str(tiny_model)]

    code = main([*arguments, "--model", "openai/stub", "--api-base", stub_llm.url])

    printed = capsys.readouterr().err
    failed = next(line for line in printed.splitlines() if line.startswith("[1/1]"))
    assert code == 1, printed
    assert re.search(
        r"FAILED: \w+: waited \d+ s for a slot of the `llm` pool \(limit 1, held by "
        rf"run holder-run \(pid {os.getpid()} on [^)]+\)\) and gave up \(llm.slot_wait_seconds\)",
        failed,
    ), failed
    assert "raise llm.pool_limit" in failed
    assert stub_llm.request_count == 0
    assert waiting_for_a_slot(instance) == set()


@pytest.mark.slow
def test_after_a_run_killed_in_a_model_call_the_next_run_gets_the_llm_slot_and_completes(
    tmp_path: Path, tiny_model: Path
) -> None:
    home = tmp_path / "home"
    table = demo_table(tmp_path / "one.csv", 1)
    with StubLLM() as stub:
        serve_every_agent(stub)
        stub.fail_next("hang", seconds=120)  # the first model call is never answered
        killed = start_run_with_model(home, table, tiny_model, stub, pool_limit="1")
        try:
            wait_until(lambda: stub.request_count > 0, 120, "the run calls a model")
        finally:
            killed.kill()  # SIGKILL, in its model-calling step: as the OOM killer would
            killed.communicate()
        # Read without open_instance, which would release the killed run already.
        instance = dg.DagsterInstance.from_config(str(home / "dagster"))
        (holder,) = instance.event_log_storage.get_concurrency_info(LLM_POOL).claimed_slots
        (killed_run,) = instance.get_runs(filters=dg.RunsFilter(tags={PID_TAG: str(killed.pid)}))
        assert killed_run.status == dg.DagsterRunStatus.STARTED
        assert holder.run_id == killed_run.run_id

        # Were the killed run's slot still held, its paper would fail after this wait, naming it.
        next_run = start_run_with_model(
            home, table, tiny_model, stub, pool_limit="1", slot_wait_seconds="30"
        )
        try:
            _, printed = next_run.communicate(timeout=240)
        finally:
            if next_run.poll() is None:
                next_run.kill()

    assert next_run.returncode == 0, printed
    (paper,) = [line for line in printed.splitlines() if line.startswith("[1/1]")]
    assert "FAILED" not in paper
    assert instance.get_run_by_id(killed_run.run_id).status == dg.DagsterRunStatus.FAILURE
    started = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
    assert instance.get_runs(filters=dg.RunsFilter(statuses=started)) == []
    assert instance.event_log_storage.get_concurrency_info(LLM_POOL).claimed_slots == []


# ---------------------------------------------------------------------------------------------
# Two `litpipe run` on overlapping sources at once: each partition built once, not twice.
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_runs_of_one_table_at_once_build_each_partition_once(
    tmp_path: Path, tiny_model: Path
) -> None:
    home = tmp_path / "home"
    table = demo_table(tmp_path / "three.csv", 3)
    command = [sys.executable, "-c", LITPIPE, "run", str(table), "--embedder", str(tiny_model)]
    runs = [
        subprocess.Popen(command, env=litpipe_env(home), stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    printed = [run.communicate(timeout=300)[1] for run in runs]

    assert [run.returncode for run in runs] == [0, 0], printed
    instance = dg.DagsterInstance.from_config(str(home / "dagster"))
    built: dict[tuple[str, str], int] = {}
    for key in instance.get_asset_keys():
        for record in instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key), limit=1000
        ).records:
            partition = record.asset_materialization.partition
            where = (key.to_user_string(), partition or "")
            built[where] = built.get(where, 0) + 1
    assert len({paper for _, paper in built if "." in paper}) == 3  # every paper was built
    assert {where: times for where, times in built.items() if times > 1} == {}
