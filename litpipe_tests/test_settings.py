"""Settings grouped by what they configure: nested names from code, the environment and
litpipe.toml; the old flat names, each with one deprecation warning; presets below them all."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from litpipe import cli
from litpipe.agents.asker import Asker
from litpipe.defs.resources import LLMResource
from litpipe.defs.versions import CodeVersion, code_version
from litpipe.settings import (
    FLAT_NAMES,
    FlatSettingWarning,
    LLMSettings,
    Settings,
    preset_names,
    preset_values,
)


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The litpipe.toml these settings read (absent until a test writes it)."""
    path = tmp_path / "litpipe.toml"
    monkeypatch.setenv("LITPIPE_CONFIG", str(path))
    return path


def deprecations(record: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, FlatSettingWarning)]


def test_flat_keywords_land_in_their_groups_with_one_warning_each(
    tmp_path: Path, config: Path
) -> None:
    with pytest.warns(DeprecationWarning) as record:
        settings = Settings(home=tmp_path, llm_model="openai/x", retrieval_candidates=7)
    assert (settings.llm.model, settings.retrieval.candidates) == ("openai/x", 7)
    assert sorted(deprecations(record)) == [
        "pass llm={'model': ...}, not llm_model=... (the flat name 'llm_model' is deprecated)",
        "pass retrieval={'candidates': ...}, not retrieval_candidates=... (the flat name "
        "'retrieval_candidates' is deprecated)",
    ]


def test_flat_environment_variables_land_in_their_groups_with_one_warning_each(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITPIPE_MAIS_MAX_ITERATIONS", "4")
    monkeypatch.setenv("LITPIPE_AGENTS", '{"paper_questions": {"model": "gpt-4o"}}')
    with pytest.warns(DeprecationWarning) as record:
        settings = Settings(home=tmp_path)
    assert settings.query_summary.max_iterations == 4
    assert settings.llm.agents["paper_questions"].model == "gpt-4o"
    assert sorted(deprecations(record)) == [
        "set LITPIPE_LLM__AGENTS, not LITPIPE_AGENTS (the flat name 'agents' is deprecated)",
        "set LITPIPE_QUERY_SUMMARY__MAX_ITERATIONS, not LITPIPE_MAIS_MAX_ITERATIONS (the flat "
        "name 'mais_max_iterations' is deprecated)",
    ]


def test_a_route_under_an_agents_old_name_reaches_it_with_a_warning(
    tmp_path: Path, config: Path
) -> None:
    with pytest.warns(DeprecationWarning) as record:
        settings = Settings(home=tmp_path, llm={"agents": {"questions": {"model": "gpt-4o"}}})
    assert settings.route("paper_questions").model == "gpt-4o"
    assert "questions" not in settings.llm.agents
    assert deprecations(record) == [
        "llm.agents.paper_questions (the agent 'questions' is now named 'paper_questions')"
    ]


def test_flat_toml_keys_land_in_their_groups_with_one_warning_each(
    tmp_path: Path, config: Path
) -> None:
    config.write_text('embedder = "my-model"\nevaluation_blocking = true\n', "utf-8")
    with pytest.warns(DeprecationWarning) as record:
        settings = Settings(home=tmp_path)
    assert (settings.ingest.embedder, settings.grading.blocking) == ("my-model", True)
    assert sorted(deprecations(record)) == [
        f"set blocking under [grading] in {config}, not evaluation_blocking (the flat name "
        "'evaluation_blocking' is deprecated)",
        f"set embedder under [ingest] in {config}, not embedder (the flat name 'embedder' is "
        "deprecated)",
    ]


def test_nested_names_from_the_environment_and_toml_warn_of_nothing(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config.write_text('[llm]\nmodel = "openai/x"\n[retrieval]\nreranker = "debate"\n', "utf-8")
    monkeypatch.setenv("LITPIPE_LLM__API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LITPIPE_LLM__AGENTS__PAPER_QUESTIONS__MODEL", "gpt-4o")
    monkeypatch.setenv("LITPIPE_RETRIEVAL__CANDIDATES", "42")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FlatSettingWarning)
        settings = Settings(home=tmp_path)
    assert settings.llm.model == "openai/x"  # TOML and environment merge within a group
    assert settings.llm.api_base == "http://127.0.0.1:9/v1"
    assert settings.llm.agents["paper_questions"].model == "gpt-4o"
    assert (settings.retrieval.reranker, settings.retrieval.candidates) == ("debate", 42)


def test_a_group_given_as_a_model_keeps_what_the_environment_sets_in_it(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITPIPE_LLM__API_BASE", "http://127.0.0.1:9/v1")
    settings = Settings(home=tmp_path, llm=LLMSettings(model="openai/x"))
    assert (settings.llm.model, settings.llm.api_base) == ("openai/x", "http://127.0.0.1:9/v1")


# Where `retrieval.candidates` is given, by source, flat or nested; `fast` makes it 50.
SPELLINGS = {
    "nested": {"init": "nested", "env": "nested", "toml": "nested"},
    "flat": {"init": "flat", "env": "flat", "toml": "flat"},
    "mixed": {"init": "nested", "env": "flat", "toml": "nested"},
}


@pytest.mark.parametrize("spelling", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_init_beats_environment_beats_toml_beats_preset_beats_default(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch, spelling: dict[str, str]
) -> None:
    toml = (
        "retrieval_candidates = 60\n"
        if spelling["toml"] == "flat"
        else "[retrieval]\ncandidates = 60\n"
    )
    env = (
        "LITPIPE_RETRIEVAL_CANDIDATES"
        if spelling["env"] == "flat"
        else ("LITPIPE_RETRIEVAL__CANDIDATES")
    )
    init: dict[str, Any] = (
        {"retrieval_candidates": 80}
        if spelling["init"] == "flat"
        else {"retrieval": {"candidates": 80}}
    )

    def candidates(**values: Any) -> int:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FlatSettingWarning)
            return Settings(home=tmp_path, **values).retrieval.candidates

    config.write_text(f'preset = "fast"\n{toml}', "utf-8")
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


def test_a_code_version_is_the_same_from_flat_or_nested_names_and_as_before(
    tmp_path: Path, config: Path
) -> None:
    code = CodeVersion(settings=("retrieval.candidates", "synthesis.questions_per_style"))
    nested = Settings(home=tmp_path, retrieval={"candidates": 7})
    with pytest.warns(DeprecationWarning):
        flat = Settings(home=tmp_path, retrieval_candidates=7)
    assert code.of(nested, Asker(nested.llm)) == code.of(flat, Asker(flat.llm))
    # Hashed under the names the settings had before they were grouped: an upgrade stales no
    # asset for the settings' sake.
    before = code_version([], None, retrieval_candidates=7, questions_per_style=3)
    assert code.of(nested, Asker(nested.llm)) == before
    default = Settings(home=tmp_path)
    assert code.of(default, Asker(default.llm)) != before


def test_every_grouped_setting_has_its_flat_name() -> None:
    grouped = {
        f"{group}.{name}"
        for group, field in Settings.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
        for name in field.annotation.model_fields
    }
    assert grouped == set(FLAT_NAMES.values())
