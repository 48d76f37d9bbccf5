import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from litpipe.catalog import Catalog, Registration
from litpipe.schemas import PaperSource


def source(paper_id: str, sha: str) -> PaperSource:
    return PaperSource(
        paper_id=paper_id,
        kind="pdf",
        path=f"/x/{paper_id}.pdf",
        content_sha256=sha,
    )


def test_registration_is_idempotent_and_notices_new_content(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    assert catalog.register(source("p1", "aaa"), "bio") is Registration.NEW
    assert catalog.register(source("p1", "aaa"), "bio") is Registration.UNCHANGED
    assert catalog.register(source("p1", "bbb"), "bio") is Registration.CHANGED
    assert catalog.source("p1").content_sha256 == "bbb"
    assert catalog.papers("bio") == ["p1"]


def test_a_paper_joins_several_collections_and_leaves_them_when_moved(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    catalog.register(source("p1", "aaa"), "bio")
    catalog.register(source("p2", "ccc"), "bio")
    assert catalog.register(source("p1", "aaa"), "reading-group") is Registration.JOINED
    assert catalog.register(source("p1", "aaa"), "reading-group") is Registration.UNCHANGED
    assert catalog.collections() == ["bio", "reading-group"]
    assert catalog.papers("bio") == ["p1", "p2"]
    assert catalog.papers("reading-group") == ["p1"]
    # In the order it joined them: its home collection first.
    assert catalog.collections_of(["p1", "p2", "p9"]) == {
        "p1": ["bio", "reading-group"],
        "p2": ["bio"],
    }
    assert catalog.home_collection("p1") == "bio"
    # New content is the paper's in every collection that holds it.
    assert catalog.register(source("p1", "bbb"), "reading-group") is Registration.CHANGED
    assert catalog.papers("bio") == ["p1", "p2"]

    assert catalog.register(source("p2", "ccc"), "journal-club", move=True) is Registration.JOINED
    assert catalog.papers("bio") == ["p1"]
    assert catalog.collections_of(["p2"]) == {"p2": ["journal-club"]}
    with pytest.raises(KeyError, match="p9"):
        catalog.home_collection("p9")


def test_unknown_paper_says_which_catalog(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    with pytest.raises(KeyError, match="nope"):
        catalog.source("nope")


def at(day: int, hour: int, tz: timezone = UTC) -> datetime:
    return datetime(2026, 1, day, hour, tzinfo=tz)


def test_a_paper_arrives_when_first_registered_and_keeps_that_arrival(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    catalog.register(source("p1", "aaa"), "bio", now=at(2, 9))
    catalog.register(source("p2", "ccc"), "bio", now=at(3, 1, timezone(timedelta(hours=2))))
    catalog.register(source("p3", "ddd"), "other", now=at(3, 12))
    catalog.register(source("p1", "bbb"), "bio", now=at(3, 8))  # changed: not a new arrival
    catalog.register(source("p1", "bbb"), "other", now=at(3, 8), move=True)  # and moves

    assert catalog.registered_at("p1") == at(2, 9)
    assert catalog.registered_at("p2") == at(2, 23)
    day_2 = catalog.arrivals(at(2, 0), at(3, 0))
    assert [(a.paper_id, a.collections) for a in day_2] == [
        ("p1", ["other"]),
        ("p2", ["bio"]),
    ]
    assert day_2[0].source.content_sha256 == "bbb"
    assert [a.paper_id for a in catalog.arrivals(at(3, 0), at(4, 0))] == ["p3"]
    assert catalog.papers("other", arrived_before=at(3, 0)) == ["p1"]
    assert catalog.papers("other") == ["p1", "p3"]
    with pytest.raises(ValueError, match="timezone-aware"):
        catalog.register(source("p4", "eee"), "bio", now=datetime(2026, 1, 2, 9))


def test_an_older_catalog_is_migrated_to_sortable_arrivals(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite"
    # As the first catalogs were written: `isoformat()` drops zero microseconds.
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE papers (paper_id TEXT PRIMARY KEY, content_sha256 TEXT NOT NULL, "
            "source_json TEXT NOT NULL, registered_at TEXT NOT NULL);"
        )
        for paper_id, stamp in [
            ("p1", "2026-01-02T10:00:00.500000+00:00"),
            ("p2", "2026-01-02T10:00:00+00:00"),
        ]:
            db.execute(
                "INSERT INTO papers VALUES (?, ?, ?, ?)",
                (paper_id, "x", source(paper_id, "x").model_dump_json(), stamp),
            )
    db.close()

    catalog = Catalog(path)
    # Unmigrated, "10:00:00+00:00" sorts before "10:00:00.000000+00:00": p2 would be missed.
    assert [a.paper_id for a in catalog.arrivals(at(2, 10), at(2, 11))] == ["p2", "p1"]
    assert catalog.registered_at("p2") == at(2, 10)
    with sqlite3.connect(path) as db:
        # Through every migration since (2: the retractions; 3: the citation keys).
        assert db.execute("PRAGMA user_version").fetchone() == (3,)
    db.close()
