"""Settings grouped by what they configure: nested names from code, the environment and
litpipe.toml, a name of no setting refused with the nearest ones (the flat names from before the
groups among them); presets below them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from litpipe import cli
from litpipe.agents.asker import Asker
from litpipe.defs.resources import LLMResource
from litpipe.defs.versions import CodeVersion, code_version
from litpipe.settings import (
    LLMSettings,
    Settings,
    UnknownSettingError,
    preset_names,
    preset_values,
)
from litpipe.settings.groups import settings_groups
from litpipe.settings.routes import agent_names
from litpipe.validation import validation_problems


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The litpipe.toml these settings read (absent until a test writes it)."""
    path = tmp_path / "litpipe.toml"
    monkeypatch.setenv("LITPIPE_CONFIG", str(path))
    return path


def test_nested_names_from_the_environment_and_toml_merge_within_a_group(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config.write_text('[llm]\nmodel = "openai/x"\n[retrieval]\nreranker = "debate"\n', "utf-8")
    monkeypatch.setenv("LITPIPE_LLM__API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LITPIPE_LLM__AGENTS__PAPER_QUESTIONS__MODEL", "gpt-4o")
    monkeypatch.setenv("LITPIPE_RETRIEVAL__CANDIDATES", "42")
    settings = Settings(home=tmp_path)
    assert settings.llm.model == "openai/x"  # TOML and environment merge within a group
    assert settings.llm.api_base == "http://127.0.0.1:9/v1"
    assert settings.llm.agents["paper_questions"].model == "gpt-4o"
    assert (settings.retrieval.reranker, settings.retrieval.candidates) == ("debate", 42)


@pytest.mark.parametrize(
    ("toml", "refused", "meant"),
    [
        # A flat name from before the settings were grouped.
        ('llm_model = "openai/x"\n', "llm_model", "llm.model"),
        ("evaluation_blocking = true\n", "evaluation_blocking", "grading.blocking"),
        ("mais_acus = true\n", "mais_acus", "query_summary.acus"),
        ('[ingest]\nembeder = "my-model"\n', "ingest.embeder", "ingest.embedder"),
        # An old name within its group.
        (
            "[operations]\nbackfill_batch_size = 10\n",
            "operations.backfill_batch_size",
            "operations.batch_size",
        ),
    ],
)
def test_a_toml_key_naming_no_setting_is_refused_naming_the_file_and_the_nearest(
    tmp_path: Path, config: Path, toml: str, refused: str, meant: str
) -> None:
    config.write_text(toml, "utf-8")
    with pytest.raises(UnknownSettingError) as error:
        Settings(home=tmp_path)
    assert str(error.value).startswith(
        f"{config}: {refused}: no such setting; did you mean {meant}"
    )
    # A name no setting is near is refused too, saying where they are listed.
    config.write_text("zzz = 1\n", "utf-8")
    with pytest.raises(UnknownSettingError, match=r"zzz: no such setting \(`litpipe config`"):
        Settings(home=tmp_path)


@pytest.mark.parametrize(
    ("agent", "meant"),
    [("questions", "paper_questions"), ("cross_questions", "cross_paper_questions")],
)
def test_a_route_for_no_agent_is_refused_naming_the_nearest_agents(
    tmp_path: Path, config: Path, agent: str, meant: str
) -> None:
    with pytest.raises(ValidationError) as error:
        Settings(home=tmp_path, llm={"agents": {agent: {"model": "gpt-4o"}}})
    said = validation_problems(error.value)
    assert said.startswith(f"llm.agents: no agent is named {agent!r}; did you mean ")
    assert meant in said
    # No agent near the name: every agent is listed.
    with pytest.raises(ValidationError, match=r"no agent is named 'zzz' \(the agents: .*"):
        Settings(home=tmp_path, llm={"agents": {"zzz": {"model": "gpt-4o"}}})
    assert set(agent_names()) >= {"paper_questions", "plain_summary", "relationships"}


def test_a_group_given_as_a_model_keeps_what_the_environment_sets_in_it(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITPIPE_LLM__API_BASE", "http://127.0.0.1:9/v1")
    settings = Settings(home=tmp_path, llm=LLMSettings(model="openai/x"))
    assert (settings.llm.model, settings.llm.api_base) == ("openai/x", "http://127.0.0.1:9/v1")


def test_init_beats_environment_beats_toml_beats_preset_beats_default(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `retrieval.candidates` given by each source; `fast` makes it 50.
    env = "LITPIPE_RETRIEVAL__CANDIDATES"
    init: dict[str, Any] = {"retrieval": {"candidates": 80}}

    def candidates(**values: Any) -> int:
        return Settings(home=tmp_path, **values).retrieval.candidates

    config.write_text('preset = "fast"\n[retrieval]\ncandidates = 60\n', "utf-8")
    monkeypatch.setenv(env, "70")
    assert candidates(**init) == 80
    assert candidates() == 70
    monkeypatch.delenv(env)
    assert candidates() == 60
    config.write_text('preset = "fast"\n', "utf-8")
    assert candidates() == 50
    config.unlink()
    assert candidates() == 100


@pytest.mark.parametrize("name", ["fast", "offline", "thorough"])
def test_each_preset_sets_its_values_and_an_explicit_value_wins(
    tmp_path: Path, config: Path, name: str
) -> None:
    preset = Settings(home=tmp_path, preset=name)
    for group, values in preset_values(name).items():
        assert getattr(preset, group).model_dump(include=set(values)) == values
    mode = "single" if preset.synthesis.answer_mode == "multi_view" else "multi_view"
    explicit = Settings(home=tmp_path, preset=name, synthesis={"answer_mode": mode})
    assert explicit.synthesis.answer_mode == mode
    # The rest of the group still comes from the preset.
    assert explicit.synthesis.questions_per_style == preset.synthesis.questions_per_style


def test_presets_differ_as_their_comments_say(tmp_path: Path, config: Path) -> None:
    assert preset_names() == ["fast", "offline", "thorough"]
    fast, thorough = (Settings(home=tmp_path, preset=name) for name in ("fast", "thorough"))
    offline = Settings(home=tmp_path, preset="offline", llm={"api_base": "http://x/v1"})
    assert offline.route("synthesis").offline
    assert (fast.retrieval.reranker, fast.synthesis.answer_mode) == ("none", "single")
    assert fast.ingest.embedder_backend == "model2vec"  # the fast tier of embedding
    assert thorough.retrieval.reranker in {"relevance", "debate"}
    assert thorough.synthesis.answer_mode == "multi_view"
    default = Settings(home=tmp_path)
    assert fast.retrieval.candidates < default.retrieval.candidates < thorough.retrieval.candidates
    assert (
        fast.query_summary.max_iterations
        < default.query_summary.max_iterations
        < thorough.query_summary.max_iterations
    )


def test_a_preset_is_named_by_the_environment_or_toml(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config.write_text('preset = "thorough"\n', "utf-8")
    assert Settings(home=tmp_path).synthesis.answer_mode == "multi_view"
    monkeypatch.setenv("LITPIPE_PRESET", "fast")  # the environment beats litpipe.toml
    assert Settings(home=tmp_path).retrieval.candidates == 50


def test_an_unknown_preset_fails_naming_the_presets(tmp_path: Path, config: Path) -> None:
    with pytest.raises(
        ValidationError, match="unknown preset 'quick': the presets are fast, offline, thorough"
    ):
        Settings(home=tmp_path, preset="quick")


def test_the_cli_preset_reaches_the_run_settings(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given: list[Settings] = []

    def run_command(settings: Settings, *args: object, **kwargs: object) -> int:
        given.append(settings)
        return 0

    monkeypatch.setattr("litpipe.commands.run.run_command", run_command)
    arguments = ["run", str(tmp_path), "--home", str(tmp_path / "home"), "--preset", "thorough"]
    assert cli.main([*arguments, "--model", "openai/x"]) == 0
    (settings,) = given
    assert (settings.preset, settings.llm.model) == ("thorough", "openai/x")
    assert (settings.synthesis.answer_mode, settings.retrieval.candidates) == ("multi_view", 200)
    # What the run's model steps read: the `llm` settings their Dagster resource carries.
    assert LLMResource.of(settings.llm, settings.paths).settings().model == "openai/x"


def test_the_cli_refuses_an_unknown_preset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as usage:
        cli.main(["run", str(tmp_path), "--preset", "quick"])
    assert usage.value.code == 2
    error = capsys.readouterr().err
    assert "argument --preset: invalid choice: 'quick'" in error
    assert all(name in error for name in ("fast", "offline", "thorough"))


def test_a_code_version_hashes_each_setting_under_its_dotted_name(
    tmp_path: Path, config: Path
) -> None:
    code = CodeVersion(settings=("retrieval.candidates", "synthesis.questions_per_style"))
    nested = Settings(home=tmp_path, retrieval={"candidates": 7})
    hashed = {"retrieval.candidates": 7, "synthesis.questions_per_style": 3}
    assert code.of(settings_groups(nested), Asker(nested.llm)) == code_version([], None, **hashed)
    default = Settings(home=tmp_path)
    assert code.of(settings_groups(default), Asker(default.llm)) != code_version([], None, **hashed)
