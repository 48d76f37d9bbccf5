"""litpipe's SQLite event log storage writes a batch's asset events together, and what it writes
reads back exactly as Dagster's own storage's does; its queries reuse their shard's engine; a
home whose dagster.yaml names the storage's module before it moved to `litpipe.instance` still
opens."""

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from litpipe.instance import sqlite_storage
from litpipe.instance.sqlite_storage import (
    ASSET_EVENT_TYPES,
    KEPT_ENGINES,
    BatchingSqliteEventLogStorage,
)
from litpipe.runtime.execution import RANGE_END_TAG, RANGE_START_TAG
from litpipe.runtime.instance import managed_config
from litpipe.runtime.runner import open_instance
from litpipe.settings import Settings

PARTITIONS = dg.DynamicPartitionsDefinition(name="papers")
KEYS = [f"paper{number}" for number in range(6)]


def graph() -> dg.Definitions:
    @dg.asset(
        partitions_def=PARTITIONS, code_version="1", backfill_policy=dg.BackfillPolicy.multi_run(10)
    )
    def parsed(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        for key in context.partition_keys:
            context.add_asset_metadata({"words": len(key)}, partition_key=key)
        return dg.MaterializeResult(data_version=dg.DataVersion("v1"))

    @dg.asset(
        partitions_def=PARTITIONS,
        code_version="1",
        deps=[parsed],
        backfill_policy=dg.BackfillPolicy.multi_run(10),
    )
    def answered(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        for key in context.partition_keys:
            context.add_asset_metadata({"answers": 6}, partition_key=key)
        return dg.MaterializeResult()

    return dg.Definitions(
        assets=[parsed, answered],
        jobs=[dg.define_asset_job("papers", selection=dg.AssetSelection.all())],
    )


def stored(home: Path, managed: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What a run over the range of all papers leaves in an instance at `home`."""
    home.mkdir()
    if managed:  # litpipe's dagster.yaml, and the batch size it sets
        monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "1000")
        settings = Settings(dagster_home=home)
        (home / "dagster.yaml").write_text(managed_config(settings.llm, settings.paths))
    instance = dg.DagsterInstance.from_config(str(home))
    instance.add_dynamic_partitions(PARTITIONS.name or "", KEYS)
    result = (
        graph()
        .resolve_job_def("papers")
        .execute_in_process(
            instance=instance, tags={RANGE_START_TAG: KEYS[0], RANGE_END_TAG: KEYS[-1]}
        )
    )
    assert result.success
    figures: dict[str, Any] = {"storage": type(instance.event_log_storage).__name__}
    for asset in ("parsed", "answered"):
        key = dg.AssetKey(asset)
        records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), 100)
        figures[asset] = sorted(
            (
                record.partition_key,
                {
                    name: value.value
                    for name, value in record.asset_materialization.metadata.items()
                },
                record.asset_materialization.tags.get("dagster/data_version"),
            )
            for record in records.records
        )
        figures[f"{asset} latest"] = sorted(
            instance.get_latest_storage_id_by_partition(
                key, dg.DagsterEventType.ASSET_MATERIALIZATION, set(KEYS)
            )
        )
        figures[f"{asset} planned"] = len(
            instance.get_records_for_run(
                result.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED
            ).records
        )
    figures["materialized"] = sorted(instance.get_materialized_partitions(dg.AssetKey("answered")))
    return figures


def test_a_range_run_reads_back_as_with_dagsters_storage_written_a_batch_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches: list[int] = []
    store_batch = BatchingSqliteEventLogStorage.store_event_batch

    def counted(self: BatchingSqliteEventLogStorage, events: Any) -> None:
        batches.append(len(events))
        store_batch(self, events)

    monkeypatch.setattr(BatchingSqliteEventLogStorage, "store_event_batch", counted)
    ours = stored(tmp_path / "litpipe", True, monkeypatch)
    monkeypatch.delenv("DAGSTER_EVENT_BATCH_SIZE")
    dagsters = stored(tmp_path / "dagster", False, monkeypatch)

    assert ours.pop("storage") == "BatchingSqliteEventLogStorage"
    assert dagsters.pop("storage") == "SqliteEventLogStorage"
    assert ours == dagsters
    assert len(ours["parsed"]) == len(KEYS) and ours["materialized"] == KEYS
    # Each step's six materializations went as one batch, and the run's planned events as one.
    assert batches.count(len(KEYS)) == 2 and max(batches) == 2 * len(KEYS)


def test_queries_reuse_their_shards_engine_and_two_processes_storages_see_each_others_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Engines kept per shard (at most `KEPT_ENGINES` of them), never a connection: what one
    storage writes, another over the same folder (another process: the daemon, the UI) reads at
    once, and a table made after a storage first looked for it is found."""
    built: list[str] = []
    engine_of = sqlite_storage.create_engine

    def counted(url: str, **options: Any) -> Any:
        built.append(url)
        return engine_of(url, **options)

    monkeypatch.setattr(sqlite_storage, "create_engine", counted)
    folder = str(tmp_path / "runs")
    writer = BatchingSqliteEventLogStorage(folder)
    reader = BatchingSqliteEventLogStorage(folder)
    for number in range(20):
        writer.add_dynamic_partitions("papers", [f"paper{number}"])
        assert reader.has_dynamic_partition("papers", f"paper{number}")
    # One engine for each storage's index shard, however many queries went through it.
    assert len(built) == 2
    for number in range(KEPT_ENGINES + 4):
        with writer.run_connection(f"run{number}") as conn:
            assert conn.exec_driver_sql("select count(*) from event_logs").scalar() == 0
    assert len(writer._engines) == KEPT_ENGINES

    assert not reader.has_table("made_later")
    with writer.index_connection() as conn:
        conn.exec_driver_sql("create table made_later (id integer)")
    assert reader.has_table("made_later")


def test_the_events_it_writes_together_are_those_dagster_writes_to_its_asset_tables() -> None:
    """`ASSET_EVENT_TYPES` is a copy of Dagster's `ASSET_EVENTS`, which it does not export: an
    event type an upgrade took out of that set would still get asset rows here, which Dagster's
    own storage no longer writes, and one it added would go the slow way, an event at a time."""
    from dagster._core.events import ASSET_EVENTS

    assert ASSET_EVENT_TYPES == ASSET_EVENTS


def test_a_home_naming_the_storages_old_module_is_brought_up_to_date_and_opens(
    tmp_path: Path,
) -> None:
    settings = Settings(home=tmp_path / "home", corpus_roots=[])
    written_now = managed_config(settings.llm, settings.paths)
    assert "  module: litpipe.instance.sqlite_storage\n" in written_now
    # What litpipe wrote before the instance's plumbing left `litpipe.defs`.
    earlier = written_now.replace("litpipe.instance.sqlite_storage", "litpipe.defs.sqlite_storage")
    assert earlier != written_now
    settings.dagster_home.mkdir(parents=True)
    config = settings.dagster_home / "dagster.yaml"
    config.write_text(earlier, encoding="utf-8")

    # The old module is gone: Dagster alone cannot open the home as it is.
    with pytest.raises(Exception, match=r"Couldn.t import module litpipe\.defs\.sqlite_storage"):
        dg.DagsterInstance.from_config(str(settings.dagster_home))

    # litpipe opens it, rewriting its dagster.yaml with the storage's module now, once.
    instance = open_instance(settings.llm, settings.paths)
    assert isinstance(instance.event_log_storage, BatchingSqliteEventLogStorage)
    assert config.read_text("utf-8") == written_now
    instance.dispose()
    # Dagster's own tools (`dagster dev`, `dagster-daemon run`) open it from then on.
    with dg.DagsterInstance.from_config(str(settings.dagster_home)) as instance:
        assert isinstance(instance.event_log_storage, BatchingSqliteEventLogStorage)
