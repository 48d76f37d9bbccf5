"""Each collection's check results are its own: the checks of the collection assets are
partitioned by collection, so that after a second collection is built the UI (and the instance)
still show the first one's results, each under its collection."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from litpipe.cli import main
from litpipe.runtime.runner import open_instance
from litpipe.settings import Settings


def abstracts(folder: Path, name: str, topic: str) -> Path:
    table = folder / f"{name}.csv"
    table.write_text(
        "id,title,abstract\n"
        f'{name}1,{topic} one,"We study {topic} in yeast and report how it changes growth."\n'
        f'{name}2,{topic} two,"We measure {topic} in barley and find it limits yield."\n',
        "utf-8",
    )
    return table


def test_two_collections_keep_their_own_check_results(tmp_path: Path, tiny_model: Path) -> None:
    home = tmp_path / "home"
    for name, topic in (("alpha", "nitrogen uptake"), ("beta", "heat stress")):
        table = abstracts(tmp_path, name, topic)
        command = ["run", str(table), "--home", str(home), "--embedder", str(tiny_model)]
        assert main(command) == 0
    instance = open_instance(Settings(home=home))
    for check in ("support", "coverage"):
        history = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey("synthesis"), check), limit=10
        )
        assert {record.partition for record in history} == {"alpha", "beta"}
        for record in history:
            evaluation = record.event.dagster_event.event_specific_data  # type: ignore[union-attr]
            assert isinstance(evaluation, dg.AssetCheckEvaluation)
            assert evaluation.partition == record.partition
