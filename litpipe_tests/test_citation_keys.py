"""Every paper's citation key (issue 48, point 1): the user's own from their BibTeX or Zotero
(Better BibTeX) library, else generated as `authorYEARword`, unique in the home regardless of
case, never changed once given; `litpipe status --keys` lists them and `litpipe key` sets one,
refused in one line when no manuscript could cite it or another paper holds it."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from litpipe.catalog import Catalog
from litpipe.citation_keys import KeyParts, generated_base, key_problem, suffixed
from litpipe.cli import main
from litpipe.ingest.bibtex import discover_bibtex
from litpipe.ingest.zotero import BETTER_BIBTEX, list_zotero
from litpipe.schemas import PaperSource
from litpipe.settings import Settings
from litpipe_tests.test_bibtex import write_refs
from litpipe_tests.test_zotero import FIELDS, PARP1_PDF, REV1_PDF, ZoteroLibrary

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def row(paper_id: str, key: str | None = None, **fields: str) -> PaperSource:
    return PaperSource(
        paper_id=paper_id,
        kind="table_row",
        path="/abstracts.csv",
        content_sha256=paper_id,
        fields=fields,
        citation_key=key,
    )


def test_a_generated_key_is_first_author_year_and_first_word_of_the_title() -> None:
    lewis = KeyParts(
        authors=["Lewis, Patrick", "Perez, Ethan"],
        year=2020,
        title="Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks",
    )
    assert generated_base(lewis) == "lewis2020retrieval"
    accents = KeyParts(authors=["Müller-Lüdenscheidt, Jörg"], year=2021, title="On the Gene 0")
    assert generated_base(accents) == "mullerludenscheidt2021gene"
    assert generated_base(KeyParts(year=2024, title="A survey of PARP1")) == "anon2024survey"
    assert generated_base(KeyParts(authors=["DNA Repair Consortium"], title="")) == (
        "dnarepairconsortium"
    )


@given(
    authors=st.lists(st.text(max_size=30), max_size=3),
    year=st.none() | st.integers(1500, 2999),
    title=st.text(max_size=80),
)
def test_every_generated_key_can_be_cited_whatever_the_record(
    authors: list[str], year: int | None, title: str
) -> None:
    key = generated_base(KeyParts(authors=authors, year=year, title=title))
    assert key_problem(key) is None and key.isascii()


def test_unusual_keys_are_taken_as_given_and_the_uncitable_refused_in_one_line() -> None:
    for key in ("Müller2024", "10.1000/xyz-1", "smith:2020:deep", "Smith2020", "smith2020"):
        assert key_problem(key) is None, key
    for key, said in (("my key", "a space"), ("a{b}", "'{'"), ("x,y", "','"), ("", "empty")):
        problem = key_problem(key)
        assert problem is not None and said in problem and "\n" not in problem


def test_a_taken_base_gets_the_next_letter_regardless_of_case() -> None:
    assert suffixed("lewis2020retrieval", ["Lewis2020Retrieval"]) == "lewis2020retrievala"
    taken = ["x", *(f"x{letter}" for letter in "abcdefghijklmnopqrstuvwxyz")]
    assert suffixed("x", taken) == "xaa"


def test_library_keys_are_given_at_registration_and_a_case_twin_is_listed_not_renamed(
    tmp_path: Path,
) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    catalog.register(row("refs.smith", "Smith2020", title="Deep nets"), "c", T0)
    catalog.register(row("refs.smith-b", "smith2020", title="Deeper nets"), "c", T0)
    catalog.register(row("refs.doi", "10.1000/xyz-1", title="Nets"), "c", T0)
    catalog.register(row("refs.bad", "my key", title="Nets again"), "c", T0)
    keys = {paper: given.key for paper, given in catalog.keys().items()}
    assert keys == {"refs.smith": "Smith2020", "refs.doi": "10.1000/xyz-1"}
    clashes = {clash.paper_id: clash.reason for clash in catalog.key_clashes()}
    assert clashes == {
        "refs.smith-b": "refs.smith is cited by 'Smith2020'",
        "refs.bad": key_problem("my key"),
    }
    # Once read, each gets a generated key of its own, and is still listed with why.
    catalog.give_generated_keys(
        {
            "refs.smith-b": KeyParts(authors=["Smith, A"], year=2020, title="Deeper nets"),
            "refs.bad": KeyParts(title="Nets again"),
        }
    )
    assert catalog.keys()["refs.smith-b"].key == "smith2020deeper"
    assert {clash.key_given for clash in catalog.key_clashes()} == {"smith2020deeper", "anonnets"}


def test_a_generated_key_never_changes_and_the_same_home_twice_gives_the_same_keys(
    tmp_path: Path,
) -> None:
    parts = KeyParts(authors=["Lewis, P"], year=2020, title="Retrieval for all")

    def home(name: str) -> Catalog:
        catalog = Catalog(tmp_path / name / "catalog.sqlite")
        # Registered first, read last: suffixes follow registration, not reading.
        catalog.register(row("first"), "c", T0)
        catalog.register(row("second"), "c", T0 + timedelta(seconds=1))
        catalog.give_generated_keys({"second": parts})
        catalog.give_generated_keys({"first": parts})
        return catalog

    one, two = home("one"), home("two")
    assert {p: k.key for p, k in one.keys().items()} == {
        "second": "lewis2020retrieval",
        "first": "lewis2020retrievala",
    }
    # Read in one batch, they are suffixed in the order they were registered.
    batch = Catalog(tmp_path / "batch" / "catalog.sqlite")
    batch.register(row("first"), "c", T0)
    batch.register(row("second"), "c", T0 + timedelta(seconds=1))
    batch.give_generated_keys({"second": parts, "first": parts})
    assert batch.keys()["first"].key == "lewis2020retrieval"
    assert {p: k.key for p, k in two.keys().items()} == {p: k.key for p, k in one.keys().items()}
    # A paper added later takes the next letter; the others keep theirs.
    one.register(row("third"), "c", T0 + timedelta(seconds=2))
    one.give_generated_keys({"third": parts, "first": parts})
    assert one.keys()["third"].key == "lewis2020retrievalb"
    assert one.keys()["first"].key == "lewis2020retrievala"


def test_a_generated_key_never_takes_a_users_key(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    catalog.register(row("mine", "lewis2020retrieval", title="Mine"), "c", T0)
    catalog.register(row("other"), "c", T0)
    parts = KeyParts(authors=["Lewis, P"], year=2020, title="Retrieval")
    assert catalog.give_generated_keys({"other": parts}) == {"other": "lewis2020retrievala"}


def test_the_users_key_wins_over_the_librarys_and_a_taken_one_is_refused(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    catalog.register(row("a", "alpha"), "c", T0)
    catalog.register(row("b", "beta"), "c", T0)
    with pytest.raises(ValueError, match="a is cited by 'alpha' already"):
        catalog.set_key("b", "ALPHA")
    with pytest.raises(ValueError, match="a space"):
        catalog.set_key("b", "be ta")
    with pytest.raises(KeyError):
        catalog.set_key("nobody", "gamma")
    catalog.set_key("b", "gamma")
    # The library renames its key: the user's stays; a paper keyed by its library follows.
    catalog.register(row("b", "beta2"), "c", T0)
    catalog.register(row("a", "alpha2"), "c", T0)
    assert {p: k.key for p, k in catalog.keys().items()} == {"a": "alpha2", "b": "gamma"}
    assert catalog.key_clashes() == []


def test_bibtex_entries_are_cited_by_their_keys(tmp_path: Path) -> None:
    found = discover_bibtex(write_refs(tmp_path / "library"))
    assert {source.citation_key for source in found.sources} == {"mueller2021", "garcia2019"}


def test_zotero_items_are_cited_by_their_better_bibtex_keys(tmp_path: Path) -> None:
    data_dir = tmp_path / "Zotero"
    library = ZoteroLibrary(data_dir)
    citation_key_field = max(FIELDS.values()) + 1
    library.db.execute(
        "INSERT INTO fields (fieldID, fieldName) VALUES (?, 'citationKey')", (citation_key_field,)
    )
    pinned = library.item(
        "PINNED01", "journalArticle", title="Pinned", extra="Citation Key: gong2024parp1\n"
    )
    library.pdf(pinned, "PDFPIN01", "pinned.pdf", PARP1_PDF)
    native = library.item("NATIVE01", "journalArticle", title="Native")
    library.db.execute("INSERT INTO itemDataValues (value) VALUES ('mueller2024subgene')")
    library.db.execute(
        "INSERT INTO itemData VALUES (?, ?, (SELECT max(valueID) FROM itemDataValues))",
        (native, citation_key_field),
    )
    library.pdf(native, "PDFNAT01", "native.pdf", REV1_PDF)
    in_database = library.item(
        "BBTDB001", "journalArticle", title="Kept by Better BibTeX", abstractNote="An abstract."
    )
    library.item("NOKEY001", "journalArticle", title="No key", abstractNote="Another abstract.")
    library.close()
    with sqlite3.connect(data_dir / BETTER_BIBTEX) as bbt:
        bbt.execute("CREATE TABLE citationkey (itemID, itemKey, libraryID, citationKey, pinned)")
        bbt.execute("INSERT INTO citationkey VALUES (?, 'BBTDB001', 1, 'okafor2023kept', 0)",
                    (in_database,))  # fmt: skip
    keys = {entry.key: entry.citation_key for entry in list_zotero(data_dir).entries}
    assert keys == {
        "PINNED01": "gong2024parp1",
        "NATIVE01": "mueller2024subgene",
        "BBTDB001": "okafor2023kept",
        "NOKEY001": "",
    }


def test_status_lists_the_keys_and_key_sets_one_or_refuses_it_in_one_line(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bib = write_refs(tmp_path / "library")
    home = ["--home", str(tmp_path / "home")]
    assert main(["run", "--bibtex", str(bib), *home, "--embedder", str(tiny_model)]) == 0
    capsys.readouterr()
    assert main(["status", "--keys", *home]) == 0
    listed = capsys.readouterr().out
    assert "mueller2021  10.1093_nar_gkab001  (library)" in listed
    assert "garcia2019   refs.garcia2019  (library)" in listed

    assert main(["key", "refs.garcia2019", "MUELLER2021", *home]) == 2
    said = capsys.readouterr().err.strip()
    assert said == (
        "litpipe key: 'MUELLER2021': 10.1093_nar_gkab001 is cited by 'mueller2021' already; "
        "nothing changed"
    )
    assert main(["key", "refs.garcia2019", "garcia2019fork", *home]) == 0
    assert main(["status", "--keys", *home]) == 0
    assert "garcia2019fork  refs.garcia2019  (user)" in capsys.readouterr().out


TABLE = (
    "id,title,abstract,authors,year\n"
    'a1,"Graph networks, revisited",We study message passing on graphs.,"Lewis, P",2021\n'
    'a2,Graph attention,Attention over graph edges helps.,"Lewis, Q",2021\n'
    "a3,Sparse attention,Attention with sparse patterns scales.,,2020\n"
)


def built_keys(home: Path, table: Path, tiny_model: Path) -> dict[str, str]:
    assert main(["run", str(table), "--home", str(home), "--embedder", str(tiny_model)]) == 0
    catalog = Catalog(Settings(home=home).paths.catalog_path)
    return {paper: given.key for paper, given in catalog.keys().items()}


def test_a_fresh_home_gives_the_same_keys_and_a_new_paper_changes_none(
    tmp_path: Path, tiny_model: Path
) -> None:
    table = tmp_path / "papers.csv"
    table.write_text(TABLE, encoding="utf-8")
    first = built_keys(tmp_path / "one", table, tiny_model)
    assert first == {
        "papers.a1": "lewis2021graph",
        "papers.a2": "lewis2021grapha",
        "papers.a3": "anon2020sparse",
    }
    assert built_keys(tmp_path / "two", table, tiny_model) == first
    table.write_text(
        TABLE + 'a0,Graph kernels,Kernels compare graphs.,"Lewis, R",2021\n', encoding="utf-8"
    )
    again = built_keys(tmp_path / "one", table, tiny_model)
    assert again == first | {"papers.a0": "lewis2021graphb"}
