"""A Zotero library as the source of `litpipe run --zotero [DATA_DIR]`.

Zotero keeps its library in `DATA_DIR/zotero.sqlite` and the files it stores in
`DATA_DIR/storage/<attachment key>/<file>` (an attachment's `path` is then `storage:<file>`;
a linked file's is its absolute path). A running Zotero holds the database under an
exclusive lock, so it is read in SQLite's immutable mode, which takes no lock and writes
nothing; when a write transaction is under way (a journal beside the database) a copy of both
is read instead, which SQLite rolls back to the last commit. Item types and field names are
looked up by name: Zotero numbers them when it builds the database.

Each item (not an attachment, a note, an annotation, nor an item in the trash) is a paper:
its first PDF attachment whose file is there, carrying the item's title, authors (its
creators of type author in their order, or all its creators without one), year (from its
date), venue, DOI and abstract; without a PDF it enters by its title and abstract. A PDF
stored without a parent item is a paper of its own, read as any PDF is. An item Zotero marks
retracted (its `retractedItems` table, filled from Retraction Watch) is marked retracted in
the catalog, with Zotero's reasons. An item's citation key is Better BibTeX's, where the user
has it: Zotero 7's `citationKey` field, a `Citation Key: ...` line of `extra` (how Better
BibTeX pins a key), or the `citationkey` table of its `better-bibtex.sqlite` beside the
database, in that order. The rest follows `litpipe.ingest.library`.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from litpipe.ingest.ids import slug
from litpipe.ingest.library import LibraryEntry, library_discovery
from litpipe.ingest.sources import Discovery

DEFAULT_DATA_DIR = Path("~/Zotero")
DATABASE = "zotero.sqlite"
# The collection a whole library's papers go to when --collection does not name one.
LIBRARY_COLLECTION = "zotero"
# Where to find the data directory, for the line that says it is not there.
WHERE_IT_IS = "Zotero shows its data directory in Settings, Advanced, Files and Folders"
NOT_PAPERS = ("attachment", "note", "annotation")
PDF_TYPE = "application/pdf"
# Attachment link modes (Zotero.Attachments.LINK_MODE_*): a linked URL has no file.
LINKED_URL = 3
STORAGE = "storage:"
# Linked files relative to the base directory set in Zotero's preferences, not in the database.
BASE_DIRECTORY = "attachments:"
TITLE_FIELDS = ("title", "caseName", "nameOfAct", "subject")
# Where each item type keeps what it was published in, in order: a journal's, proceedings',
# book's, website's title, then a thesis' university, a report's institution, a preprint's
# repository, a book's publisher (an item type has only its own fields).
VENUE_FIELDS = (
    "publicationTitle",
    "proceedingsTitle",
    "bookTitle",
    "conferenceName",
    "encyclopediaTitle",
    "dictionaryTitle",
    "websiteTitle",
    "blogTitle",
    "forumTitle",
    "programTitle",
    "university",
    "institution",
    "repository",
    "publisher",
)
FIELDS = (*TITLE_FIELDS, *VENUE_FIELDS, "date", "DOI", "extra", "abstractNote", "citationKey")
# Better BibTeX's database of citation keys, beside Zotero's.
BETTER_BIBTEX = "better-bibtex.sqlite"
_KEY_IN_EXTRA = re.compile(r"^\s*Citation Key:\s*(\S+)\s*$", re.I | re.M)
# The predicate of Zotero's "Related" items in `itemRelations`.
RELATED = "dc:relation"
_DOI_IN_EXTRA = re.compile(r"^\s*DOI:\s*(\S+)", re.I | re.M)
_TITLE_SHOWN = 60


@dataclass
class _Item:
    key: str
    type_name: str | None
    fields: dict[str, str] = field(default_factory=dict)
    creators: list[tuple[str, str]] = field(default_factory=list)  # (name, creator type)
    pdfs: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Zotero's own mark (its `retractedItems`, from Retraction Watch): the reasons, or "true".
    retracted: str = ""


@dataclass
class ZoteroListing:
    """The items of a Zotero library (or of one of its collections), listed without reading
    or hashing a PDF."""

    # The litpipe collection its papers go to.
    collection: str
    # The library's zotero.sqlite: what an item without a PDF comes from.
    database: Path
    entries: list[LibraryEntry]

    def discovery(self, entries: list[LibraryEntry] | None = None) -> Discovery:
        """The papers of its entries (or of some of them: a sync's batch, which may have none
        to run on), their PDFs hashed."""
        if entries is None:
            return library_discovery(self.entries, self.collection, self.database, "item")
        return library_discovery(entries, self.collection, self.database, "item", allow_empty=True)


def discover_zotero(
    data_dir: Path, collection: str | None = None, zotero_collection: str | None = None
) -> Discovery:
    """The papers of the Zotero library in `data_dir` (or of its collection
    `zotero_collection`, sub-collections included), in the litpipe collection `collection`
    (default: the Zotero collection's name, slugged, or `zotero` for the whole library).

    Raises ValueError, with a one-line reason, for a library there is nothing to run on: no
    such folder, no database in it, a database that cannot be read, no such collection, no
    item with a PDF or an abstract.
    """
    return list_zotero(data_dir, collection, zotero_collection).discovery()


def list_zotero(
    data_dir: Path, collection: str | None = None, zotero_collection: str | None = None
) -> ZoteroListing:
    """The items `discover_zotero` makes papers of, listed from the database alone (a file's
    size and mtime are all a sync reads of it before it hashes the items that changed).

    Raises ValueError, with a one-line reason, for a library that cannot be read: no such
    folder, no database in it, a database that cannot be read, no such collection.
    """
    data_dir = data_dir.expanduser()
    if not data_dir.is_dir():
        problem = "not a folder" if data_dir.exists() else "no such folder"
        raise ValueError(
            f"{data_dir}: {problem}; --zotero takes Zotero's data directory, the folder "
            f"holding {DATABASE} ({WHERE_IT_IS})"
        )
    database = data_dir / DATABASE
    if not database.is_file():
        raise ValueError(
            f"{data_dir}: no {DATABASE} in this folder; is it Zotero's data directory? "
            f"({WHERE_IT_IS})"
        )
    try:
        with _read_only(database) as db:
            name, items = _library(db, data_dir, zotero_collection)
    except sqlite3.Error as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ValueError(f"{database}: cannot read the Zotero database: {reason}") from error
    chosen = slug(collection) if collection else slug(name) if name else LIBRARY_COLLECTION
    keys = better_bibtex_keys(data_dir)
    return ZoteroListing(chosen, database, [_entry(item, keys) for item in items])


def better_bibtex_keys(data_dir: Path) -> dict[str, str]:
    """Better BibTeX's citation key of each item, by item key, from its `better-bibtex.sqlite`
    (its `citationkey` table); {} where there is none, or it cannot be read (a citation key
    is a nicety: the library is read without it)."""
    database = data_dir / BETTER_BIBTEX
    if not database.is_file():
        return {}
    try:
        with _read_only(database) as db:
            if not _has_table(db, "citationkey"):
                return {}
            rows = db.execute("SELECT itemKey, citationKey FROM citationkey").fetchall()
    except sqlite3.Error:
        return {}
    return {str(item): str(key) for item, key in rows if item and key}


def related_item_keys(data_dir: Path) -> dict[str, list[str]]:
    """Each item's related items (Zotero's "Related", kept in `itemRelations` as `dc:relation`
    to the other item's URI, `http://zotero.org/users/<id>/items/<KEY>`), by item key; {}
    for a library without relations.

    Raises ValueError, with a one-line reason, for a database that cannot be read.
    """
    database = data_dir.expanduser() / DATABASE
    related: dict[str, list[str]] = {}
    try:
        with _read_only(database) as db:
            if not _has_table(db, "itemRelations"):
                return related
            rows = db.execute(
                "SELECT items.key, itemRelations.object FROM itemRelations "
                "JOIN relationPredicates "
                "ON relationPredicates.predicateID = itemRelations.predicateID "
                "JOIN items ON items.itemID = itemRelations.itemID "
                "WHERE relationPredicates.predicate = ? "
                "ORDER BY items.itemID, itemRelations.object",
                (RELATED,),
            ).fetchall()
    except sqlite3.Error as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ValueError(f"{database}: cannot read the Zotero database: {reason}") from error
    for key, uri in rows:
        other = str(uri).rstrip("/").rpartition("/")[2]
        if other and other != key:
            related.setdefault(key, []).append(other)
    return related


@contextmanager
def _read_only(database: Path) -> Iterator[sqlite3.Connection]:
    """A connection that reads the database as it was last committed, disturbing no Zotero
    that has it open: immutable (no lock taken, nothing written), or, while a transaction has
    its journal beside it, a copy of both, which SQLite opens by rolling the journal back."""
    side_files = [
        Path(f"{database}{suffix}")
        for suffix in ("-journal", "-wal")
        if Path(f"{database}{suffix}").exists()
    ]
    if not side_files:
        uri = f"{database.resolve().as_uri()}?mode=ro&immutable=1"
        with closing(sqlite3.connect(uri, uri=True)) as db:
            yield db
        return
    with tempfile.TemporaryDirectory(prefix="litpipe-zotero-") as folder:
        copy = Path(folder) / DATABASE
        shutil.copyfile(database, copy)
        for side in side_files:
            shutil.copyfile(side, Path(folder) / side.name)
        with closing(sqlite3.connect(copy)) as db:
            yield db


def _library(
    db: sqlite3.Connection, data_dir: Path, zotero_collection: str | None
) -> tuple[str | None, list[_Item]]:
    """The chosen collection's name (None for the whole library) and its items, in the order
    they were added."""
    deleted = "SELECT itemID FROM deletedItems"
    items: dict[int, _Item] = {}
    for item_id, key, type_name in db.execute(
        "SELECT items.itemID, items.key, itemTypes.typeName FROM items "
        "LEFT JOIN itemTypes ON itemTypes.itemTypeID = items.itemTypeID "
        f"WHERE items.itemID NOT IN ({deleted}) ORDER BY items.itemID"
    ):
        items[item_id] = _Item(key=key, type_name=type_name)
    name = None
    if zotero_collection is not None:
        name, chosen = _collection_items(db, zotero_collection)
        wanted = {item_id for item_id in items if item_id in chosen}
    else:
        wanted = set(items)
    placeholders = ",".join("?" * len(FIELDS))
    for item_id, field_name, value in db.execute(
        "SELECT itemData.itemID, fields.fieldName, itemDataValues.value FROM itemData "
        "JOIN fields ON fields.fieldID = itemData.fieldID "
        "JOIN itemDataValues ON itemDataValues.valueID = itemData.valueID "
        f"WHERE fields.fieldName IN ({placeholders})",
        FIELDS,
    ):
        if item_id in items and value is not None:
            items[item_id].fields[field_name] = str(value)
    for item_id, first, last, field_mode, creator_type in db.execute(
        "SELECT itemCreators.itemID, creators.firstName, creators.lastName, creators.fieldMode, "
        "creatorTypes.creatorType FROM itemCreators "
        "JOIN creators ON creators.creatorID = itemCreators.creatorID "
        "LEFT JOIN creatorTypes ON creatorTypes.creatorTypeID = itemCreators.creatorTypeID "
        "ORDER BY itemCreators.itemID, itemCreators.orderIndex"
    ):
        if item_id in items:
            items[item_id].creators.append((_creator_name(first, last, field_mode), creator_type))
    if _has_table(db, "retractedItems"):
        for item_id, data in db.execute("SELECT itemID, data FROM retractedItems"):
            if item_id in items:
                items[item_id].retracted = _retraction_reasons(data)
    papers = {item_id: item for item_id, item in items.items() if item.type_name not in NOT_PAPERS}
    for item_id, parent_id, link_mode, content_type, path in db.execute(
        "SELECT itemID, parentItemID, linkMode, contentType, path FROM itemAttachments "
        f"WHERE itemID NOT IN ({deleted}) ORDER BY itemID"
    ):
        if item_id not in items or not _is_pdf(content_type, path) or link_mode == LINKED_URL:
            continue
        if parent_id is None:  # a PDF without a parent item: a paper of its own
            papers[item_id] = _Item(key=items[item_id].key, type_name="attachment")
            parent_id = item_id
        if parent_id not in papers:
            continue
        found = _attachment_file(data_dir, items[item_id].key, path)
        if isinstance(found, Path):
            papers[parent_id].pdfs.append(found)
        else:
            papers[parent_id].problems.append(found)
    return name, [item for item_id, item in papers.items() if item_id in wanted]


def _collection_items(db: sqlite3.Connection, wanted: str) -> tuple[str, set[int]]:
    """The name of the collection `wanted` names (its name, or its path of names from a top
    collection: `Parent/Child`) and the items in it or in its sub-collections.

    Raises ValueError when no collection, or more than one, has that name."""
    trashed = (
        "SELECT collectionID FROM deletedCollections"
        if _has_table(db, "deletedCollections")
        else "SELECT NULL WHERE 0"
    )
    rows = db.execute(
        "SELECT collectionID, collectionName, parentCollectionID FROM collections "
        f"WHERE collectionID NOT IN ({trashed}) ORDER BY collectionID"
    ).fetchall()
    names = {row[0]: row[1] for row in rows}
    parents = {row[0]: row[2] for row in rows}

    def path(collection_id: int) -> str:
        parts: list[str] = []
        seen: set[int] = set()
        current: int | None = collection_id
        while current is not None and current in names and current not in seen:
            seen.add(current)
            parts.append(names[current])
            current = parents[current]
        return "/".join(reversed(parts))

    found = [c for c in names if path(c) == wanted or names[c] == wanted]
    if not found:
        found = [c for c in names if wanted.casefold() in (path(c).casefold(), names[c].casefold())]
    if not found:
        known = sorted(path(c) for c in names)
        listed = ", ".join(known[:10]) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
        raise ValueError(
            f"no Zotero collection named {wanted!r} (its collections: {listed or 'none'})"
        )
    if len(found) > 1:
        raise ValueError(
            f"{len(found)} Zotero collections are named {wanted!r} "
            f"({', '.join(path(c) for c in found)}); give its path, as Parent/Child"
        )
    chosen = {found[0]}
    grown = True
    while grown:
        children = {c for c, parent in parents.items() if parent in chosen} - chosen
        chosen |= children
        grown = bool(children)
    marks = ",".join("?" * len(chosen))
    items = {
        row[0]
        for row in db.execute(
            f"SELECT itemID FROM collectionItems WHERE collectionID IN ({marks})", sorted(chosen)
        )
    }
    return names[found[0]], items


def _retraction_reasons(data: str | None) -> str:
    """The reasons of Zotero's record of a retraction (its JSON `reasons`, or `reason`), as one
    line; "true" when it gives none."""
    try:
        record = json.loads(data or "{}")
    except json.JSONDecodeError:
        record = {}
    reasons = record.get("reasons", record.get("reason")) if isinstance(record, dict) else None
    if isinstance(reasons, str):
        reasons = [reasons]
    listed = [str(reason).strip() for reason in reasons or [] if str(reason).strip()]
    return f"Retraction Watch, via Zotero: {'; '.join(listed)}" if listed else "true"


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    return db.execute(query, (name,)).fetchone() is not None


def _creator_name(first: str | None, last: str | None, field_mode: int | None) -> str:
    """`Family, Given`; a name kept in one field (an organisation) as it is."""
    family, given = " ".join((last or "").split()), " ".join((first or "").split())
    if field_mode == 1 or not given:
        return family or given
    return f"{family}, {given}" if family else given


def _is_pdf(content_type: str | None, path: str | None) -> bool:
    return content_type == PDF_TYPE or (path or "").lower().endswith(".pdf")


def _attachment_file(data_dir: Path, key: str, path: str | None) -> Path | str:
    """The attachment's file (there or not), or why it cannot be found."""
    if not path:
        return f"its PDF attachment {key} has no file path"
    if path.startswith(STORAGE):
        return data_dir / "storage" / key / path.removeprefix(STORAGE)
    if path.startswith(BASE_DIRECTORY):
        return (
            f"its PDF {path.removeprefix(BASE_DIRECTORY)} is linked relative to the base "
            "directory set in Zotero's preferences, which litpipe cannot read"
        )
    return Path(path).expanduser()


def _citation_key(item: _Item, better_bibtex: dict[str, str]) -> str:
    """The item's Better BibTeX key: `citationKey`, else `extra`'s pinned one, else the one in
    Better BibTeX's database; empty where there is none."""
    found = _KEY_IN_EXTRA.search(item.fields.get("extra", ""))
    return (
        item.fields.get("citationKey", "").strip()
        or (found.group(1) if found else "")
        or better_bibtex.get(item.key, "")
    )


def _entry(item: _Item, better_bibtex: dict[str, str]) -> LibraryEntry:
    values = item.fields
    title = next((values[name] for name in TITLE_FIELDS if values.get(name, "").strip()), "")
    shown = " ".join(title.split())
    if len(shown) > _TITLE_SHOWN:
        shown = shown[: _TITLE_SHOWN - 1].rstrip() + "…"
    if item.type_name == "attachment":  # a PDF without a parent: read as any PDF is
        return LibraryEntry(key=item.key, name=f"Zotero attachment {item.key}", pdfs=item.pdfs)
    authors = [name for name, kind in item.creators if kind == "author" and name]
    doi = values.get("DOI", "")
    if not doi and (found := _DOI_IN_EXTRA.search(values.get("extra", ""))):
        doi = found.group(1)
    return LibraryEntry(
        key=item.key,
        name=f"Zotero item {item.key}" + (f" “{shown}”" if shown else ""),
        title=title,
        authors=authors or [name for name, _ in item.creators if name],
        year=values.get("date", ""),
        venue=next((values[name] for name in VENUE_FIELDS if values.get(name, "").strip()), ""),
        doi=doi,
        abstract=values.get("abstractNote", ""),
        pdfs=item.pdfs,
        problem="; ".join(item.problems),
        retracted=item.retracted,
        citation_key=_citation_key(item, better_bibtex),
    )
