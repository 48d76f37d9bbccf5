"""`litpipe ui` serves the settings `litpipe run` would use with the same flags: the whole
resolved settings, in the file its code server (and the runs it launches) read, not a few of
them as environment variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from litpipe.cli import main
from litpipe.config import settings_fields
from litpipe.defs.definitions import build_definitions
from litpipe.defs.resources import LLMResource
from litpipe.settings import (
    SETTINGS_FILE_VARIABLE,
    CredentialsNotGiven,
    Settings,
    code_location_settings,
    read_resolved_settings,
    write_resolved_settings,
)
from litpipe.settings.groups import settings_groups

API_BASE = "http://canaryuser:CANARYSECRET@127.0.0.1:9/v1"
SHOWN_API_BASE = "http://canaryuser:***@127.0.0.1:9/v1"
# What the code server `dagster dev -m litpipe.defs.definitions` does first: import the module,
# which builds the definitions from the settings it finds. Printed: those settings as this
# process reads them, and the code version of every asset.
CODE_SERVER = """
import json
from litpipe.defs.definitions import defs
from litpipe.settings import code_location_settings
graph = defs.resolve_asset_graph()
print(json.dumps({
    "settings": code_location_settings().model_dump(mode="json"),
    "code_versions": {
        key.to_user_string(): graph.get(key).code_version for key in graph.get_all_asset_keys()
    },
}))
"""


@pytest.fixture(autouse=True)
def no_settings_around(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The commands run in a folder of their own with no litpipe.toml, no LITPIPE_ variable
    of the test's environment leaking in; that folder."""
    folder = tmp_path / "command"
    folder.mkdir()
    monkeypatch.chdir(folder)
    for name in [n for n in os.environ if n.upper().startswith("LITPIPE_")]:
        monkeypatch.delenv(name)
    return folder


def ui_launch(monkeypatch: pytest.MonkeyPatch, *flags: str) -> tuple[list[str], dict[str, str]]:
    """`litpipe ui FLAGS` up to its execve: the command it would exec, and its environment."""
    launched: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(
        "litpipe.commands.ui.os.execve", lambda path, argv, env: launched.append((argv, env))
    )
    assert main(["ui", *flags]) == 0
    ((argv, env),) = launched
    return argv, env


def run_settings(monkeypatch: pytest.MonkeyPatch, *flags: str) -> Settings:
    """The settings `litpipe run papers FLAGS` runs its graph with."""
    given: list[Settings] = []

    def record(settings: Settings, *_: object, **__: object) -> int:
        given.append(settings)
        return 0

    monkeypatch.setattr("litpipe.commands.run.run_command", record)
    assert main(["run", "papers", *flags]) == 0
    (settings,) = given
    return settings


def code_versions(settings: Settings) -> dict[str, str | None]:
    graph = build_definitions(**settings_groups(settings)).resolve_asset_graph()
    return {key.to_user_string(): graph.get(key).code_version for key in graph.get_all_asset_keys()}


def served(env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """What a code server started with `env` (and nothing else) in `cwd` serves."""
    done = subprocess.run(
        [sys.executable, "-c", CODE_SERVER],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    served: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return served


# Each flag `ui` takes that sets a setting, with a value other than its default, and the setting.
NAMED_FLAGS = {
    "--method": ("synthesis.method", "flat"),
    "--pattern": ("synthesis.pattern", "map_reduce"),
    "--answer-mode": ("synthesis.answer_mode", "multi_view"),
    "--model": ("llm.model", "openai/served"),
    "--api-base": ("llm.api_base", API_BASE),
    "--structured-output": ("llm.structured_output", "json_object"),
    "--preset": ("preset", "fast"),
}


@pytest.mark.parametrize(
    ("flags", "run_flags", "changed"),
    [
        pytest.param(
            ["--set", "synthesis.method=flat"],
            ["--method", "flat"],
            {"synthesis.method": "flat"},
            id="set",
        ),
        pytest.param(
            [
                *(item for flag, (_, value) in NAMED_FLAGS.items() for item in (flag, value)),
                *("--set", "retrieval.candidates=7"),
            ],
            None,  # the same flags
            {path: value for path, value in NAMED_FLAGS.values()} | {"retrieval.candidates": 7},
            id="named",
        ),
    ],
)
def test_the_code_server_serves_the_settings_litpipe_run_uses_with_the_same_flags(
    flags: list[str],
    run_flags: list[str] | None,
    changed: dict[str, object],
    tmp_path: Path,
    tiny_model: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The code location loaded as `dagster dev` loads it, in a process of its own given only
    the environment `litpipe ui` built, in another folder: every setting, and so the code
    version of every asset (the synthesis's among them), is what `litpipe run` would use."""
    common = ["--home", str(tmp_path / "home"), "--embedder", str(tiny_model)]
    _, env = ui_launch(monkeypatch, *common, *flags)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    server = served(env, elsewhere)

    run = run_settings(monkeypatch, *common, *(flags if run_flags is None else run_flags))
    assert {path: run.value(path) for path in changed} == changed
    assert server["settings"] == run.model_dump(mode="json")
    assert server["code_versions"] == code_versions(run)
    # The synthesis is the flat one: its code version is not the default relational one's.
    relational = run_settings(monkeypatch, *common)
    assert relational.synthesis.method == "relational"
    assert server["code_versions"]["synthesis"] != code_versions(relational)["synthesis"]


def test_the_ui_passes_its_port_and_hides_the_libraries_progress_bars_without_v(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The two flags of `ui` that are no setting: `--port` goes to `dagster dev`; without `-v`
    the code server and its runs show no progress bars of huggingface_hub and transformers."""
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    home = ["--home", str(tmp_path / "home")]

    argv, quiet = ui_launch(monkeypatch, *home, "--port", "3123")
    _, verbose = ui_launch(monkeypatch, *home, "-v")

    assert argv[1:] == ["dev", "-m", "litpipe.defs.definitions", "-p", "3123"]
    assert quiet["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in verbose


def every_setting_changed(folder: Path) -> Settings:
    """Settings with every setting of every group at a value other than its default."""
    return Settings(
        home=folder / "home",
        corpus_roots=[folder / "inbox", folder / "more"],
        dagster_home=folder / "dagster",
        preset="thorough",
        ingest={
            "embedder": "sentence-transformers/all-mpnet-base-v2",
            "max_pdf_pages": 40,
            "max_pdf_bytes": 1_000_000,
            "embedder_backend": "onnx",
            "embed_batch_size": 8,
            "embed_device": "cuda:1",
            "chunk_tokens": 128,
            "chunk_overlap_tokens": 16,
            "pdf_tables": False,
        },
        llm={
            "model": "openai/served",
            "api_base": "http://127.0.0.1:8000/v1",
            "structured_output": "json_schema",
            "temperature": 0.3,
            "max_tokens": 512,
            "context_tokens": 4096,
            "on_unusable": "fail",
            "concurrency": 2,
            "timeout_s": 900.0,
            "max_retries": 1,
            "breaker_failures": 7,
            "run_deadline_s": 3600.0,
            "cache": False,
            "budget_usd": 2.5,
            "rate_limits": {"openai": {"requests_per_minute": 500, "tokens_per_minute": 200_000}},
            "nightly_budget_usd": 10.0,
            "nightly_budget_day_start": 12,
            "agents": {
                "paper_questions": {
                    "model": "openai/bigger",
                    "temperature": 0.5,
                    "max_tokens": 300,
                    "context_tokens": 8192,
                    "structured_output": "prompt",
                }
            },
            "prompts_dir": folder / "prompts",
            "pool_limit": 1,
            "slot_wait_seconds": 60.0,
            "step_retries": 0,
            "step_retry_delay_s": 1.5,
        },
        retrieval={
            "evidence_scope": "all",
            "candidates": 40,
            "evidence_per_question": 5,
            "rrf_k": 60,
            "mmr_lambda": 0.5,
            "reranker": "cross-encoder",
            "cross_encoder_model": "cross-encoder/ms-marco-MiniLM-L-6-v2",
            "rerank_candidates": 30,
        },
        synthesis={
            "questions_per_style": 2,
            "answer_mode": "multi_view_answers",
            "cross_paper_questions": 4,
            "min_insights_per_paper": 2,
            "follow_up_questions": 2,
            "relationship_neighbours": 5,
            "method": "flat",
            "answer_chars": 300,
            "context_tokens": 6000,
            "pattern": "refine",
            "hierarchical_min_papers": 4,
        },
        grading={"support_threshold": 0.6, "partial_support_threshold": 0.4, "blocking": True},
        comparison={
            "max_aspects": 4,
            "aspects": ["organism", "method"],
            "cell_words": 15,
            "passages_per_aspect": 2,
        },
        related_work={
            "sentences": 5,
            "words": 120,
            "top_k": 3,
            "candidates": 10,
            "context_tokens": 4000,
            "search_queries": 0,
            "plan": "auto",
        },
        query_summary={
            "max_iterations": 4,
            "questions": 5,
            "context_tokens": 6000,
            "judge_parts": 2,
            "acus": 0,
        },
        operations={
            "lancedb_uri": "s3://bucket/lancedb",
            "sensor_batch_size": 5,
            "batch_size": 10,
            "max_concurrent_steps": 2,
        },
        zotero={
            "data_dir": folder / "Zotero",
            "collections": ["Reading/2024", "Theses"],
            "sync_interval_s": 3600,
        },
        questions=[{"collection": "Theses", "question": "What is new?", "id": "new"}],
    )


def test_every_setting_round_trips_through_the_file_whatever_the_reader_s_sources_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read back, the file gives the settings written, every one: the reader's environment
    and litpipe.toml, which say otherwise, add nothing (not even to a table, `llm.agents`)."""
    settings = every_setting_changed(tmp_path)
    default = Settings()
    assert [
        s.path for s in settings_fields() if settings.value(s.path) == default.value(s.path)
    ] == []
    path = write_resolved_settings(settings)
    monkeypatch.setenv("LITPIPE_SYNTHESIS__METHOD", "relational")
    monkeypatch.setenv("LITPIPE_LLM__AGENTS", '{"synthesis": {"model": "openai/other"}}')
    Path("litpipe.toml").write_text("[retrieval]\ncandidates = 3\n", encoding="utf-8")
    assert Settings().llm.agents.keys() == {"synthesis"}  # what a reader of its sources gets

    assert read_resolved_settings(path) == settings


def test_a_relative_path_is_served_as_the_folder_the_command_meant(
    no_settings_around: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative corpus root or prompts folder names a folder of the command's working
    directory: a process reading the file from another directory (the daemon, a pod) reads
    the same folders."""
    settings = Settings(
        home=tmp_path / "home", corpus_roots=[Path("papers")], llm={"prompts_dir": "prompts"}
    )
    path = write_resolved_settings(settings)
    monkeypatch.chdir(tmp_path)

    read = read_resolved_settings(path)

    assert read.corpus_roots == [no_settings_around / "papers"]
    assert read.llm.prompts_dir == no_settings_around / "prompts"


def test_an_api_base_s_password_reaches_the_code_server_and_its_runs_by_the_environment_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`litpipe ui --api-base http://user:password@...`: the settings file holds the URL as
    `user:***@`, the code server's environment holds it whole; the `llm` resource's config
    (every run's job snapshot) hides the password again, and a run's own process takes it from
    the environment it inherits (the config names the variable, `dg.EnvVar`). Without it there,
    both say which variable to set."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-CANARYKEY")
    _, env = ui_launch(
        monkeypatch, "--home", str(tmp_path), "--model", "openai/served", "--api-base", API_BASE
    )

    text = Path(env[SETTINGS_FILE_VARIABLE]).read_text("utf-8")
    assert "CANARYSECRET" not in text and "CANARYKEY" not in text
    assert json.loads(text)["llm"]["api_base"] == SHOWN_API_BASE
    assert env["LITPIPE_LLM__API_BASE"] == API_BASE
    # In the code server.
    for name in (SETTINGS_FILE_VARIABLE, "LITPIPE_LLM__API_BASE"):
        monkeypatch.setenv(name, env[name])
    settings = code_location_settings()
    assert (settings.llm.model, settings.llm.api_base) == ("openai/served", API_BASE)
    resource = LLMResource.of(settings.llm, settings.paths)
    config = resource.model_dump_json()
    assert "CANARYSECRET" not in config and f'"api_base":"{SHOWN_API_BASE}"' in resource.llm_json

    # A run's process: the resource's config names the variable, its value is the process's.
    @dg.asset
    def api_base_in_the_run(llm: LLMResource) -> str | None:
        return llm.settings().api_base

    run = dg.materialize([api_base_in_the_run], resources={"llm": resource})
    assert run.output_for_node("api_base_in_the_run") == API_BASE
    monkeypatch.delenv("LITPIPE_LLM__API_BASE")
    with pytest.raises(CredentialsNotGiven, match="set LITPIPE_LLM__API_BASE"):
        code_location_settings()
    with pytest.raises(dg.DagsterInvalidConfigError, match="LITPIPE_LLM__API_BASE"):
        dg.materialize([api_base_in_the_run], resources={"llm": resource})


def test_commands_serving_one_home_with_other_settings_each_keep_their_own_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two `litpipe ui` on one home, one `--method flat`: the runs each launches later read
    its settings, not the other's; the same settings again are the same file."""
    home = ["--home", str(tmp_path / "home")]

    _, flat = ui_launch(monkeypatch, *home, "--method", "flat")
    _, relational = ui_launch(monkeypatch, *home)
    _, flat_again = ui_launch(monkeypatch, *home, "--method", "flat")

    files = {Path(env[SETTINGS_FILE_VARIABLE]) for env in (flat, relational, flat_again)}
    assert len(files) == 2 and flat[SETTINGS_FILE_VARIABLE] == flat_again[SETTINGS_FILE_VARIABLE]
    assert read_resolved_settings(Path(flat[SETTINGS_FILE_VARIABLE])).synthesis.method == "flat"
    method = read_resolved_settings(Path(relational[SETTINGS_FILE_VARIABLE])).synthesis.method
    assert method == "relational"
    assert {path.parent for path in files} == {tmp_path / "home" / "dagster" / "litpipe_settings"}
    assert set(next(iter(files)).parent.iterdir()) == files  # no temporary file left behind


def test_a_reader_never_sees_half_a_file_while_others_write_it(tmp_path: Path) -> None:
    """Several processes may share one home: writers of the same settings replace the file
    whole, so a reader at any moment reads all of it."""
    settings = every_setting_changed(tmp_path)
    path = write_resolved_settings(settings)
    stop = threading.Event()

    def write() -> None:
        while not stop.is_set():
            write_resolved_settings(settings)

    writers = [threading.Thread(target=write) for _ in range(3)]
    for writer in writers:
        writer.start()
    try:
        reads = [read_resolved_settings(path) for _ in range(50)]
    finally:
        stop.set()
        for writer in writers:
            writer.join(timeout=10)
    assert all(read == settings for read in reads)


def test_without_the_variable_a_code_location_reads_its_own_sources(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A code location nobody handed a file (`dagster dev -w workspace.yaml`, a Kubernetes
    pod given LITPIPE_* variables) builds its settings from its environment, as before."""
    monkeypatch.setenv("LITPIPE_SYNTHESIS__METHOD", "flat")

    assert code_location_settings() == Settings()
    assert code_location_settings().synthesis.method == "flat"
