"""Each collection's check results are its own: the checks of the collection assets are
partitioned by collection, so that after a second collection is built the UI (and the instance)
still show the first one's results, each under its collection. A check that could not run
(coherence, offline) is not run there, not passed: Dagster resolves it as skipped, the asset's
metadata and `report.json` say why."""

from __future__ import annotations

import asyncio
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.loader import LoadingContextForTest
from dagster._core.storage.asset_check_execution_record import (
    AssetCheckExecutionRecordStatus,
    AssetCheckExecutionResolvedStatus,
)

from litpipe.cli import main
from litpipe.defs.check_results import SKIPPED_CHECKS, _report, latest_check_results
from litpipe.defs.definitions import build_definitions
from litpipe.defs.jobs import collection_pipeline
from litpipe.runtime.execution import QUIET_RUN_CONFIG
from litpipe.runtime.runner import open_instance
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.homes import home_instance

COLLECTIONS = ("alpha", "beta")
COHERENCE = dg.AssetCheckKey(dg.AssetKey("synthesis"), "coherence")


def abstracts(folder: Path, name: str, topic: str) -> Path:
    table = folder / f"{name}.csv"
    table.write_text(
        "id,title,abstract\n"
        f'{name}1,{topic} one,"We study {topic} in yeast and report how it changes growth."\n'
        f'{name}2,{topic} two,"We measure {topic} in barley and find it limits yield."\n',
        "utf-8",
    )
    return table


@pytest.fixture(scope="module")
def two_collections(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    """A home where `litpipe run` built two collections of two abstracts each, offline."""
    root = tmp_path_factory.mktemp("two-collections")
    home = root / "home"
    for name, topic in zip(COLLECTIONS, ("nitrogen uptake", "heat stress"), strict=True):
        table = abstracts(root, name, topic)
        command = ["run", str(table), "--home", str(home), "--embedder", str(tiny_model)]
        assert main(command) == 0
    return home


def test_two_collections_keep_their_own_check_results(two_collections: Path) -> None:
    instance = home_instance(two_collections)
    for check in ("support", "coverage"):
        history = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey("synthesis"), check), limit=10
        )
        assert {record.partition for record in history} == {"alpha", "beta"}
        for record in history:
            evaluation = record.event.dagster_event.event_specific_data  # type: ignore[union-attr]
            assert isinstance(evaluation, dg.AssetCheckEvaluation)
            assert evaluation.partition == record.partition


def test_a_check_that_could_not_run_is_skipped_with_why_not_passed(
    two_collections: Path, tiny_model: Path
) -> None:
    settings = Settings(home=two_collections, ingest={"embedder": str(tiny_model)})
    instance = open_instance(settings.llm, settings.paths)
    defs = build_definitions(**settings_groups(settings))
    history = instance.event_log_storage.get_asset_check_execution_history(COHERENCE, limit=10)
    assert {record.partition for record in history} == set(COLLECTIONS)
    for record in history:
        # Planned and never evaluated, in a run that succeeded: the UI's "skipped".
        assert record.status == AssetCheckExecutionRecordStatus.PLANNED
        resolved = asyncio.run(record.resolve_status(LoadingContextForTest(instance)))
        assert resolved == AssetCheckExecutionResolvedStatus.SKIPPED
    for collection in COLLECTIONS:
        materialization = instance.fetch_materializations(
            dg.AssetRecordsFilter(dg.AssetKey("synthesis"), asset_partitions=[collection]),
            limit=1,
        ).records[0]
        metadata = materialization.asset_materialization.metadata  # type: ignore[union-attr]
        why = metadata[SKIPPED_CHECKS].value
        assert list(why) == ["coherence"] and "needs a model" in why["coherence"]
        reports = {(r.asset, r.check): r for r in latest_check_results(instance, defs, collection)}
        for asset, what in (("synthesis", "expert synthesis"), ("plain_summary", "plain")):
            coherence = reports[(asset, "coherence")]
            assert coherence.passed is None and coherence.verdict() == "skipped"
            assert coherence.description.startswith(f"coherence of the {what}")
            assert reports[(asset, "support")].passed  # the checks that ran report as before
        assert reports[("synthesis", "coverage")].verdict() == "passed"


def test_a_check_launched_without_its_asset_is_refused_saying_why(
    two_collections: Path, tiny_model: Path
) -> None:
    """The UI offers to run a check of a subsettable asset alone; the step refuses it."""
    settings = Settings(home=two_collections, ingest={"embedder": str(tiny_model)})
    instance = open_instance(settings.llm, settings.paths)
    defs = build_definitions(**settings_groups(settings))
    job = defs.resolve_job_def(collection_pipeline.name).get_subset(
        asset_selection=set(), asset_check_selection={COHERENCE}
    )

    result = job.execute_in_process(
        instance=instance,
        tags={"dagster/partition": COLLECTIONS[0]},
        run_config=QUIET_RUN_CONFIG,
        raise_on_error=False,
    )

    assert not result.success
    (failure,) = [event for event in result.all_events if event.is_step_failure]
    assert failure.step_failure_data.user_failure_data is not None
    assert failure.step_failure_data.error is not None
    message = failure.step_failure_data.error.message
    assert "the checks of synthesis (coherence) grade what it writes" in message
    assert "materialize synthesis" in message


def test_a_check_a_home_recorded_as_passed_but_skipped_is_reported_skipped() -> None:
    """Before a check that could not run went unreported, it was recorded as passed, its
    description `skipped: <why>`: such a home's report says skipped, with why."""

    def evaluation(passed: bool, description: str) -> dg.AssetCheckEvaluation:
        return dg.AssetCheckEvaluation(
            asset_key=COHERENCE.asset_key,
            check_name=COHERENCE.name,
            passed=passed,
            metadata={},
            description=description,
            severity=dg.AssetCheckSeverity.WARN,
        )

    report = _report(
        COHERENCE, evaluation(True, "skipped: coherence of the synthesis needs a model")
    )

    assert (report.passed, report.verdict()) == (None, "skipped")
    assert report.description == "coherence of the synthesis needs a model"
    assert _report(COHERENCE, evaluation(False, "scores 2 of 5")).verdict() == "FAILED (warn)"
    assert _report(COHERENCE, evaluation(True, "scores 4 of 5")).verdict() == "passed"
