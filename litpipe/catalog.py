"""The catalog: which papers litpipe knows, where each comes from, and which collections hold it.

A paper's partition key alone cannot tell a Dagster step which file to read, so registration
(by the CLI or the new-paper sensor) records each paper's `PaperSource` here and the
`paper_source` asset reads it back. SQLite gives us atomic upserts under concurrent runs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from litpipe.schemas import PaperSource

_SCHEMA = """
CREATE TABLE IF NOT EXISTS papers (
    paper_id TEXT PRIMARY KEY,
    content_sha256 TEXT NOT NULL,
    source_json TEXT NOT NULL,
    registered_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memberships (
    collection TEXT NOT NULL,
    paper_id TEXT NOT NULL REFERENCES papers(paper_id),
    PRIMARY KEY (collection, paper_id)
);
"""


class Registration(StrEnum):
    NEW = "new"
    CHANGED = "changed"
    UNCHANGED = "unchanged"


class Catalog:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # One short-lived connection per operation: Dagster steps run in other threads/processes.
        db = sqlite3.connect(self.path, timeout=30)
        try:
            with db:
                yield db
        finally:
            db.close()

    def register(self, source: PaperSource) -> Registration:
        """Record a paper (idempotent); a known id with new content replaces the old source."""
        with self._connect() as db:
            row = db.execute(
                "SELECT content_sha256 FROM papers WHERE paper_id = ?", (source.paper_id,)
            ).fetchone()
            if row is None:
                outcome = Registration.NEW
            elif row[0] == source.content_sha256:
                outcome = Registration.UNCHANGED
            else:
                outcome = Registration.CHANGED
            if outcome is not Registration.UNCHANGED:
                db.execute(
                    "INSERT INTO papers VALUES (?, ?, ?, ?) ON CONFLICT(paper_id) DO UPDATE SET "
                    "content_sha256 = excluded.content_sha256, source_json = excluded.source_json",
                    (
                        source.paper_id,
                        source.content_sha256,
                        source.model_dump_json(),
                        datetime.now(UTC).isoformat(),
                    ),
                )
            db.execute(
                "INSERT OR IGNORE INTO memberships VALUES (?, ?)",
                (source.collection, source.paper_id),
            )
        return outcome

    def source(self, paper_id: str) -> PaperSource:
        with self._connect() as db:
            row = db.execute(
                "SELECT source_json FROM papers WHERE paper_id = ?", (paper_id,)
            ).fetchone()
        if row is None:
            raise KeyError(f"paper {paper_id!r} is not in the catalog {self.path}")
        return PaperSource.model_validate_json(row[0])

    def papers(self, collection: str) -> list[str]:
        with self._connect() as db:
            rows = db.execute(
                "SELECT paper_id FROM memberships WHERE collection = ? ORDER BY paper_id",
                (collection,),
            ).fetchall()
        return [paper_id for (paper_id,) in rows]

    def collections(self) -> list[str]:
        with self._connect() as db:
            rows = db.execute("SELECT DISTINCT collection FROM memberships ORDER BY 1").fetchall()
        return [name for (name,) in rows]
