"""The new-paper sensor registers new files only, in bounded batches, remembering its place, and
adds their partitions: Dagster's automation then requests every stage of a tick's new papers
at once (which the daemon runs as one backfill, in batches), not one run per paper."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from litpipe.catalog import Catalog
from litpipe.defs.definitions import build_definitions
from litpipe.defs.jobs import collection_pipeline
from litpipe.defs.resources import CatalogResource
from litpipe.ingest.ids import pdf_paper_id
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.daemon_soak import PAPER_ASSETS
from litpipe_tests.daemon_ticks import Daemon

PDFS = PDFS_BY_SIZE


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    root = tmp_path / "inbox"
    (root / "bio").mkdir(parents=True)
    shutil.copy(PDFS[0], root / "bio")
    (root / "abstracts.csv").write_text(
        "id,title,abstract\nA1,First,An abstract about yeast.\nA2,Second,Another about flies.\n",
        encoding="utf-8",
    )
    return root


def tick(settings: Settings, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    defs = build_definitions(**settings_groups(settings))
    sensor = defs.resolve_sensor_def("new_papers_sensor")
    context = dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={"catalog": CatalogResource(path=str(settings.paths.catalog_path))},
        definitions=defs,
    )
    return sensor(context)


def requested(settings: Settings, daemon: Daemon, result: dg.SensorResult) -> list[str]:
    """The papers built after a tick: every stage of each (`Daemon.papers_built`)."""
    return daemon.papers_built(build_definitions(**settings_groups(settings)), result)


def build_stages(
    settings: Settings, instance: dg.DagsterInstance, paper_id: str, *stages: str
) -> None:
    """A paper's `stages` built in a run of their own, outside the automation."""
    build_definitions(**settings_groups(settings)).resolve_job_def(
        "paper_pipeline"
    ).execute_in_process(
        partition_key=paper_id,
        asset_selection=[dg.AssetKey(stage) for stage in stages],
        instance=instance,
    )


def added_partitions(result: dg.SensorResult, name: str) -> list[str]:
    return [
        key
        for request in result.dynamic_partitions_requests
        if request.partitions_def_name == name
        for key in request.partition_keys
    ]


def test_sensor_adds_partitions_for_new_files_only(tmp_path: Path, inbox: Path) -> None:
    settings = Settings(home=tmp_path / "home", corpus_roots=[inbox])
    instance = dg.DagsterInstance.ephemeral()
    daemon = Daemon(instance, build_definitions(**settings_groups(settings)))

    first = tick(settings, instance, None)
    new_papers = added_partitions(first, "papers")
    assert sorted(new_papers) == sorted([pdf_paper_id(PDFS[0]), "abstracts.A1", "abstracts.A2"])
    assert sorted(added_partitions(first, "collections")) == ["abstracts", "bio"]
    assert first.run_requests == []  # the automation's to build, not the sensor's
    assert requested(settings, daemon, first) == sorted(new_papers)
    assert len(Catalog(settings.paths.catalog_path).papers("bio")) == 1

    quiet = tick(settings, instance, first.cursor)
    assert quiet.run_requests == []
    assert added_partitions(quiet, "papers") == []
    assert requested(settings, daemon, quiet) == []

    shutil.copy(PDFS[1], inbox / "bio")
    third = tick(settings, instance, quiet.cursor)
    (added,) = requested(settings, daemon, third)
    assert added_partitions(third, "papers") == [added]
    assert added not in new_papers


@pytest.mark.parametrize("automation_first", [True, False], ids=["automation", "sensor"])
def test_a_ticks_papers_are_built_whichever_sensor_ticks_first(
    tmp_path: Path, inbox: Path, automation_first: bool
) -> None:
    """The daemon starts the new-papers and the automation condition sensors at once: papers
    registered before the automation's first tick are built by it, and only once."""
    settings = Settings(home=tmp_path / "home", corpus_roots=[inbox])
    instance = dg.DagsterInstance.ephemeral()
    defs = build_definitions(**settings_groups(settings))
    daemon = Daemon(instance, defs, automation_first=automation_first)

    first = tick(settings, instance, None)
    assert requested(settings, daemon, first) == sorted(added_partitions(first, "papers"))
    assert daemon.last is not None
    for stage in collection_pipeline.selection.resolve(defs.resolve_asset_graph()):
        assert daemon.last.get_requested_partitions(stage) == {"abstracts", "bio"}, stage

    assert requested(settings, daemon, tick(settings, instance, first.cursor)) == []


def test_sensor_registers_at_most_a_batch_of_files_per_tick(tmp_path: Path, inbox: Path) -> None:
    for pdf in PDFS[1:3]:
        shutil.copy(pdf, inbox / "bio")
    settings = Settings(
        home=tmp_path / "home", corpus_roots=[inbox], operations={"sensor_batch_size": 2}
    )
    instance = dg.DagsterInstance.ephemeral()
    daemon = Daemon(instance, build_definitions(**settings_groups(settings)))
    cursor = None
    per_tick: list[list[str]] = []
    for _ in range(3):
        result = tick(settings, instance, cursor)
        per_tick.append(requested(settings, daemon, result))
        cursor = result.cursor
    # Files in path order, two a tick: the table (two rows) and one PDF, then two PDFs, then none.
    assert [len(keys) for keys in per_tick] == [3, 2, 0]
    assert len({key for keys in per_tick for key in keys}) == 5


def test_a_tick_whose_result_is_lost_requests_its_papers_again(tmp_path: Path, inbox: Path) -> None:
    settings = Settings(home=tmp_path / "home", corpus_roots=[inbox])
    instance = dg.DagsterInstance.ephemeral()
    daemon = Daemon(instance, build_definitions(**settings_groups(settings)))
    # The tick registers its papers, then fails before Dagster stores its partitions, runs and
    # cursor.
    lost = tick(settings, instance, None)

    retried = tick(settings, instance, None)
    assert added_partitions(retried, "papers") == added_partitions(lost, "papers")
    assert sorted(added_partitions(retried, "collections")) == ["abstracts", "bio"]
    assert requested(settings, daemon, retried) == sorted(added_partitions(lost, "papers"))


def test_a_changed_file_rebuilds_its_paper_and_a_built_one_is_not_requested_again(
    tmp_path: Path, inbox: Path
) -> None:
    settings = Settings(home=tmp_path / "home", corpus_roots=[inbox])
    instance = dg.DagsterInstance.ephemeral()
    daemon = Daemon(instance, build_definitions(**settings_groups(settings)))
    first = tick(settings, instance, None)
    requested(settings, daemon, first)
    build_stages(settings, instance, "abstracts.A1", "paper_source")

    # The same content found again (a cursor lost): nothing is requested again.
    assert requested(settings, daemon, tick(settings, instance, None)) == []

    # A1's abstract edited: every stage of it is built again, in one run the sensor asks for.
    (inbox / "abstracts.csv").write_text(
        "id,title,abstract\nA1,First,A revised abstract about yeast.\n"
        "A2,Second,Another about flies.\n",
        encoding="utf-8",
    )
    changed = tick(settings, instance, first.cursor)
    assert requested(settings, daemon, changed) == ["abstracts.A1"]
    (run,) = changed.run_requests
    # Its run key names the content: the tick evaluated again asks for the same run.
    assert run.run_key == tick(settings, instance, first.cursor).run_requests[0].run_key


def test_two_ticks_from_one_cursor_request_each_paper_once_between_them(
    tmp_path: Path, inbox: Path
) -> None:
    """Two evaluations of the sensor overlapping (both from the same cursor, before either
    result is stored, as a slow tick and its successor can): each paper is requested once
    between them, new papers by the automation, a changed one by a run whose key the two
    share (the daemon launches a run key once)."""
    settings = Settings(home=tmp_path / "home", corpus_roots=[inbox])
    instance = dg.DagsterInstance.ephemeral()
    daemon = Daemon(instance, build_definitions(**settings_groups(settings)))
    first, overlapping = tick(settings, instance, None), tick(settings, instance, None)
    new = requested(settings, daemon, first) + requested(settings, daemon, overlapping)
    assert sorted(new) == sorted(set(new)) == sorted(added_partitions(first, "papers"))
    build_stages(settings, instance, "abstracts.A1", "paper_source")

    (inbox / "abstracts.csv").write_text(
        "id,title,abstract\nA1,First,A revised abstract about yeast.\n"
        "A2,Second,Another about flies.\n",
        encoding="utf-8",
    )
    changed, overlapping = (
        tick(settings, instance, first.cursor),
        tick(settings, instance, first.cursor),
    )
    runs = {
        (run.partition_key, run.run_key)
        for run in [*changed.run_requests, *overlapping.run_requests]
    }
    assert [partition for partition, _ in runs] == ["abstracts.A1"]
    assert requested(settings, daemon, overlapping) == ["abstracts.A1"]


def test_a_stage_built_again_outside_the_automation_gets_no_stage_after_it_requested(
    tmp_path: Path, inbox: Path
) -> None:
    """The retry of a killed worker's batch builds its papers' stages again, in a run the
    automation did not request: it requests none of their next stages on top of it (the
    daemon soak saw eager's `any_deps_updated` build 7 papers' next stages twice)."""
    settings = Settings(home=tmp_path / "home", corpus_roots=[inbox])
    instance = dg.DagsterInstance.ephemeral()
    daemon = Daemon(instance, build_definitions(**settings_groups(settings)))
    requested(settings, daemon, tick(settings, instance, None))
    daemon.automation(build_definitions(**settings_groups(settings)))  # the next tick: calm
    build_stages(settings, instance, "abstracts.A1", "paper_source", "paper_document")

    evaluation = daemon.automation(build_definitions(**settings_groups(settings)))

    requested_again = {
        stage: evaluation.get_requested_partitions(dg.AssetKey(stage)) for stage in PAPER_ASSETS
    }
    assert all(not partitions for partitions in requested_again.values()), requested_again


def test_a_paper_dropped_into_a_second_folder_joins_that_collection(
    tmp_path: Path, inbox: Path
) -> None:
    settings = Settings(home=tmp_path / "home", corpus_roots=[inbox])
    instance = dg.DagsterInstance.ephemeral()
    daemon = Daemon(instance, build_definitions(**settings_groups(settings)))
    first = tick(settings, instance, None)
    requested(settings, daemon, first)
    paper_id = pdf_paper_id(PDFS[0])
    build_stages(settings, instance, paper_id, "paper_source")
    (inbox / "reading").mkdir()
    shutil.copy(PDFS[0], inbox / "reading")

    second = tick(settings, instance, first.cursor)
    # The same content, built already: no paper run; the collection's partition is added.
    assert second.run_requests == []
    assert requested(settings, daemon, second) == []
    assert added_partitions(second, "collections") == ["reading"]
    catalog = Catalog(settings.paths.catalog_path)
    assert catalog.papers("reading") == [paper_id]
    assert catalog.collections_of([paper_id]) == {paper_id: ["bio", "reading"]}
