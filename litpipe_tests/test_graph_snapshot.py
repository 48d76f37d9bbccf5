"""The asset graph against its checked-in snapshot (data/graph_snapshot.json): a change to an
asset's key, group, partitions, upstream assets, checks, code-version inputs or automation
condition, or to a job, schedule or sensor, shows as a reviewed diff of that file.

The code-version inputs are the declared ones (agents, named stage versions, modules, output
schema, settings fields, embedder), not their hashes: editing a prompt changes no snapshot."""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import dagster as dg
import pytest

from litpipe.defs.definitions import build_definitions
from litpipe.defs.versions import DECLARED_CODE_VERSIONS
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups

SNAPSHOT = Path(__file__).parent / "data" / "graph_snapshot.json"
UPDATE = "LITPIPE_UPDATE_SNAPSHOT"


def partitions_name(partitions: dg.PartitionsDefinition | None) -> str | None:
    if partitions is None:
        return None
    if isinstance(partitions, dg.DynamicPartitionsDefinition):
        return f"dynamic: {partitions.name}"
    if isinstance(partitions, dg.TimeWindowPartitionsDefinition):
        return (
            f"time window: {partitions.cron_schedule} {partitions.timezone} "
            f"from {partitions.start:%Y-%m-%d}"
        )
    return type(partitions).__name__


def graph_snapshot(defs: dg.Definitions) -> dict[str, object]:
    graph = defs.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=dg.AssetKey.to_user_string):
        node = graph.get(key)
        name = key.to_user_string()
        declared = DECLARED_CODE_VERSIONS.get(name)
        assets[name] = {
            "group": node.group_name,
            "partitions": partitions_name(node.partitions_def),
            "upstream": sorted(parent.to_user_string() for parent in node.parent_keys),
            "checks": sorted(check.name for check in node.check_keys),
            "code_version_inputs": None if declared is None else declared.inputs(),
            # What Dagster's automation builds it on (litpipe/defs/automation.py), by its label.
            "automation_condition": node.automation_condition.get_label()
            if node.automation_condition is not None
            else None,
        }
    repository = defs.get_repository_def()
    return {
        "assets": assets,
        "jobs": {
            job.name: sorted(key.to_user_string() for key in job.selection.resolve(graph))
            # litpipe's jobs are all asset jobs (`define_asset_job`), each an asset selection.
            for job in sorted(defs.jobs or [], key=lambda job: job.name)
        },
        "schedules": {
            schedule.name: {
                "job": schedule.job_name,
                "cron": schedule.cron_schedule,
                "timezone": schedule.execution_timezone,
                "default_status": schedule.default_status.value,
            }
            for schedule in sorted(repository.schedule_defs, key=lambda s: s.name)
        },
        "sensors": {
            sensor.name: {
                "jobs": sorted(target.job_name for target in sensor.targets),
                # A sensor that asks for backfills targets assets, not a job.
                "assets": sorted(
                    key.to_user_string() for key in sensor.asset_selection.resolve(graph)
                )
                if sensor.asset_selection is not None
                else [],
                "minimum_interval_seconds": sensor.minimum_interval_seconds,
                "default_status": sensor.default_status.value,
            }
            for sensor in sorted(repository.sensor_defs, key=lambda s: s.name)
        },
    }


def test_the_asset_graph_matches_its_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    update = os.environ.get(UPDATE) == "1"
    # The offline defaults: no litpipe.toml, no LITPIPE_* variable of the machine running it.
    for variable in [name for name in os.environ if name.startswith("LITPIPE_")]:
        monkeypatch.delenv(variable)
    monkeypatch.chdir(tmp_path)
    found = graph_snapshot(
        build_definitions(**settings_groups(Settings(home=tmp_path / "home", corpus_roots=[])))
    )

    undeclared = [
        name for name, asset in found["assets"].items() if asset["code_version_inputs"] is None
    ]
    assert not undeclared, (
        f"{undeclared}: declare each asset's code version with `CodeVersion` "
        "(litpipe/defs/versions.py: `versioned_asset`, or `ModelStep` for a model step)"
    )
    text = json.dumps(found, indent=2, sort_keys=True) + "\n"
    if update:
        SNAPSHOT.write_text(text, encoding="utf-8")
        return
    expected = SNAPSHOT.read_text(encoding="utf-8") if SNAPSHOT.exists() else ""
    if text != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"{SNAPSHOT.name} (checked in)",
                tofile=f"{SNAPSHOT.name} (the graph now)",
            )
        )
        pytest.fail(
            f"The asset graph differs from its snapshot:\n{diff}\nIf the change is intended, "
            f"regenerate the snapshot with `{UPDATE}=1 pytest litpipe_tests/"
            "test_graph_snapshot.py` and commit it with the change, for review.",
            pytrace=False,
        )
