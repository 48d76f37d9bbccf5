"""What the Dagster UI shows a researcher who built two collections: each collection's check
results under its own collection (the checks of the collection assets are partitioned by
collection, so a second collection does not hide the first's), per-paper pages that open with
the paper's title and collections, and a table from paper id to title on the synthesis."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from litpipe.cli import main
from litpipe_tests.homes import home_instance

COLLECTIONS = {"alpha": "nitrogen uptake", "beta": "heat stress"}


def abstracts(folder: Path, name: str, topic: str) -> Path:
    table = folder / f"{name}.csv"
    table.write_text(
        "id,title,abstract\n"
        f'{name}1,{topic.title()} in yeast,"We study {topic} in yeast and report how it changes '
        'growth."\n'
        f'{name}2,{topic.title()} in barley,"We measure {topic} in barley and find it limits '
        'yield."\n',
        "utf-8",
    )
    return table


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> dg.DagsterInstance:
    folder = tmp_path_factory.mktemp("two-collections")
    home = folder / "home"
    for name, topic in COLLECTIONS.items():
        table = abstracts(folder, name, topic)
        assert main(["run", str(table), "--home", str(home), "--embedder", str(tiny_model)]) == 0
    return home_instance(home)


def test_each_collection_keeps_its_own_check_results(instance: dg.DagsterInstance) -> None:
    for check in ("support", "coverage"):
        history = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey("synthesis"), check), limit=10
        )
        assert {record.partition for record in history} == set(COLLECTIONS)
        for record in history:
            evaluation = record.event.dagster_event.event_specific_data  # type: ignore[union-attr]
            assert isinstance(evaluation, dg.AssetCheckEvaluation)
            assert evaluation.partition == record.partition


def test_a_paper_page_opens_with_its_title_and_collection(instance: dg.DagsterInstance) -> None:
    for asset in ("paper_document", "paper_questions", "paper_answers"):
        # A batch step records one materialization per run; each paper's metadata is its own.
        found = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=["alpha.alpha1"]),
            limit=1,
        ).records
        metadata = found[0].asset_materialization.metadata  # type: ignore[union-attr]
        assert list(metadata)[:2] == ["title", "collections"], (asset, list(metadata))
        assert metadata["title"].value == "Nitrogen Uptake in yeast"
        assert metadata["collections"].value == "alpha"


def test_the_synthesis_names_each_paper_id_by_its_title(instance: dg.DagsterInstance) -> None:
    found = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("synthesis"), asset_partitions=["beta"]),
        limit=1,
    ).records
    table = found[0].asset_materialization.metadata["paper_titles"].value  # type: ignore[union-attr]
    assert "| beta.beta1 | Heat Stress in yeast |" in str(table)
    assert "| beta.beta2 | Heat Stress in barley |" in str(table)
