"""The Zotero sync: a nightly sensor that registers the items added to (or edited in) the watched
Zotero collections since its last tick, hashing only those, for Dagster's automation to build;
and an item's metadata edited in Zotero reaching its paper (`litpipe run --zotero` as well).

The library is the one `test_zotero` writes with Zotero 7's schema; items are added and edited
here as Zotero would, in its database.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import dagster as dg
import pytest

import litpipe.ingest.library
from litpipe.catalog import Catalog
from litpipe.defs.automation import AUTOMATION_SENSOR
from litpipe.defs.definitions import build_definitions
from litpipe.defs.jobs import paper_pipeline
from litpipe.defs.resources import CatalogResource
from litpipe.defs.standing_questions import STANDING_SENSOR
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.bundled import short_paper
from litpipe_tests.daemon_ticks import Daemon
from litpipe_tests.test_cli import run
from litpipe_tests.test_sensors import added_partitions
from litpipe_tests.test_sensors import tick as folder_tick
from litpipe_tests.test_zotero import (
    OTHER,
    READING,
    REV1_PDF,
    REV1_TITLE,
    ZoteroLibrary,
    write_library,
)

REV1 = "10.1093_nar_gkae252"
PARP1 = "10.1073_pnas.2322520121"
# What the first tick brings of Zotero's "Reading" (its sub-collection "Methods" included):
# two PDFs with their DOIs, and two items that enter by their abstracts. GONE2KEY fails alone
# (its PDF gone, no abstract), BOOKONLY has neither, TRASHED1 is in the trash.
READING_PAPERS = sorted([REV1, PARP1, "zotero.ABSTRACT", "zotero.GONE1KEY"])


@pytest.fixture
def zotero(tmp_path: Path) -> Path:
    return write_library(tmp_path / "Zotero")


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The PDFs a tick reads whole to hash them."""
    files: list[Path] = []
    real = litpipe.ingest.library.file_sha256

    def counting(path: Path) -> str:
        files.append(path)
        return real(path)

    monkeypatch.setattr(litpipe.ingest.library, "file_sha256", counting)
    return files


def sync_settings(tmp_path: Path, zotero: Path, **zotero_settings: object) -> Settings:
    return Settings(
        home=tmp_path / "home",
        zotero={"data_dir": zotero, "collections": ["Reading"], **zotero_settings},
    )


def tick(
    settings: Settings,
    instance: dg.DagsterInstance,
    cursor: str | None,
    interval_passed: bool = True,
) -> dg.SensorResult | dg.SkipReason:
    """One evaluation of the sensor from `cursor`: by default as if a sync interval had passed
    since the sync that left it."""
    if cursor is not None and interval_passed:
        cursor = json.dumps({**json.loads(cursor), "synced_at": 0.0})
    defs = build_definitions(**settings_groups(settings))
    context = dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={"catalog": CatalogResource(path=str(settings.paths.catalog_path))},
        definitions=defs,
    )
    return defs.resolve_sensor_def("zotero_sync_sensor")(context)


def requested(
    settings: Settings, daemon: Daemon, result: dg.SensorResult | dg.SkipReason
) -> list[str]:
    """The papers built after a tick: every stage of each (`Daemon.papers_built`)."""
    assert isinstance(result, dg.SensorResult), result
    return daemon.papers_built(build_definitions(**settings_groups(settings)), result)


def reopened(data_dir: Path) -> ZoteroLibrary:
    """The library's database opened again, to add to it as Zotero does."""
    library = ZoteroLibrary.__new__(ZoteroLibrary)
    library.data_dir = data_dir
    library.database = data_dir / "zotero.sqlite"
    library.db = sqlite3.connect(library.database)
    (library.next_id,) = library.db.execute("SELECT max(itemID) FROM items").fetchone()
    return library


def edit_title(data_dir: Path, key: str, title: str) -> None:
    """The item's title edited in Zotero (its values are shared: a new one is pointed at)."""
    with sqlite3.connect(data_dir / "zotero.sqlite") as db:
        db.execute("INSERT OR IGNORE INTO itemDataValues (value) VALUES (?)", (title,))
        db.execute(
            "UPDATE itemData SET valueID = (SELECT valueID FROM itemDataValues WHERE value = ?) "
            "WHERE itemID = (SELECT itemID FROM items WHERE key = ?) "
            "AND fieldID = (SELECT fieldID FROM fields WHERE fieldName = 'title')",
            (title, key),
        )
    db.close()


def build_paper_source(settings: Settings, instance: dg.DagsterInstance, paper_id: str) -> None:
    instance.add_dynamic_partitions("papers", [paper_id])
    build_definitions(**settings_groups(settings)).resolve_job_def(
        "paper_pipeline"
    ).execute_in_process(
        partition_key=paper_id, asset_selection=[dg.AssetKey("paper_source")], instance=instance
    )


def test_each_tick_brings_the_items_added_or_edited_since_the_last_one(
    tmp_path: Path, zotero: Path, hashed: list[Path]
) -> None:
    settings = sync_settings(tmp_path, zotero)
    instance = dg.DagsterInstance.ephemeral()
    daemon = Daemon(instance, build_definitions(**settings_groups(settings)))
    catalog = Catalog(settings.paths.catalog_path)

    first = tick(settings, instance, None)
    assert requested(settings, daemon, first) == READING_PAPERS
    assert sorted(added_partitions(first, "papers")) == READING_PAPERS
    assert added_partitions(first, "collections") == ["Reading"]
    assert catalog.papers("Reading") == READING_PAPERS
    assert catalog.source(REV1).fields["title"] == REV1_TITLE
    assert len(hashed) == 2  # the two PDFs there

    # Nothing changed in Zotero: nothing is read whole, registered or requested.
    hashed.clear()
    arrived = catalog.registered_at(REV1)
    quiet = tick(settings, instance, first.cursor)
    assert requested(settings, daemon, quiet) == [] and added_partitions(quiet, "papers") == []
    assert hashed == [] and catalog.registered_at(REV1) == arrived

    # An item added to the collection that evening: the next tick brings it alone.
    library = reopened(zotero)
    added = library.item(
        "NEWITEM1",
        "journalArticle",
        title="The role of gene 4 in fly DNA repair",
        date="2025",
        DOI="10.5555/short.4",
    )
    library.creators(added, ("Okafor", "Chidi", "author"))
    library.pdf(added, "PDFNEW01", "short-4.pdf", short_paper(tmp_path, 4))
    library.file(READING, added)
    library.close()
    third = tick(settings, instance, quiet.cursor)
    assert requested(settings, daemon, third) == ["10.5555_short.4"]
    assert added_partitions(third, "papers") == ["10.5555_short.4"]
    assert [path.name for path in hashed] == ["short-4.pdf"]
    assert catalog.source("10.5555_short.4").fields["authors"] == "Okafor, Chidi"
    assert catalog.papers("Reading") == sorted([*READING_PAPERS, "10.5555_short.4"])

    # A title corrected in Zotero, the PDF untouched: the paper is registered again, with the
    # new title, and requested again.
    hashed.clear()
    edit_title(zotero, "REV1KEY1", "Mutation rates vary within genes")
    fourth = tick(settings, instance, third.cursor)
    assert requested(settings, daemon, fourth) == [REV1]
    assert catalog.source(REV1).fields["title"] == "Mutation rates vary within genes"
    assert catalog.registered_at(REV1) == arrived  # still the paper that arrived first
    assert len(hashed) == 1

    assert requested(settings, daemon, tick(settings, instance, fourth.cursor)) == []


def test_an_unreadable_library_skips_the_tick_and_keeps_its_place(
    tmp_path: Path, zotero: Path
) -> None:
    settings = sync_settings(tmp_path, zotero)
    instance = dg.DagsterInstance.ephemeral()
    daemon = Daemon(instance, build_definitions(**settings_groups(settings)))
    first = tick(settings, instance, None)
    assert isinstance(first, dg.SensorResult)

    database = zotero / "zotero.sqlite"
    saved = database.read_bytes()
    database.write_bytes(b"not a database, a text file" * 100)
    due = json.dumps({**json.loads(first.cursor or "{}"), "synced_at": 0.0})
    context = dg.build_sensor_context(
        instance=instance,
        cursor=due,
        resources={"catalog": CatalogResource(path=str(settings.paths.catalog_path))},
        definitions=build_definitions(**settings_groups(settings)),
    )
    skipped = build_definitions(**settings_groups(settings)).resolve_sensor_def(
        "zotero_sync_sensor"
    )(context)
    assert isinstance(skipped, dg.SkipReason)
    message = skipped.skip_message or ""
    assert f"{database}: cannot read the Zotero database: file is not a database" in message
    assert "\n" not in message
    assert context.cursor == due

    moved = zotero.rename(tmp_path / "Zotero-moved")
    gone = tick(settings, instance, first.cursor)
    assert isinstance(gone, dg.SkipReason)
    assert f"{zotero}: no such folder" in (gone.skip_message or "")

    # Back as it was: the tick goes on from its place, nothing lost and nothing asked twice.
    moved.rename(zotero)
    database.write_bytes(saved)
    assert requested(settings, daemon, tick(settings, instance, first.cursor)) == []
    edit_title(zotero, "ABSTRACT", "REV1 at stalled forks, revisited")
    assert requested(settings, daemon, tick(settings, instance, first.cursor)) == [
        "zotero.ABSTRACT"
    ]


def test_a_tick_hashes_and_registers_at_most_a_batch_of_items(
    tmp_path: Path, zotero: Path, hashed: list[Path]
) -> None:
    settings = Settings(
        home=tmp_path / "home",
        operations={"sensor_batch_size": 2},
        zotero={"data_dir": zotero, "collections": ["Reading"]},
    )
    instance = dg.DagsterInstance.ephemeral()
    daemon = Daemon(instance, build_definitions(**settings_groups(settings)))
    cursor = None
    per_tick: list[list[str]] = []
    for _ in range(4):
        result = tick(settings, instance, cursor)
        assert isinstance(result, dg.SensorResult)
        per_tick.append(requested(settings, daemon, result))
        cursor = result.cursor
    # In the order they were added, two a tick: the two PDFs, the two abstracts, then the item
    # whose PDF is gone and the book with neither (nothing to request), then none.
    assert per_tick == [sorted([REV1, PARP1]), ["zotero.ABSTRACT", "zotero.GONE1KEY"], [], []]
    assert len(hashed) == 2


def test_it_syncs_once_an_interval_but_every_tick_while_items_wait(
    tmp_path: Path, zotero: Path
) -> None:
    settings = Settings(
        home=tmp_path / "home",
        operations={"sensor_batch_size": 3},
        zotero={"data_dir": zotero, "collections": ["Reading"]},
    )
    instance = dg.DagsterInstance.ephemeral()
    daemon = Daemon(instance, build_definitions(**settings_groups(settings)))
    first = tick(settings, instance, None)
    assert len(requested(settings, daemon, first)) == 3
    # Items wait: the next tick, a minute later, syncs at once.
    second = tick(settings, instance, first.cursor, interval_passed=False)
    assert requested(settings, daemon, second) == ["zotero.GONE1KEY"]
    # None waits: the one after waits for the interval (a day by default).
    third = tick(settings, instance, second.cursor, interval_passed=False)
    assert isinstance(third, dg.SkipReason)
    assert (third.skip_message or "").startswith("next Zotero sync in 86,")


def test_an_item_filed_in_a_second_watched_collection_joins_it_unbuilt_again(
    tmp_path: Path, zotero: Path
) -> None:
    settings = sync_settings(tmp_path, zotero, collections=["Reading", "Other"])
    instance = dg.DagsterInstance.ephemeral()
    daemon = Daemon(instance, build_definitions(**settings_groups(settings)))
    first = tick(settings, instance, None)
    # REV1KEY1 is in both: registered into each, requested once.
    assert requested(settings, daemon, first) == sorted([*READING_PAPERS, "zotero.ELSEWHER"])
    assert sorted(added_partitions(first, "collections")) == ["Other", "Reading"]
    build_paper_source(settings, instance, PARP1)

    library = reopened(zotero)
    (parp1,) = library.db.execute("SELECT itemID FROM items WHERE key = 'PARP1KEY'").fetchone()
    library.file(OTHER, parp1)
    library.close()
    second = tick(settings, instance, first.cursor)
    # Its content was built for Reading: no run, only the collection's partition.
    assert requested(settings, daemon, second) == []
    assert added_partitions(second, "collections") == ["Other"]
    catalog = Catalog(settings.paths.catalog_path)
    assert catalog.collections_of([PARP1]) == {PARP1: ["Reading", "Other"]}
    assert PARP1 in catalog.papers("Other")


def test_a_zotero_pdf_dropped_into_the_inbox_keeps_what_zotero_says_of_it(
    tmp_path: Path, zotero: Path
) -> None:
    inbox = tmp_path / "inbox"
    (inbox / "bio").mkdir(parents=True)
    settings = Settings(
        home=tmp_path / "home",
        corpus_roots=[inbox],
        zotero={"data_dir": zotero, "collections": ["Reading"]},
    )
    instance = dg.DagsterInstance.ephemeral()
    tick(settings, instance, None)
    build_paper_source(settings, instance, REV1)

    # The same file, without Zotero's metadata: the paper joins the folder's collection, with
    # Zotero's title still, and nothing is built again.
    shutil.copy(REV1_PDF, inbox / "bio")
    found = folder_tick(settings, instance, None)
    assert found.run_requests == []
    assert added_partitions(found, "collections") == ["bio"]
    catalog = Catalog(settings.paths.catalog_path)
    assert catalog.collections_of([REV1]) == {REV1: ["Reading", "bio"]}
    assert catalog.source(REV1).fields["title"] == REV1_TITLE


def test_the_zotero_sensor_exists_only_for_a_named_library(
    tmp_path: Path, zotero: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = {
        sensor.name
        for sensor in build_definitions(**settings_groups(Settings(home=tmp_path))).sensors
    }
    assert names == {"new_papers_sensor", AUTOMATION_SENSOR, STANDING_SENSOR}

    monkeypatch.setenv("LITPIPE_ZOTERO__DATA_DIR", str(zotero))
    monkeypatch.setenv("LITPIPE_ZOTERO__COLLECTIONS", '["Reading"]')
    settings = Settings(home=tmp_path)
    assert settings.zotero.data_dir == zotero and settings.zotero.collections == ["Reading"]
    sensor = build_definitions(**settings_groups(settings)).resolve_sensor_def("zotero_sync_sensor")
    # Evaluated every minute, it syncs nightly (or every minute while items wait).
    assert sensor.minimum_interval_seconds == 60
    assert "Every 86,400 s" in (sensor.description or "")
    # It asks for runs of the per-paper stages (a changed paper's source), `paper_pipeline`'s.
    assert sensor.asset_selection == paper_pipeline.selection
    assert "'Reading'" in (sensor.description or "")


@pytest.mark.slow
def test_a_title_edited_in_zotero_reaches_the_reference_list_without_reembedding(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    zotero = tmp_path / "Zotero"
    library = ZoteroLibrary(zotero)
    for number, key in enumerate(["SHORT001", "SHORT002"], start=1):
        item = library.item(
            key,
            "journalArticle",
            title=f"Gene {number} and its role",
            date="2024",
            publicationTitle="Journal of Tests",
            DOI=f"10.5555/short.{number}",
        )
        library.creators(item, ("Okafor", "Chidi", "author"))
        library.pdf(item, f"PDFSHRT{number}", f"short-{number}.pdf", short_paper(tmp_path, number))
    library.close()
    home = tmp_path / "home"
    code, _ = run(home, tiny_model, "--zotero", str(zotero))
    said = capsys.readouterr().err
    assert code == 0, said
    references = (home / "outputs" / "zotero" / "synthesis.md").read_text()
    assert "**Gene 1 and its role**" in references.split("## References", 1)[1]
    paper = "10.5555_short.1"

    edit_title(zotero, "SHORT001", "Gene 1 shapes DNA repair in flies")
    code, report = run(home, tiny_model, "--zotero", str(zotero))
    said = capsys.readouterr().err
    assert code == 0, said
    references = (
        (home / "outputs" / "zotero" / "synthesis.md").read_text().split("## References", 1)[1]
    )
    # Led by the paper's key, as the text cites it.
    assert ": Okafor (2024). **Gene 1 shapes DNA repair in flies**. *Journal of Tests*." in (
        references
    )
    assert "Gene 1 and its role" not in references
    assert "**Gene 2 and its role**" in references
    # The paper is built again from its PDF (its document carries the title), its unchanged
    # chunks not embedded again; the other paper is up to date.
    assert report["papers"] == 2 and report["papers_up_to_date"] == 1
    assert f"{paper}: 2 chunks, 0 embedded" in said
    assert "3 chunks, 0 embedded now" in said
