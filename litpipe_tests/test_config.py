"""Every setting from the command line: `--set KEY=VALUE` and the named flags on every command,
`litpipe config` (each setting's value and where it came from) and `litpipe init` (a commented
litpipe.toml)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from litpipe.cli import main
from litpipe.config import commented_toml, settings_fields
from litpipe.settings import Settings
from litpipe_tests.stub_agents import serve_every_agent
from litpipe_tests.stub_llm import StubLLM


def config(capsys: pytest.CaptureFixture[str], *arguments: str) -> dict[str, tuple[str, str]]:
    """`litpipe config` printed: each setting's (value as JSON, source)."""
    assert main(["config", *arguments]) == 0
    printed: dict[str, tuple[str, str]] = {}
    for line in capsys.readouterr().out.splitlines():
        path, _, rest = line.partition(" = ")
        value, _, source = rest.rpartition("  # ")
        printed[path.strip()] = (value, source)
    return printed


def leaves(values: dict[str, object]) -> set[str]:
    """The dotted names of a settings dump: top-level values, and each group's."""
    return {
        f"{name}.{inner}" if inner else name
        for name, value in values.items()
        for inner in (value if isinstance(value, dict) else [""])
    }


@pytest.fixture(autouse=True)
def no_config_around(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No litpipe.toml of the working folder and no LITPIPE_ variable leaks into a test."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LITPIPE_CONFIG", raising=False)
    for name in [n for n in os.environ if n.upper().startswith("LITPIPE_")]:
        monkeypatch.delenv(name)


def test_config_lists_every_setting_and_each_has_a_description(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = config(capsys, "--home", str(tmp_path / "h"))
    every = leaves(Settings(home=tmp_path).model_dump(mode="json"))
    assert every == set(printed)
    assert all(source == "default" for path, (_, source) in printed.items() if path != "home")
    # The reference is generated from these: a setting without a description has none there.
    assert [s.path for s in settings_fields() if not s.field.description] == []


def test_each_value_names_its_source_in_the_order_settings_read_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "mine.toml"
    toml.write_text('preset = "fast"\n[retrieval]\ncandidates = 77\nrrf_k = 30\n', "utf-8")
    monkeypatch.setenv("LITPIPE_CONFIG", str(toml))
    monkeypatch.setenv("LITPIPE_RETRIEVAL__RRF_K", "45")
    printed = config(capsys, "--set", "synthesis.method=flat", "--set", "grading.blocking=true")
    assert printed["synthesis.method"] == ('"flat"', "flag")
    assert printed["grading.blocking"] == ("true", "flag")
    assert printed["retrieval.rrf_k"] == ("45", "environment")
    assert printed["retrieval.candidates"] == ("77", "toml")
    assert printed["synthesis.questions_per_style"] == ("1", "preset")
    assert printed["grading.support_threshold"][1] == "default"


def test_a_named_flag_wins_over_a_set_of_the_same_setting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    printed = config(capsys, "--set", "synthesis.method=flat", "--method", "relational")
    assert printed["synthesis.method"] == ('"relational"', "flag")
    printed = config(capsys, "--set", 'llm.agents={"synthesis": {"model": "gpt-4o"}}')
    assert json.loads(printed["llm.agents"][0])["synthesis"]["model"] == "gpt-4o"


@pytest.mark.parametrize(
    ("assignment", "said"),
    [
        ("synthesis.methd=flat", "no such setting; did you mean synthesis.method"),
        ("method=flat", "did you mean synthesis.method?"),
        ("synthesis.method=bogus", "synthesis.method: Input should be 'relational' or 'flat'"),
        ("retrieval.candidates=many", "retrieval.candidates: Input should be a valid integer"),
        ("synthesis.method", "expected KEY=VALUE"),
    ],
)
def test_a_bad_set_exits_2_in_one_line_naming_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], assignment: str, said: str
) -> None:
    home = tmp_path / "h"
    assert main(["run", str(tmp_path), "--home", str(home), "--set", assignment]) == 2
    printed = capsys.readouterr()
    (line,) = printed.err.strip().splitlines()
    assert line.startswith("litpipe run: ") and said in line
    assert not home.exists()


def test_init_writes_a_toml_that_loads_as_the_defaults_and_changes_one_line_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init"]) == 0
    assert "every setting, commented out" in capsys.readouterr().out
    written = tmp_path / "litpipe.toml"
    # Its tables are there for a user to fill, each empty.
    assert all(table == {} for table in tomllib.loads(written.read_text("utf-8")).values())
    assert {source for _, source in config(capsys).values()} == {"default"}
    text = written.read_text("utf-8")
    # Every setting is there with its environment variable, commented out at its default.
    for setting in settings_fields():
        assert setting.environment_name in text
    assert "# candidates = 100" in text and '# method = "relational"' in text
    written.write_text(text.replace('# method = "relational"', 'method = "flat"'), "utf-8")
    assert config(capsys)["synthesis.method"] == ('"flat"', "toml")
    # An existing file is kept unless told.
    assert main(["init"]) == 2
    assert "exists; --force replaces it" in capsys.readouterr().err
    assert main(["init", "--force"]) == 0 and written.read_text("utf-8") == commented_toml()


def test_run_with_set_method_flat_writes_the_synthesis_as_pipeline_1(
    tmp_path: Path, stub_llm: StubLLM, tiny_model: Path
) -> None:
    serve_every_agent(stub_llm)
    table = tmp_path / "src" / "two.csv"
    table.parent.mkdir()
    table.write_text(
        "id,title,abstract\n"
        'a1,Yeast proteins,"We profile ale yeast proteins across fermentation."\n'
        'a2,Yeast lipids,"We measure lager yeast lipids during fermentation."\n',
        "utf-8",
    )
    home = tmp_path / "home"
    model = ["--model", "openai/stub", "--api-base", stub_llm.url]
    arguments = ["run", str(table), "--home", str(home), "--embedder", str(tiny_model)]
    assert main([*arguments, *model, "--set", "synthesis.method=flat"]) == 0
    report = json.loads((home / "outputs" / "two" / "report.json").read_text())
    assert "synthesis_flat" in report["llm_calls_by_agent"]
    assert "synthesis" not in report["llm_calls_by_agent"]
