"""A stage is found by its name: its asset, group, agent, prompt and test file share it, so
`git ls-files | grep <stage>` lists where it lives (docs/development.md, "A stage is found by
its name")."""

from __future__ import annotations

import inspect
import subprocess
from pathlib import Path

import dagster as dg
import pytest

from litpipe.defs.definitions import build_definitions
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups

ROOT = Path(__file__).resolve().parents[1]
# The table of docs/development.md: each must be found by its name as an asset, an agent, a
# prompt and a test.
STAGES = [
    "paper_questions",
    "question_evidence",
    "relationship_analysis",
    "synthesis",
    "related_work",
]
# Groups that gather stages of one kind rather than being named after a stage.
FAMILIES = {"ingest", "evaluation"}


def tracked_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0:  # not a git checkout (an unpacked sdist): every file counts
        return [str(path.relative_to(ROOT)) for path in ROOT.rglob("*") if path.is_file()]
    return listed.stdout.split()


@pytest.mark.parametrize("stage", STAGES)
def test_grep_for_a_stage_finds_its_asset_agent_prompt_and_test(stage: str) -> None:
    found = [path for path in tracked_files() if stage in path]
    kinds = {
        "asset": f"litpipe/defs/assets/{stage}.py",
        "agent": f"litpipe/agents/{stage}",
        "prompt": f"litpipe/prompts/{stage}",
        "test": f"litpipe_tests/test_{stage}",
    }
    missing = [
        kind for kind, prefix in kinds.items() if not any(p.startswith(prefix) for p in found)
    ]
    assert not missing, f"`git ls-files | grep {stage}` finds no {', '.join(missing)}: {found}"


def test_each_asset_is_defined_in_the_module_named_as_it_or_as_its_group(tmp_path: Path) -> None:
    defs = build_definitions(**settings_groups(Settings(home=tmp_path, corpus_roots=[])))
    graph = defs.resolve_asset_graph()
    misplaced = []
    for assets_def in defs.assets or []:
        if not isinstance(assets_def, dg.AssetsDefinition):  # a spec: reported by a command
            continue
        module = Path(inspect.getfile(assets_def.op.compute_fn.decorated_fn)).stem  # type: ignore[union-attr]
        for key in assets_def.keys:
            name, group = key.to_user_string(), graph.get(key).group_name
            if module not in {name, group}:
                misplaced.append(f"{name} (group {group}) in {module}.py")
    assert not misplaced, misplaced


def test_each_group_is_named_as_one_of_its_assets_or_is_a_family(tmp_path: Path) -> None:
    graph = build_definitions(
        **settings_groups(Settings(home=tmp_path, corpus_roots=[]))
    ).resolve_asset_graph()
    members: dict[str, set[str]] = {}
    for key in graph.get_all_asset_keys():
        members.setdefault(graph.get(key).group_name, set()).add(key.to_user_string())
    unnamed = {group: names for group, names in members.items() if group not in names | FAMILIES}
    assert not unnamed, unnamed
