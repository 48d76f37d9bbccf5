"""Settings enter once: the CLI (and the code location) resolves them, and below it each function
takes the groups of settings it uses (`LLMSettings`, `RetrievalSettings`, ... and the home's
`HomePaths`), not the whole `Settings`. No Dagster resource carries the whole settings, nor a
JSON copy of them: a resource holds its own group.

The signatures are read from the source, as `test_layers` reads the imports."""

from __future__ import annotations

import ast
import importlib
import json
import os
import pkgutil
import re
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

import litpipe.defs
from litpipe.defs.definitions import build_definitions, served_groups
from litpipe.defs.resources import API_BASE_VARIABLE, LLMResource
from litpipe.settings import SETTINGS_FILE_VARIABLE, Settings
from litpipe.settings.groups import settings_groups

ROOT = Path(__file__).resolve().parents[1] / "litpipe"
WHOLE_SETTINGS = re.compile(r"settings: Settings\b")
# Issue 44 asks at most 40, none in defs/: the commands, the CLI and `config` hold the resolved
# settings (that is where they enter), so does the settings layer itself, and so do the few
# functions of runtime/ that the commands call to build the whole graph. The figure only goes
# down.
MOST_WHOLE_SETTINGS = 35
# runtime/'s functions that build the graph from every group (`build_definitions`): the rest of
# runtime/ takes the groups it reads.
RUNTIME_TAKING_THE_WHOLE = {"run_papers", "backfill", "ask_questions", "ask_collections"}


def whole_settings_parameters() -> Counter[str]:
    """Each module's parameters (and fields) typed the whole `Settings`, by its package."""
    found: Counter[str] = Counter()
    for path in sorted(ROOT.rglob("*.py")):
        count = len(WHOLE_SETTINGS.findall(path.read_text(encoding="utf-8")))
        if count:
            found[path.relative_to(ROOT).parts[0]] += count
    return found


def test_below_the_commands_functions_take_groups_of_settings_not_the_whole() -> None:
    found = whole_settings_parameters()
    assert sum(found.values()) <= MOST_WHOLE_SETTINGS, found
    assert found["defs"] == 0, found


def test_in_runtime_only_the_functions_building_the_whole_graph_take_the_whole_settings() -> None:
    taking = set()
    for path in sorted((ROOT / "runtime").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                isinstance(argument.annotation, ast.Name) and argument.annotation.id == "Settings"
                for argument in [*node.args.args, *node.args.kwonlyargs]
            ):
                taking.add(node.name)
    assert taking == RUNTIME_TAKING_THE_WHOLE
    assert whole_settings_parameters()["runtime"] == len(RUNTIME_TAKING_THE_WHOLE)


def test_the_count_sees_a_parameter_of_the_whole_settings() -> None:
    """The pattern the count looks for, as signatures write it."""
    source = "def f(settings: Settings, llm: LLMSettings) -> None: ...\nsettings: Settings | None"
    assert len(WHOLE_SETTINGS.findall(source)) == 2
    assert not WHOLE_SETTINGS.findall("def g(llm_settings: LLMSettings) -> None: ...")


def litpipe_resource_classes() -> list[type[dg.ConfigurableResource]]:
    for module in pkgutil.walk_packages(litpipe.defs.__path__, "litpipe.defs."):
        if module.name != "litpipe.defs.k8s_definitions":  # needs the k8s extra
            importlib.import_module(module.name)
    pending, found = list(dg.ConfigurableResource.__subclasses__()), []
    while pending:
        kind = pending.pop()
        pending.extend(kind.__subclasses__())
        if kind.__module__.startswith("litpipe."):
            found.append(kind)
    return found


def holds_whole_settings(value: object) -> bool:
    """Whether a config value is the settings model, or its JSON (several groups of it)."""
    if isinstance(value, Settings):
        return True
    if not isinstance(value, str):
        return False
    try:
        parsed = json.loads(value)
    except ValueError:
        return False
    groups = {"ingest", "llm", "retrieval", "synthesis", "grading"}
    return isinstance(parsed, dict) and len(groups & parsed.keys()) > 1


def test_no_resource_holds_the_whole_settings_or_their_json(tmp_path: Path) -> None:
    classes = litpipe_resource_classes()
    assert {"LLMResource", "RetrievalResource", "EmbedderResource"} <= {
        kind.__name__ for kind in classes
    }
    for kind in classes:
        for name, field in kind.model_fields.items():
            assert field.annotation is not Settings, f"{kind.__name__}.{name}"
            assert "settings" not in name, f"{kind.__name__}.{name}"
    # The values the graph's resources are built with: none is the settings' JSON.
    settings = Settings(home=tmp_path, llm={"model": "openai/x", "api_base": "http://h:1/v1"})
    for key, resource in build_definitions(**settings_groups(settings)).resources.items():
        if isinstance(resource, dg.ConfigurableResource):
            for name in type(resource).model_fields:
                assert not holds_whole_settings(getattr(resource, name)), f"{key}.{name}"


def test_the_check_sees_the_settings_json() -> None:
    assert holds_whole_settings(Settings().model_dump_json())
    assert not holds_whole_settings(Settings().llm.model_dump_json())


def test_a_code_location_of_its_own_puts_the_api_base_of_litpipe_toml_where_its_runs_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`dagster dev -w workspace.yaml` (or a Kubernetes code location), started without
    `litpipe ui`: the api base with its password only in litpipe.toml. The code location puts it
    in its environment, which its steps and the runs it launches read the `dg.EnvVar` from."""
    url = "http://user:secret@127.0.0.1:9/v1"
    (tmp_path / "litpipe.toml").write_text(f'[llm]\nmodel = "openai/x"\napi_base = "{url}"\n')
    monkeypatch.chdir(tmp_path)
    for variable in [name for name in os.environ if name.startswith("LITPIPE_")]:
        monkeypatch.delenv(variable)
    monkeypatch.setenv("LITPIPE_HOME", str(tmp_path / "home"))
    # Set, then removed: the test's end removes what the code location puts there.
    monkeypatch.setenv(API_BASE_VARIABLE, "")
    monkeypatch.delenv(API_BASE_VARIABLE)
    assert SETTINGS_FILE_VARIABLE not in os.environ

    groups = served_groups()
    assert os.environ[API_BASE_VARIABLE] == url
    resource = build_definitions(**groups).resources["llm"]
    assert isinstance(resource, LLMResource)
    # The config shows the password as ***; the step's process finds the whole URL there.
    assert "secret" not in resource.llm_json
    resolved = LLMResource(
        llm_json=resource.llm_json,
        api_base_with_credentials=os.environ[API_BASE_VARIABLE],
        home=resource.home,
    )
    assert resolved.settings().api_base == url


def test_a_code_location_keeps_an_api_base_its_environment_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "http://user:given@127.0.0.1:9/v1"
    monkeypatch.chdir(tmp_path)
    for variable in [name for name in os.environ if name.startswith("LITPIPE_")]:
        monkeypatch.delenv(variable)
    monkeypatch.setenv("LITPIPE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(API_BASE_VARIABLE, url)
    assert served_groups()["llm"].api_base == url
    assert os.environ[API_BASE_VARIABLE] == url
