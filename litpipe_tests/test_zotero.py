"""`litpipe run --zotero`: a Zotero library read without disturbing a running Zotero, each item
its PDF with the library's metadata (or its abstract), bad items failing alone.

The database is made here with Zotero 7's own schema (resource/schema/userdata.sql of Zotero
7.0) for the tables the reader uses; Zotero numbers item types, fields and creator types when
it builds a database, so the numbers below are arbitrary and the reader looks them up by name.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from litpipe.cli import main
from litpipe.ingest.zotero import discover_zotero
from litpipe_tests.bundled import short_paper
from litpipe_tests.cited import home_keys
from litpipe_tests.test_cli import PER_PAPER, materializations

CORPUS = Path(__file__).resolve().parents[1] / "corpora" / "biology-cc-by"
REV1_PDF = CORPUS / "10.1093_nar_gkae252.pdf"
PARP1_PDF = CORPUS / "10.1073_pnas.2322520121.pdf"

# Zotero 7.0's userdata.sql, the tables litpipe reads (and the two their keys point to).
SCHEMA = """
CREATE TABLE itemTypes (
    itemTypeID INTEGER PRIMARY KEY,
    typeName TEXT,
    templateItemTypeID INT,
    display INT DEFAULT 1 -- 0 == hide, 1 == display, 2 == primary
);
CREATE TABLE fields (
    fieldID INTEGER PRIMARY KEY,
    fieldName TEXT,
    fieldFormatID INT,
    FOREIGN KEY (fieldFormatID) REFERENCES fieldFormats(fieldFormatID)
);
CREATE TABLE creatorTypes (
    creatorTypeID INTEGER PRIMARY KEY,
    creatorType TEXT
);
CREATE TABLE items (
    itemID INTEGER PRIMARY KEY,
    itemTypeID INT NOT NULL,
    dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT NOT NULL,
    key TEXT NOT NULL,
    version INT NOT NULL DEFAULT 0,
    synced INT NOT NULL DEFAULT 0,
    UNIQUE (libraryID, key),
    FOREIGN KEY (libraryID) REFERENCES libraries(libraryID) ON DELETE CASCADE
);
CREATE INDEX items_synced ON items(synced);
CREATE TABLE itemDataValues (
    valueID INTEGER PRIMARY KEY,
    value UNIQUE
);
CREATE TABLE itemData (
    itemID INT,
    fieldID INT,
    valueID,
    PRIMARY KEY (itemID, fieldID),
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (fieldID) REFERENCES fieldsCombined(fieldID),
    FOREIGN KEY (valueID) REFERENCES itemDataValues(valueID)
);
CREATE INDEX itemData_fieldID ON itemData(fieldID);
CREATE INDEX itemData_valueID ON itemData(valueID);
CREATE TABLE itemAttachments (
    itemID INTEGER PRIMARY KEY,
    parentItemID INT,
    linkMode INT,
    contentType TEXT,
    charsetID INT,
    path TEXT,
    syncState INT DEFAULT 0,
    storageModTime INT,
    storageHash TEXT,
    lastProcessedModificationTime INT,
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (parentItemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (charsetID) REFERENCES charsets(charsetID) ON DELETE SET NULL
);
CREATE INDEX itemAttachments_parentItemID ON itemAttachments(parentItemID);
CREATE INDEX itemAttachments_charsetID ON itemAttachments(charsetID);
CREATE INDEX itemAttachments_contentType ON itemAttachments(contentType);
CREATE INDEX itemAttachments_syncState ON itemAttachments(syncState);
CREATE INDEX itemAttachments_lastProcessedModificationTime
    ON itemAttachments(lastProcessedModificationTime);
CREATE TABLE creators (
    creatorID INTEGER PRIMARY KEY,
    firstName TEXT,
    lastName TEXT,
    fieldMode INT,
    UNIQUE (lastName, firstName, fieldMode)
);
CREATE TABLE itemCreators (
    itemID INT NOT NULL,
    creatorID INT NOT NULL,
    creatorTypeID INT NOT NULL DEFAULT 1,
    orderIndex INT NOT NULL DEFAULT 0,
    PRIMARY KEY (itemID, creatorID, creatorTypeID, orderIndex),
    UNIQUE (itemID, orderIndex),
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (creatorID) REFERENCES creators(creatorID) ON DELETE CASCADE,
    FOREIGN KEY (creatorTypeID) REFERENCES creatorTypes(creatorTypeID)
);
CREATE INDEX itemCreators_creatorTypeID ON itemCreators(creatorTypeID);
CREATE TABLE collections (
    collectionID INTEGER PRIMARY KEY,
    collectionName TEXT NOT NULL,
    parentCollectionID INT DEFAULT NULL,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT NOT NULL,
    key TEXT NOT NULL,
    version INT NOT NULL DEFAULT 0,
    synced INT NOT NULL DEFAULT 0,
    UNIQUE (libraryID, key),
    FOREIGN KEY (libraryID) REFERENCES libraries(libraryID) ON DELETE CASCADE,
    FOREIGN KEY (parentCollectionID) REFERENCES collections(collectionID) ON DELETE CASCADE
);
CREATE TABLE collectionItems (
    collectionID INT NOT NULL,
    itemID INT NOT NULL,
    orderIndex INT NOT NULL DEFAULT 0,
    PRIMARY KEY (collectionID, itemID),
    FOREIGN KEY (collectionID) REFERENCES collections(collectionID) ON DELETE CASCADE,
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE
);
CREATE INDEX collectionItems_itemID ON collectionItems(itemID);
CREATE TABLE deletedCollections (
    collectionID INTEGER PRIMARY KEY,
    dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL,
    FOREIGN KEY (collectionID) REFERENCES collections(collectionID) ON DELETE CASCADE
);
CREATE TABLE deletedItems (
    itemID INTEGER PRIMARY KEY,
    dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL,
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE
);
CREATE INDEX deletedItems_dateDeleted ON deletedItems(dateDeleted);
CREATE TABLE libraries (
    libraryID INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    editable INT NOT NULL,
    filesEditable INT NOT NULL,
    version INT NOT NULL DEFAULT 0,
    storageVersion INT NOT NULL DEFAULT 0,
    lastSync INT NOT NULL DEFAULT 0,
    archived INT NOT NULL DEFAULT 0
);
"""

# Numbered out of order, as Zotero's own numbering is no concern of the reader.
ITEM_TYPES = {"annotation": 1, "attachment": 3, "book": 7, "journalArticle": 22, "note": 28}
ITEM_TYPES |= {"preprint": 31}
FIELDS = {
    "title": 1, "abstractNote": 2, "date": 6, "publisher": 8, "extra": 16, "DOI": 26,
    "publicationTitle": 38, "repository": 99, "url": 13,
}  # fmt: skip
CREATOR_TYPES = {"author": 8, "contributor": 2, "editor": 3}

REV1_TITLE = "Sub-gene mutation rate heterogeneity from local DNA hypomethylation"
PARP1_TITLE = "PARP1 UFMylation ensures the stability of stalled replication forks"
REPAIR_ABSTRACT = (
    "Translesion synthesis polymerases bypass DNA damage at stalled forks. We show in fission "
    "yeast that REV1 recruits polymerase zeta to abasic sites and that cells lacking it are "
    "sensitive to alkylation damage, linking fork stalling to damage tolerance."
)
GONE_ABSTRACT = (
    "Replication stress induces fork reversal. Using single-molecule fibre assays we measure "
    "fork speed in cells depleted of the remodeller and find that reversal protects forks "
    "from nucleolytic degradation."
)


class ZoteroLibrary:
    """A Zotero data directory written as Zotero 7 writes one."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        (data_dir / "storage").mkdir(parents=True)
        self.database = data_dir / "zotero.sqlite"
        self.db = sqlite3.connect(self.database)
        self.db.executescript(SCHEMA)
        self.db.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) "
                        "VALUES (1, 'user', 1, 1)")  # fmt: skip
        self.db.executemany("INSERT INTO itemTypes (itemTypeID, typeName) VALUES (?, ?)",
                            [(i, n) for n, i in ITEM_TYPES.items()])  # fmt: skip
        self.db.executemany("INSERT INTO fields (fieldID, fieldName) VALUES (?, ?)",
                            [(i, n) for n, i in FIELDS.items()])  # fmt: skip
        self.db.executemany("INSERT INTO creatorTypes VALUES (?, ?)",
                            [(i, n) for n, i in CREATOR_TYPES.items()])  # fmt: skip
        self.next_id = 100

    def item(self, key: str, type_name: str, **fields: str) -> int:
        self.next_id += 1
        item_id = self.next_id
        self.db.execute(
            "INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES (?, ?, 1, ?)",
            (item_id, ITEM_TYPES[type_name], key),
        )
        for name, value in fields.items():
            self.db.execute("INSERT OR IGNORE INTO itemDataValues (value) VALUES (?)", (value,))
            (value_id,) = self.db.execute(
                "SELECT valueID FROM itemDataValues WHERE value = ?", (value,)
            ).fetchone()
            self.db.execute(
                "INSERT INTO itemData VALUES (?, ?, ?)", (item_id, FIELDS[name], value_id)
            )
        return item_id

    def creators(self, item_id: int, *names: tuple[str, str, str]) -> None:
        """(last, first, creator type) in order; an empty first name is a one-field name."""
        for order, (last, first, kind) in enumerate(names):
            mode = 0 if first else 1
            self.db.execute(
                "INSERT OR IGNORE INTO creators (firstName, lastName, fieldMode) VALUES (?, ?, ?)",
                (first, last, mode),
            )
            (creator_id,) = self.db.execute(
                "SELECT creatorID FROM creators WHERE firstName = ? AND lastName = ?", (first, last)
            ).fetchone()
            self.db.execute(
                "INSERT INTO itemCreators VALUES (?, ?, ?, ?)",
                (item_id, creator_id, CREATOR_TYPES[kind], order),
            )

    def pdf(self, parent: int | None, key: str, name: str, copy_of: Path | None) -> int:
        """A stored PDF attachment (`storage:<name>`); without `copy_of` its file is gone."""
        item_id = self.item(key, "attachment", title="Full Text PDF")
        self.db.execute(
            "INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) "
            "VALUES (?, ?, 0, 'application/pdf', ?)",
            (item_id, parent, f"storage:{name}"),
        )
        if copy_of is not None:
            (self.data_dir / "storage" / key).mkdir()
            shutil.copy(copy_of, self.data_dir / "storage" / key / name)
        return item_id

    def collection(self, collection_id: int, name: str, parent: int | None = None) -> None:
        self.db.execute(
            "INSERT INTO collections (collectionID, collectionName, parentCollectionID, "
            "libraryID, key) VALUES (?, ?, ?, 1, ?)",
            (collection_id, name, parent, f"COLL{collection_id:04d}"),
        )

    def file(self, collection_id: int, *item_ids: int) -> None:
        self.db.executemany(
            "INSERT INTO collectionItems (collectionID, itemID) VALUES (?, ?)",
            [(collection_id, item_id) for item_id in item_ids],
        )

    def close(self) -> None:
        self.db.commit()
        self.db.close()


READING, METHODS, OTHER = 1, 2, 3


def write_library(data_dir: Path) -> Path:
    """Collection "Reading" (sub-collection "Methods"), and "Other":

    - REV1KEY1, a journal article with its PDF, in Reading, Methods and Other;
    - PARP1KEY, a preprint with its PDF (its DOI only in Extra), in Methods;
    - ABSTRACT, an article without a PDF but with an abstract, in Reading;
    - GONE1KEY, an article whose PDF file is gone, with an abstract, in Reading;
    - GONE2KEY, an article whose PDF file is gone, without an abstract, in Reading;
    - BOOKONLY, a book with neither, in Reading;
    - TRASHED1, an article with its PDF in the trash, in Reading;
    - ELSEWHER, an article with an abstract in Other only; a note; and LOOSEPDF, a PDF
      without a parent item, in no collection.
    """
    library = ZoteroLibrary(data_dir)
    library.collection(READING, "Reading")
    library.collection(METHODS, "Methods", parent=READING)
    library.collection(OTHER, "Other")
    rev1 = library.item(
        "REV1KEY1",
        "journalArticle",
        title=REV1_TITLE,
        date="2024-04-12 April 12, 2024",
        publicationTitle="Nucleic Acids Research",
        DOI="10.1093/nar/gkae252",
    )
    library.creators(
        rev1,
        ("Müller", "Jörg", "author"),
        ("Smith", "Anna", "author"),
        ("Okafor", "Chidi", "author"),
        ("Editor", "Ed", "editor"),
    )
    library.pdf(rev1, "PDFREV11", "Muller - 2024 - Sub-gene.pdf", REV1_PDF)
    parp1 = library.item(
        "PARP1KEY",
        "preprint",
        title=PARP1_TITLE,
        date="2024-03-01 2024",
        repository="bioRxiv",
        extra="tex.ids: parp1\nDOI: 10.1073/pnas.2322520121",
    )
    library.creators(parp1, ("Gong", "Yamin", "author"), ("Lindahl", "Tomas", "author"))
    library.pdf(parp1, "PDFPARP1", "Gong - 2024.pdf", PARP1_PDF)
    abstract_only = library.item(
        "ABSTRACT",
        "journalArticle",
        title="REV1 at stalled forks",
        abstractNote=REPAIR_ABSTRACT,
        date="2023-00-00 2023",
        publicationTitle="Genes & Development",
    )
    library.creators(abstract_only, ("DNA Repair Consortium", "", "author"))
    gone_with_abstract = library.item(
        "GONE1KEY",
        "journalArticle",
        title="Fork reversal protects stalled forks",
        abstractNote=GONE_ABSTRACT,
        date="2022-06-01 June 2022",
    )
    library.creators(gone_with_abstract, ("Nakamura", "Aiko", "author"))
    library.pdf(gone_with_abstract, "PDFGONE1", "Nakamura - 2022.pdf", None)
    gone = library.item("GONE2KEY", "journalArticle", title="A paper whose PDF was deleted")
    library.pdf(gone, "PDFGONE2", "deleted.pdf", None)
    book = library.item("BOOKONLY", "book", title="Molecular Biology of the Gene", date="2013")
    trashed = library.item("TRASHED1", "journalArticle", title="In the trash")
    library.pdf(trashed, "PDFTRASH", "trash.pdf", REV1_PDF)
    library.db.execute("INSERT INTO deletedItems (itemID) VALUES (?)", (trashed,))
    elsewhere = library.item(
        "ELSEWHER", "journalArticle", title="Elsewhere", abstractNote=GONE_ABSTRACT, date="2020"
    )
    note = library.item("NOTE0001", "note")
    loose = short_paper(data_dir.parent, 2)
    library.pdf(None, "LOOSEPDF", "short-2.pdf", loose)
    library.file(READING, rev1, abstract_only, gone_with_abstract, gone, book, trashed)
    library.file(METHODS, rev1, parp1)
    library.file(OTHER, rev1, elsewhere, note)
    library.close()
    return data_dir


@pytest.fixture
def zotero(tmp_path: Path) -> Path:
    return write_library(tmp_path / "Zotero")


def test_a_collection_brings_its_items_and_its_sub_collections_once_each(zotero: Path) -> None:
    found = discover_zotero(zotero, zotero_collection="Reading")

    assert found.collection == "Reading"
    by_key = {source.external_id: source for source in found.sources}
    assert list(by_key) == ["REV1KEY1", "PARP1KEY", "ABSTRACT", "GONE1KEY"]
    rev1, parp1 = by_key["REV1KEY1"], by_key["PARP1KEY"]
    assert rev1.kind == "pdf" and rev1.paper_id == "10.1093_nar_gkae252"
    assert Path(rev1.path) == zotero / "storage" / "PDFREV11" / "Muller - 2024 - Sub-gene.pdf"
    assert rev1.fields == {
        "title": REV1_TITLE,
        "authors": "Müller, Jörg; Smith, Anna; Okafor, Chidi",
        "year": "2024",
        "venue": "Nucleic Acids Research",
        "doi": "10.1093/nar/gkae252",
    }
    assert parp1.paper_id == "10.1073_pnas.2322520121"
    assert parp1.fields["venue"] == "bioRxiv" and parp1.fields["doi"] == "10.1073/pnas.2322520121"
    # Without a PDF, an item enters by its title and abstract, as a table's row does.
    abstract_only = by_key["ABSTRACT"]
    assert abstract_only.kind == "table_row" and abstract_only.path == str(zotero / "zotero.sqlite")
    assert abstract_only.paper_id == "zotero.ABSTRACT"
    assert abstract_only.fields["authors"] == "DNA Repair Consortium"
    assert abstract_only.fields["abstract"] == REPAIR_ABSTRACT
    assert by_key["GONE1KEY"].kind == "table_row"
    # The item whose PDF is gone and has no abstract fails alone, in one line naming both.
    (failure,) = found.failed
    assert failure.file == str(zotero / "zotero.sqlite") and "\n" not in failure.reason
    assert failure.reason.startswith("Zotero item GONE2KEY “A paper whose PDF was deleted”")
    assert str(zotero / "storage" / "PDFGONE2" / "deleted.pdf") in failure.reason
    assert any("GONE1KEY" in note and "enters by its abstract" in note for note in found.notes)
    assert any("1 item without a PDF or an abstract" in note and "BOOKONLY" in note
               for note in found.notes)  # fmt: skip


def test_the_whole_library_and_collections_by_path(zotero: Path) -> None:
    whole = discover_zotero(zotero)
    assert whole.collection == "zotero"
    by_key = {source.external_id: source for source in whole.sources}
    assert set(by_key) == {"REV1KEY1", "PARP1KEY", "ABSTRACT", "GONE1KEY", "ELSEWHER", "LOOSEPDF"}
    # A PDF without a parent item is read as any PDF is: named by its own DOI, no metadata.
    assert by_key["LOOSEPDF"].paper_id == "10.5555_short.2" and by_key["LOOSEPDF"].fields == {}
    assert discover_zotero(zotero, "My papers", "Reading/Methods").collection == "My-papers"
    methods = discover_zotero(zotero, zotero_collection="methods")
    assert {source.external_id for source in methods.sources} == {"REV1KEY1", "PARP1KEY"}
    with pytest.raises(ValueError, match=r"no Zotero collection named 'Nope' \(its collections: "):
        discover_zotero(zotero, zotero_collection="Nope")


def test_the_database_reads_while_zotero_holds_its_exclusive_lock(zotero: Path) -> None:
    running = sqlite3.connect(zotero / "zotero.sqlite", isolation_level=None)
    running.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            sqlite3.connect(zotero / "zotero.sqlite", timeout=0).execute(
                "SELECT count(*) FROM items"
            ).fetchone()
        assert len(discover_zotero(zotero, zotero_collection="Reading").sources) == 4
        # A write under way (its journal beside the database) is not read: a copy is, as
        # last committed.
        running.execute("UPDATE itemDataValues SET value = 'Half-written' WHERE value = ?",
                        (REV1_TITLE,))  # fmt: skip
        assert (zotero / "zotero.sqlite-journal").exists()
        found = discover_zotero(zotero, zotero_collection="Reading")
        assert {source.fields["title"] for source in found.sources} >= {REV1_TITLE}
    finally:
        running.execute("ROLLBACK")
        running.close()


def run(home: Path, embedder: Path, *args: str) -> tuple[int, dict]:
    code = main(["run", *args, "--home", str(home), "--embedder", str(embedder)])
    reports = sorted((home / "outputs").glob("*/report.json"))
    return code, json.loads(reports[-1].read_text()) if reports else {}


def test_run_builds_a_collection_whose_references_say_what_zotero_knows(
    tmp_path: Path, zotero: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    code, report = run(home, tiny_model, "--zotero", str(zotero), "--zotero-collection", "Reading")

    said = capsys.readouterr().err
    assert code == 0, said
    assert report["collection"] == "Reading" and report["papers"] == 4
    assert report["source"] == str(zotero.resolve())
    (failure,) = report["failed_papers"]
    assert "GONE2KEY" in failure["reason"] and "deleted.pdf" in failure["reason"]
    assert f"{zotero}: 4 papers in collection 'Reading' (1 entry failed: listed below)" in said
    assert "note: Zotero item GONE1KEY" in said and "failed: " in said
    synthesis = (home / "outputs" / "Reading" / "synthesis.md").read_text()
    references = synthesis.split("## References", 1)[1]
    lines = {line.split("(`", 1)[1].split("`", 1)[0]: line
             for line in references.splitlines() if line.startswith("- ")}  # fmt: skip
    assert set(lines) == {"10.1093_nar_gkae252", "10.1073_pnas.2322520121", "zotero.ABSTRACT",
                          "zotero.GONE1KEY"}  # fmt: skip
    # Each reference is led by its paper's key, as the text cites it.
    keys = home_keys(home)
    assert all(line.startswith(f"- {keys[paper]}: ") for paper, line in lines.items()), lines
    lines = {paper: line.replace(f"- {keys[paper]}: ", "- ", 1) for paper, line in lines.items()}
    # Zotero's title, authors, year, venue and DOI, not what the PDF's first page says.
    assert lines["10.1093_nar_gkae252"].startswith(
        f"- Müller et al. (2024). **{REV1_TITLE}**. *Nucleic Acids Research*. "
        "https://doi.org/10.1093/nar/gkae252 (`10.1093_nar_gkae252`): p. "
    )
    assert lines["10.1073_pnas.2322520121"].startswith("- Gong and Lindahl (2024). **PARP1 ")
    assert lines["zotero.ABSTRACT"].startswith(
        "- DNA Repair Consortium (2023). **REV1 at stalled forks**. *Genes & Development*."
    )
    assert lines["zotero.GONE1KEY"].startswith("- Nakamura (2022). **Fork reversal")

    # REV1KEY1 is in Zotero's "Other" too: run into that collection, it is built once.
    rev1 = "10.1093_nar_gkae252"
    built = {asset: materializations(home, asset, rev1) for asset in PER_PAPER}
    code, _ = run(home, tiny_model, "--zotero", str(zotero), "--zotero-collection", "Other")
    said = capsys.readouterr().err
    assert code == 0, said
    other = json.loads((home / "outputs" / "Other" / "report.json").read_text())
    assert other["papers"] == 2 and other["papers_up_to_date"] == 1
    assert {asset: materializations(home, asset, rev1) for asset in PER_PAPER} == built
    assert f"1 paper also in other collections ('Reading': {rev1})" in said
    synthesis = (home / "outputs" / "Other" / "synthesis.md").read_text()
    # The same key in both collections: a paper has one.
    reference = f"- {keys[rev1]}: Müller et al. (2024). **{REV1_TITLE}**"
    assert reference in synthesis.split("## References", 1)[1]


def test_a_library_that_is_not_there_or_not_readable_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    missing = tmp_path / "no-such-zotero"
    assert main(["run", "--zotero", str(missing), "--home", str(home)]) == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith(f"litpipe run: {missing}: no such folder") and "\n" not in said

    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["run", "--zotero", str(empty), "--home", str(home)]) == 2
    said = capsys.readouterr().err.strip()
    assert f"{empty}: no zotero.sqlite in this folder" in said and "\n" not in said

    (empty / "zotero.sqlite").write_bytes(b"not a database, a text file" * 100)
    assert main(["run", "--zotero", str(empty), "--home", str(home)]) == 2
    said = capsys.readouterr().err.strip()
    assert "cannot read the Zotero database: file is not a database" in said
    assert "\n" not in said

    library = write_library(tmp_path / "Zotero")
    args = ["run", "--zotero", str(library), "--zotero-collection", "Unread", "--home", str(home)]
    assert main(args) == 2
    said = capsys.readouterr().err.strip()
    assert "no Zotero collection named 'Unread'" in said and "Reading/Methods" in said
    assert main(["run", str(library), "--zotero-collection", "Reading", "--home", str(home)]) == 2
    assert "--zotero-collection goes with --zotero" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["run", str(library), "--zotero", str(library)])
    assert usage.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
