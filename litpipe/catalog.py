"""The catalog: which papers litpipe knows, where each comes from, and which collections hold it.

A paper's partition key alone cannot tell a Dagster step which file to read, so registration
(by the CLI or the new-paper sensor) records each paper's `PaperSource` here and the
`paper_source` asset reads it back. SQLite gives us atomic upserts under concurrent runs.

A paper's `registered_at` is its arrival: when the catalog first registered it (UTC). The
nightly digest of a day lists the papers that arrived that day. A changed file keeps its first
arrival: it is re-ingested, but it is not a new paper, and a digest that listed it again each
time it is edited would bury the papers that are new.

A paper may belong to several collections: membership is a relation here (`memberships`), not
a property of the paper. What is done of the paper alone (its document, chunks, vectors,
questions, own evidence and answers) is done once, whatever collections hold it; each
collection's retrieval, index and syntheses read the papers the catalog lists for it. A paper
registered into a second collection is *joined* to it, and nothing of it is built again;
registered with `move`, it also leaves every other collection. A paper that a library (Zotero,
BibTeX) registered keeps the library's record (title, authors, year, ...) when a folder brings
its PDF, in every collection: the library's is the user's curated record.

A paper may be *retracted* (or corrected: the reason says which): it stays in the catalog and
in its collections, marked (`retractions`), and the collections read their papers without it
(`papers`), so their retrieval, index and syntheses are rebuilt without it; the synthesis
names it among the papers it leaves out, with the reason. `litpipe retract` marks it (and
`--undo` lifts the mark); so does its source, when that says so (`source_retraction`): a
`retracted` column of an abstract table, a BibTeX entry's `retracted` field. A mark made by the
command is lifted only by the command; one made by a source is lifted when the source no longer
says it. Each mark keeps when it was made and lifted, so that what was retracted when can be
listed (`retraction_history`).

Each paper has a citation key (`citation_keys`), unique in the home regardless of case: its
library's (`PaperSource.citation_key`), given at registration and following the library when
it is renamed there; else one the user set (`set_key`), which nothing replaces; else one
generated from its record (`give_generated_keys`), given once and never changed. A library's
key that cannot be given (another paper holds it, or no manuscript could cite it) is not
renamed: the paper keeps or gets a generated key and the clash is listed (`key_clashes`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel

from litpipe.citation_keys import (
    BY_LIBRARY,
    BY_USER,
    GENERATED,
    KeyParts,
    generated_base,
    key_problem,
    suffixed,
)
from litpipe.schemas import PaperArrival, PaperSource, pdf_content_sha256

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
# The schema's version, in SQLite's `user_version`; `_MIGRATIONS[n]` takes a catalog from
# version n to n + 1.
_VERSION = 3


def _stamp(moment: datetime) -> str:
    """A moment as stored: UTC, ISO 8601 with microseconds, so that every stamp has the same
    length and text order is time order (what lets SQLite select a day's arrivals)."""
    if moment.tzinfo is None:
        raise ValueError(f"a registration time must be timezone-aware, got {moment!r}")
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _sortable_arrivals(db: sqlite3.Connection) -> None:
    """Version 0 -> 1: older catalogs wrote `datetime.now(UTC).isoformat()`, whose text drops
    the microseconds when they are zero (so it does not sort as time); rewrite every stamp in
    one form and index them for the digest's day queries."""
    for paper_id, stamp in db.execute("SELECT paper_id, registered_at FROM papers").fetchall():
        moment = datetime.fromisoformat(stamp)
        if moment.tzinfo is None:  # never written so, but a hand-edited catalog might be
            moment = moment.replace(tzinfo=UTC)
        db.execute(
            "UPDATE papers SET registered_at = ? WHERE paper_id = ?", (_stamp(moment), paper_id)
        )
    db.execute("CREATE INDEX IF NOT EXISTS papers_registered_at ON papers (registered_at)")


def _retractions(db: sqlite3.Connection) -> None:
    """Version 1 -> 2: the retractions, one row a mark (made, and once lifted, `restored_at`);
    a paper has at most one mark in force."""
    # Statement by statement: `executescript` would commit the migration's transaction.
    db.execute(
        "CREATE TABLE IF NOT EXISTS retractions (paper_id TEXT NOT NULL REFERENCES "
        "papers(paper_id), reason TEXT NOT NULL, marked_by TEXT NOT NULL, "
        "retracted_at TEXT NOT NULL, restored_at TEXT)"
    )
    db.execute(
        "CREATE UNIQUE INDEX IF NOT EXISTS retractions_in_force "
        "ON retractions (paper_id) WHERE restored_at IS NULL"
    )


def _citation_keys(db: sqlite3.Connection) -> None:
    """Version 2 -> 3: each paper's citation key, who gave it and when; unique regardless of
    case, as BibTeX compares keys."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS citation_keys (paper_id TEXT PRIMARY KEY REFERENCES "
        "papers(paper_id), citation_key TEXT NOT NULL, given_by TEXT NOT NULL, "
        "given_at TEXT NOT NULL)"
    )
    db.execute(
        "CREATE UNIQUE INDEX IF NOT EXISTS citation_keys_unique "
        "ON citation_keys (citation_key COLLATE NOCASE)"
    )


_MIGRATIONS = [_sortable_arrivals, _retractions, _citation_keys]

# Who marked a paper retracted: the command, or the paper's source (its table or library).
BY_COMMAND = "command"
BY_SOURCE = "source"
# A source's `retracted` value that only says yes; any other text that is not a no is the reason.
_YES = {"1", "true", "yes", "y", "t", "x", "retracted"}
_NO = {"", "0", "false", "no", "n", "f", "none", "-"}
SOURCE_REASON = "marked retracted by its source"


def source_retraction(source: PaperSource) -> str | None:
    """The reason the paper's source marks it retracted (its `retracted` field: an abstract
    table's column, a BibTeX entry's field), or None when it does not: a value such as `true`,
    `yes`, `1` marks it (`SOURCE_REASON`), any other text but a no (`false`, `no`, `0`, empty)
    marks it with that text as the reason."""
    value = " ".join(source.fields.get("retracted", "").split())
    if value.casefold() in _NO:
        return None
    return SOURCE_REASON if value.casefold() in _YES else value


class Retraction(BaseModel):
    """A paper's retraction mark: why, by whom, when it was made and (once lifted) restored."""

    paper_id: str
    reason: str
    marked_by: str
    retracted_at: datetime
    restored_at: datetime | None = None


# Below SQLite's least limit on a statement's parameters (999 before 3.32).
_IDS_PER_QUERY = 500


def _with_library_record(source: PaperSource, stored_json: str) -> PaperSource:
    """`source`, a PDF without a reference manager's fields (found in a folder), with those of
    the catalog's paper when a library (Zotero, BibTeX) registered it: a library's record is
    the user's curated one, so a paper shared by a folder and a library keeps the library's
    title, authors and year in every collection, whichever ran first or last. Its content hash
    then covers them (`pdf_content_sha256`): the same file is the same paper, nothing of it
    built again; an edited file is a changed paper that keeps the library's record. Any other
    source is returned as it is."""
    if source.kind != "pdf" or source.fields:
        return source
    stored = PaperSource.model_validate_json(stored_json)
    if stored.kind != "pdf" or not stored.fields:
        return source
    return source.model_copy(
        update={
            "fields": stored.fields,
            "external_id": stored.external_id,
            "citation_key": stored.citation_key,
            "library_bibtex": stored.library_bibtex,
            "content_sha256": pdf_content_sha256(source.content_sha256, stored.fields),
        }
    )


def _library_side(source: PaperSource) -> tuple[str | None, str | None]:
    """What of a source its content hash leaves out: the library's key and entry."""
    return source.citation_key, source.library_bibtex


class Registration(StrEnum):
    NEW = "new"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    JOINED = "joined"  # known, unchanged, and new to this collection: only it is rebuilt


def _mark_from_source(db: sqlite3.Connection, source: PaperSource, now: datetime | None) -> None:
    """The source's retraction mark (`source_retraction`) made, changed or lifted; a mark the
    command made is the command's to lift."""
    reason = source_retraction(source)
    row = db.execute(
        "SELECT reason, marked_by FROM retractions WHERE paper_id = ? AND restored_at IS NULL",
        (source.paper_id,),
    ).fetchone()
    if row is not None and (row[1] == BY_COMMAND or row[0] == reason):
        return
    moment = _stamp(now or datetime.now(UTC))
    if row is not None:
        db.execute(
            "UPDATE retractions SET restored_at = ? WHERE paper_id = ? AND restored_at IS NULL",
            (moment, source.paper_id),
        )
    if reason is not None:
        db.execute(
            "INSERT INTO retractions VALUES (?, ?, ?, ?, NULL)",
            (source.paper_id, reason, BY_SOURCE, moment),
        )


class CitationKey(BaseModel):
    """A paper's citation key, who gave it (`citation_keys.GIVERS`) and when."""

    paper_id: str
    key: str
    given_by: str
    given_at: datetime


class KeyClash(BaseModel):
    """A library's key the catalog could not give its paper, and why: the paper is cited by
    `key_given` instead (None until a generated one is given)."""

    paper_id: str
    library_key: str
    reason: str
    key_given: str | None


def _holder(db: sqlite3.Connection, key: str) -> tuple[str, str] | None:
    """(paper_id, key as given) of the paper holding `key`, regardless of case; None if free."""
    row = db.execute(
        "SELECT paper_id, citation_key FROM citation_keys WHERE citation_key = ? COLLATE NOCASE",
        (key,),
    ).fetchone()
    return None if row is None else (row[0], row[1])


def _give_library_key(db: sqlite3.Connection, source: PaperSource, now: datetime | None) -> None:
    """The source's library key given to its paper, unless the user set the paper's key, the
    key cannot be cited (`key_problem`) or another paper holds it (`key_clashes` lists
    both)."""
    key = source.citation_key
    if not key or key_problem(key):
        return
    row = db.execute(
        "SELECT citation_key, given_by FROM citation_keys WHERE paper_id = ?", (source.paper_id,)
    ).fetchone()
    if row is not None and (row[0] == key or row[1] == BY_USER):
        return
    holder = _holder(db, key)
    if holder is not None and holder[0] != source.paper_id:
        return
    db.execute(
        "INSERT INTO citation_keys VALUES (?, ?, ?, ?) ON CONFLICT(paper_id) DO UPDATE SET "
        "citation_key = excluded.citation_key, given_by = excluded.given_by, "
        "given_at = excluded.given_at",
        (source.paper_id, key, BY_LIBRARY, _stamp(now or datetime.now(UTC))),
    )


class Catalog:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.executescript(_SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        with self._connect() as db:
            if db.execute("PRAGMA user_version").fetchone()[0] >= _VERSION:
                return
            # The write lock, then the version again: two processes opening an old catalog at
            # once migrate it once.
            db.execute("BEGIN IMMEDIATE")
            (version,) = db.execute("PRAGMA user_version").fetchone()
            for migration in _MIGRATIONS[version:]:
                migration(db)
            db.execute(f"PRAGMA user_version = {max(version, _VERSION)}")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # One short-lived connection per operation: Dagster steps run in other threads/processes.
        db = sqlite3.connect(self.path, timeout=30)
        try:
            with db:
                yield db
        finally:
            db.close()

    def register(
        self,
        source: PaperSource,
        collection: str,
        now: datetime | None = None,
        move: bool = False,
    ) -> Registration:
        """Record a paper as a member of `collection` (idempotent); a known id with new content
        replaces the old source (a PDF from a folder keeping the reference manager's fields the
        catalog holds for it: `_with_library_record`), and a known paper keeps its other
        collections unless `move`.

        `now` (timezone-aware, default: the clock) is a new paper's arrival; a known paper
        keeps its first one.
        """
        with self._connect() as db:
            # The write lock first: the check and the write see the same catalog.
            db.execute("BEGIN IMMEDIATE")
            row = db.execute(
                "SELECT content_sha256, source_json FROM papers WHERE paper_id = ?",
                (source.paper_id,),
            ).fetchone()
            member = db.execute(
                "SELECT 1 FROM memberships WHERE collection = ? AND paper_id = ?",
                (collection, source.paper_id),
            ).fetchone()
            if row is not None:
                source = _with_library_record(source, row[1])
            if row is None:
                outcome = Registration.NEW
            elif row[0] != source.content_sha256:
                outcome = Registration.CHANGED
            elif member is None:
                outcome = Registration.JOINED
            else:
                outcome = Registration.UNCHANGED
            if outcome in (Registration.NEW, Registration.CHANGED):
                db.execute(
                    "INSERT INTO papers VALUES (?, ?, ?, ?) ON CONFLICT(paper_id) DO UPDATE SET "
                    "content_sha256 = excluded.content_sha256, source_json = excluded.source_json",
                    (
                        source.paper_id,
                        source.content_sha256,
                        source.model_dump_json(),
                        _stamp(now or datetime.now(UTC)),
                    ),
                )
            elif row is not None and _library_side(PaperSource.model_validate_json(row[1])) != (
                _library_side(source)
            ):
                # A key renamed or an entry edited in the library, its record unchanged, is the
                # same paper: the source follows, nothing of it is rebuilt.
                db.execute(
                    "UPDATE papers SET source_json = ? WHERE paper_id = ?",
                    (source.model_dump_json(), source.paper_id),
                )
            if move:
                db.execute(
                    "DELETE FROM memberships WHERE paper_id = ? AND collection != ?",
                    (source.paper_id, collection),
                )
            db.execute(
                "INSERT OR IGNORE INTO memberships VALUES (?, ?)", (collection, source.paper_id)
            )
            _mark_from_source(db, source, now)
            _give_library_key(db, source, now)
        return outcome

    def keys(self, paper_ids: list[str] | None = None) -> dict[str, CitationKey]:
        """The citation keys given (of these papers; default: of every paper), by paper."""
        with self._connect() as db:
            rows = db.execute("SELECT * FROM citation_keys ORDER BY given_at, paper_id").fetchall()
        wanted = None if paper_ids is None else set(paper_ids)
        return {
            paper_id: CitationKey(
                paper_id=paper_id,
                key=key,
                given_by=given_by,
                given_at=datetime.fromisoformat(given_at),
            )
            for paper_id, key, given_by, given_at in rows
            if wanted is None or paper_id in wanted
        }

    def give_generated_keys(
        self, parts: Mapping[str, KeyParts], now: datetime | None = None
    ) -> dict[str, str]:
        """Generated keys (`generated_base`, `suffixed`) given to the papers of `parts` that
        have none, in the order they were registered (then by id), so that two papers of one
        base are suffixed as they arrived, whichever is built first; the keys given, by
        paper. A paper the catalog does not hold is a KeyError."""
        moment = _stamp(now or datetime.now(UTC))
        given: dict[str, str] = {}
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            known = dict(
                db.execute(
                    "SELECT paper_id, registered_at FROM papers WHERE paper_id IN "
                    "(SELECT value FROM json_each(?))",
                    (json.dumps(list(parts)),),
                ).fetchall()
            )
            unknown = sorted(set(parts) - set(known))
            if unknown:
                raise KeyError(f"paper {unknown[0]!r} is not in the catalog {self.path}")
            keyed = {row[0] for row in db.execute("SELECT paper_id FROM citation_keys")}
            taken = [row[0] for row in db.execute("SELECT citation_key FROM citation_keys")]
            for paper_id in sorted(set(parts) - keyed, key=lambda p: (known[p], p)):
                key = suffixed(generated_base(parts[paper_id]), taken)
                db.execute(
                    "INSERT INTO citation_keys VALUES (?, ?, ?, ?)",
                    (paper_id, key, GENERATED, moment),
                )
                taken.append(key)
                given[paper_id] = key
        return given

    def set_key(self, paper_id: str, key: str, now: datetime | None = None) -> None:
        """The user's key for the paper, which no library key or generated one replaces.
        Raises ValueError with one line for a key no manuscript could cite or another paper
        holds (regardless of case), KeyError for a paper the catalog does not hold."""
        self._paper_column(paper_id, "paper_id")
        problem = key_problem(key)
        if problem:
            raise ValueError(f"{key!r}: {problem}")
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            holder = _holder(db, key)
            if holder is not None and holder[0] != paper_id:
                raise ValueError(f"{key!r}: {holder[0]} is cited by {holder[1]!r} already")
            db.execute(
                "INSERT INTO citation_keys VALUES (?, ?, ?, ?) ON CONFLICT(paper_id) DO UPDATE "
                "SET citation_key = excluded.citation_key, given_by = excluded.given_by, "
                "given_at = excluded.given_at",
                (paper_id, key, BY_USER, _stamp(now or datetime.now(UTC))),
            )

    def key_clashes(self) -> list[KeyClash]:
        """The papers whose library key they were not given, each with why, in id order: a
        key no manuscript could cite, or one another paper holds (a manuscript citing it
        would get that paper). A paper whose key the user set is none of them."""
        keys = self.keys()
        holders = {given.key.casefold(): given.paper_id for given in keys.values()}
        with self._connect() as db:
            rows = db.execute("SELECT paper_id, source_json FROM papers ORDER BY 1").fetchall()
        clashes = []
        for paper_id, source_json in rows:
            wanted = PaperSource.model_validate_json(source_json).citation_key
            given = keys.get(paper_id)
            if not wanted or (
                given is not None and (given.key == wanted or given.given_by == BY_USER)
            ):
                continue
            holder = holders.get(wanted.casefold())
            reason = key_problem(wanted) or (
                f"{holder} is cited by {keys[holder].key!r}" if holder else "not given yet"
            )
            clashes.append(
                KeyClash(
                    paper_id=paper_id,
                    library_key=wanted,
                    reason=reason,
                    key_given=given.key if given else None,
                )
            )
        return clashes

    def collections_of(self, paper_ids: list[str]) -> dict[str, list[str]]:
        """The collections of each of the papers, in the order it joined them (a paper the
        catalog does not know, or that left every collection, is not a key)."""
        held: dict[str, list[str]] = {}
        with self._connect() as db:
            for start in range(0, len(paper_ids), _IDS_PER_QUERY):
                some = paper_ids[start : start + _IDS_PER_QUERY]
                rows = db.execute(
                    "SELECT paper_id, collection FROM memberships "
                    f"WHERE paper_id IN ({', '.join('?' * len(some))}) ORDER BY rowid",
                    some,
                ).fetchall()
                for paper_id, collection in rows:
                    held.setdefault(paper_id, []).append(collection)
        return held

    def home_collection(self, paper_id: str) -> str:
        """The first collection the paper joined of those that hold it, where what is asked
        of the paper alone (a query-focused summary) is written; a KeyError when none does."""
        held = self.collections_of([paper_id])
        if paper_id not in held:
            raise KeyError(f"paper {paper_id!r} is in no collection of the catalog {self.path}")
        return held[paper_id][0]

    def _paper_column(self, paper_id: str, column: str) -> str:
        """The paper's `column`; a KeyError when the catalog does not hold the paper."""
        with self._connect() as db:
            row = db.execute(
                f"SELECT {column} FROM papers WHERE paper_id = ?", (paper_id,)
            ).fetchone()
        if row is None:
            raise KeyError(f"paper {paper_id!r} is not in the catalog {self.path}")
        return str(row[0])

    def source(self, paper_id: str) -> PaperSource:
        return PaperSource.model_validate_json(self._paper_column(paper_id, "source_json"))

    def papers(
        self,
        collection: str,
        arrived_before: datetime | None = None,
        retracted: bool = False,
    ) -> list[str]:
        """The collection's papers as its assets read them: without those retracted (unless
        `retracted`); with `arrived_before`, those that arrived before then."""
        query = (
            "SELECT m.paper_id FROM memberships m JOIN papers p USING (paper_id) "
            "WHERE m.collection = ?"
        )
        parameters: list[str] = [collection]
        if arrived_before is not None:
            query += " AND p.registered_at < ?"
            parameters.append(_stamp(arrived_before))
        if not retracted:
            query += (
                " AND m.paper_id NOT IN "
                "(SELECT paper_id FROM retractions WHERE restored_at IS NULL)"
            )
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY m.paper_id", parameters).fetchall()
        return [paper_id for (paper_id,) in rows]

    def retract(
        self, paper_id: str, reason: str, now: datetime | None = None, by: str = BY_COMMAND
    ) -> bool:
        """Marks the paper retracted for `reason` (its mark in force, if any, replaced when the
        reason differs); False when it was already so marked. A KeyError for a paper the
        catalog does not hold."""
        self._paper_column(paper_id, "paper_id")
        moment = _stamp(now or datetime.now(UTC))
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute(
                "SELECT reason, marked_by FROM retractions "
                "WHERE paper_id = ? AND restored_at IS NULL",
                (paper_id,),
            ).fetchone()
            if row is not None and tuple(row) == (reason, by):
                return False
            db.execute(
                "UPDATE retractions SET restored_at = ? WHERE paper_id = ? AND restored_at IS NULL",
                (moment, paper_id),
            )
            db.execute(
                "INSERT INTO retractions VALUES (?, ?, ?, ?, NULL)", (paper_id, reason, by, moment)
            )
        return True

    def restore(self, paper_id: str, now: datetime | None = None) -> Retraction | None:
        """Lifts the paper's retraction mark; the mark lifted, or None when it had none. A
        KeyError for a paper the catalog does not hold."""
        self._paper_column(paper_id, "paper_id")
        mark = self.retractions([paper_id]).get(paper_id)
        if mark is None:
            return None
        moment = now or datetime.now(UTC)
        with self._connect() as db:
            db.execute(
                "UPDATE retractions SET restored_at = ? WHERE paper_id = ? AND restored_at IS NULL",
                (_stamp(moment), paper_id),
            )
        return mark.model_copy(update={"restored_at": moment})

    def retractions(self, paper_ids: list[str] | None = None) -> dict[str, Retraction]:
        """The marks in force of the papers (default: of every paper), by paper."""
        marks = [mark for mark in self.retraction_history() if mark.restored_at is None]
        wanted = None if paper_ids is None else set(paper_ids)
        return {m.paper_id: m for m in marks if wanted is None or m.paper_id in wanted}

    def retracted_in(self, collection: str) -> dict[str, Retraction]:
        """The marks in force of the collection's papers: those its assets leave out."""
        return self.retractions(self.papers(collection, retracted=True))

    def retraction_history(self, since: datetime | None = None) -> list[Retraction]:
        """Every mark made (or lifted) since `since` (default: ever), oldest first."""
        query = "SELECT paper_id, reason, marked_by, retracted_at, restored_at FROM retractions"
        parameters: list[str] = []
        if since is not None:
            query += " WHERE retracted_at >= ? OR restored_at >= ?"
            parameters = [_stamp(since)] * 2
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY retracted_at, rowid", parameters).fetchall()
        return [
            Retraction(
                paper_id=paper_id,
                reason=reason,
                marked_by=marked_by,
                retracted_at=datetime.fromisoformat(made),
                restored_at=datetime.fromisoformat(lifted) if lifted else None,
            )
            for paper_id, reason, marked_by, made, lifted in rows
        ]

    def registered_at(self, paper_id: str) -> datetime:
        """When the paper arrived: its first registration."""
        return datetime.fromisoformat(self._paper_column(paper_id, "registered_at"))

    def arrivals(self, start: datetime, end: datetime) -> list[PaperArrival]:
        """The papers that arrived in [start, end), oldest first, each with its collections."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT paper_id, registered_at, source_json FROM papers "
                "WHERE registered_at >= ? AND registered_at < ? ORDER BY registered_at, paper_id",
                (_stamp(start), _stamp(end)),
            ).fetchall()
            memberships = {
                paper_id: [
                    collection
                    for (collection,) in db.execute(
                        "SELECT collection FROM memberships WHERE paper_id = ? ORDER BY 1",
                        (paper_id,),
                    )
                ]
                for paper_id, _, _ in rows
            }
        return [
            PaperArrival(
                paper_id=paper_id,
                arrived_at=stamp,
                collections=memberships[paper_id],
                source=PaperSource.model_validate_json(source_json),
            )
            for paper_id, stamp, source_json in rows
        ]

    def collections(self) -> list[str]:
        with self._connect() as db:
            rows = db.execute("SELECT DISTINCT collection FROM memberships ORDER BY 1").fetchall()
        return [name for (name,) in rows]
