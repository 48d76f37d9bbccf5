"""Reference-list entries read into records, checked on the real reference lists of the nine
papers of corpora/biology-cc-by (seven citation styles: PNAS, G3, NAR, Nature, PLOS, Genetics,
ASM, BMC) and on the styles of machine-learning papers, and on any string at all.

What a user would notice: a chosen entry's authors, title, year, venue and DOI come out as the
paper prints them; nearly every entry has a year and a title; a numbered list is numbered
1..N; no string makes the parser fail.
"""

from __future__ import annotations

import re
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litpipe.ingest.bibtex import parse_bibtex, related_keys
from litpipe.ingest.references import parse_reference, parse_references
from litpipe.ingest.zotero import related_item_keys
from litpipe.schemas import ReferenceRecord
from litpipe_tests.bundled import BUNDLED_DOCUMENTS_GROUP, PAPERS, bundled_document

pytestmark = pytest.mark.xdist_group(BUNDLED_DOCUMENTS_GROUP)

NUMBERED = [
    "10.1073_pnas.2322520121.pdf",
    "10.1093_nar_gkae252.pdf",
    "10.1101_2023.12.13.571462.pdf",
    "10.1101_2024.02.13.580051.pdf",
    "10.1128_aem.01486-22.pdf",
    "10.1186_s12915-024-01918-w.pdf",
    "10.1186_s13059-023-02935-8.pdf",
]
# Measured on the nine lists (716 entries): 99.6% have a year and a title, 99.6% authors;
# each paper's share is at least 96%.
SHARE_WITH_TITLE_AND_YEAR = 0.98
SHARE_WITH_AUTHORS = 0.98
PAPER_FLOOR = 0.93
DOI = re.compile(r"^10\.\d{4,9}/\S+$")


@pytest.fixture(scope="module")
def records() -> dict[str, list[ReferenceRecord]]:
    """Each bundled paper's records, its PDF parsed once."""
    return {
        paper["file"]: parse_references(bundled_document(Path(paper["file"]).stem).references)
        for paper in PAPERS
    }


def entry(records: list[ReferenceRecord], number: int) -> ReferenceRecord:
    return next(record for record in records if record.number == number)


def test_entries_of_each_style_read_as_printed(records: dict[str, list[ReferenceRecord]]) -> None:
    pnas = entry(records["10.1073_pnas.2322520121.pdf"], 55)
    assert pnas.authors == ["Lord", "Ashworth"]
    assert pnas.title == "PARP inhibitors: Synthetic lethality in the clinic"
    assert (pnas.year, pnas.venue) == (2017, "Science")

    g3 = records["10.1093_g3journal_jkad293.pdf"][0]
    assert g3.number is None
    assert g3.authors[0] == "Abdullah" and g3.authors[-1] == "Kachroo" and len(g3.authors) == 8
    assert g3.title is not None and g3.title.startswith("Rapid, scalable, combinatorial genome")
    assert (g3.year, g3.venue, g3.doi) == (2023, "Cell Rep Methods", "10.1016/j.crmeth.2023.100464")

    nar = entry(records["10.1093_nar_gkae252.pdf"], 2)
    assert nar.authors == ["Schuster-Böckler", "Lehner"]
    assert nar.title == (
        "Chromatin organization is a major influence on regional mutation rates in human "
        "cancer cells"
    )
    assert (nar.year, nar.venue) == (2012, "Nature")

    nature = entry(records["10.1101_2023.12.13.571462.pdf"], 75)
    assert nature.authors == ["Kingma", "Ba"]
    assert (nature.year, nature.arxiv_id) == (2014, "1412.6980")

    plos = entry(records["10.1101_2024.02.13.580051.pdf"], 93)
    assert plos.authors == ["Adler", "MacQueen"]
    assert (plos.year, plos.venue) == (1984, "Dev Biol")
    assert plos.doi == "10.1016/0012-1606(84)90004-6"  # its own brackets kept

    genetics = next(
        record
        for record in records["10.1101_2024.05.13.593936.pdf"]
        if record.raw.startswith("Zarrinpar A., S.-H. Park")
    )
    assert genetics.authors == ["Zarrinpar", "Park", "Lim"]
    assert genetics.title == (
        "Optimization of specificity in a cellular protein interaction network by negative "
        "selection"
    )
    assert (genetics.year, genetics.venue) == (2003, "Nature")

    asm = entry(records["10.1128_aem.01486-22.pdf"], 1)
    assert asm.authors == ["Granato", "Meiller-Legrand", "Foster"]
    assert (asm.year, asm.doi) == (2019, "10.1016/j.cub.2019.04.024")

    bmc = entry(records["10.1186_s12915-024-01918-w.pdf"], 1)
    assert bmc.authors == ["Ceccaldi", "Rondinelli", "D\u2019Andrea"]
    assert bmc.title == "Repair pathway choices and consequences at the double-strand break"


def test_nearly_every_entry_has_a_title_a_year_and_authors(
    records: dict[str, list[ReferenceRecord]],
) -> None:
    every = [record for found in records.values() for record in found]
    with_both = sum(record.title is not None and record.year is not None for record in every)
    with_authors = sum(bool(record.authors) for record in every)
    print(f"{len(every)} entries: {with_both} with title and year, {with_authors} with authors")
    assert len(every) > 700
    assert with_both / len(every) >= SHARE_WITH_TITLE_AND_YEAR
    assert with_authors / len(every) >= SHARE_WITH_AUTHORS
    for paper, found in records.items():
        share = sum(record.title is not None and record.year is not None for record in found)
        assert share / len(found) >= PAPER_FLOOR, paper


def test_a_numbered_list_is_numbered_one_to_n_and_raw_is_kept(
    records: dict[str, list[ReferenceRecord]],
) -> None:
    for paper in NUMBERED:
        found = records[paper]
        assert [record.number for record in found] == list(range(1, len(found) + 1)), paper
    for paper, found in records.items():
        assert all(record.raw.strip() for record in found)
        assert all(DOI.match(record.doi) for record in found if record.doi), paper
        assert all(not record.doi.endswith((".", ",", ";")) for record in found if record.doi)


def test_the_styles_of_machine_learning_papers() -> None:
    acl = parse_reference(
        "Patrick Lewis, Ethan Perez, Aleksandra Piktus, Wen-tau Yih, and Douwe Kiela. 2020. "
        "Retrieval-augmented generation for knowledge-intensive NLP tasks. In Advances in "
        "Neural Information Processing Systems, volume 33, pages 9459\u20139474."
    )
    assert acl.authors == ["Lewis", "Perez", "Piktus", "Yih", "Kiela"]
    assert acl.title == "Retrieval-augmented generation for knowledge-intensive NLP tasks"
    assert (acl.year, acl.venue) == (2020, "Advances in Neural Information Processing Systems")

    ieee = parse_reference(
        "[12] P. Lewis, E. Perez, A. Piktus et al., \u201cRetrieval-augmented generation for "
        "knowledge-intensive NLP tasks,\u201d in Proc. NeurIPS, 2020, pp. 9459\u20139474."
    )
    assert (ieee.number, ieee.authors, ieee.year) == (12, ["Lewis", "Perez", "Piktus"], 2020)
    assert ieee.title == "Retrieval-augmented generation for knowledge-intensive NLP tasks"

    apa = parse_reference(
        "Lewis, P., Perez, E., Piktus, A., & Kiela, D. (2020). Retrieval-augmented generation. "
        "Advances in Neural Information Processing Systems, 33, 9459-9474."
    )
    assert (apa.authors, apa.year) == (["Lewis", "Perez", "Piktus", "Kiela"], 2020)

    natbib = parse_reference(
        "Gautier Izacard and Edouard Grave. Leveraging passage retrieval with generative "
        "models for open domain question answering. arXiv preprint arXiv:2007.01282, 2020."
    )
    assert natbib.authors == ["Izacard", "Grave"]
    assert (natbib.year, natbib.arxiv_id) == (2020, "2007.01282")  # not 2007, from the id

    particles = parse_reference(
        "Aaron van den Oord, Yazhe Li, and Oriol Vinyals. 2018. Representation learning with "
        "contrastive predictive coding. arXiv:1807.03748."
    )
    assert particles.authors == ["van den Oord", "Li", "Vinyals"]


def test_identifiers_by_pattern() -> None:
    broken = parse_reference("Wu T. 2021. Title here. Innovation. doi:10. 1016/j.xinn.2021.100141.")
    assert broken.doi == "10.1016/j.xinn.2021.100141"  # a line break inside it closed up
    from_doi = parse_reference("A. B. Smith, x. Y 1, 2 (2020). 10.48550/arXiv.2303.08774.")
    assert from_doi.arxiv_id == "2303.08774"
    assert parse_reference("G. Hooft, hep-th/9711200 (1997).").arxiv_id == "hep-th/9711200"
    # A number like an arXiv id is one only where the entry names arXiv.
    assert parse_reference("A. B. Smith, Title. J. Chem. 2303.08774 (2020).").arxiv_id is None
    preprint = parse_reference(
        "Large CR, Hanson N. Genomic stability of beer yeasts. 166157. "
        "https://doi.org/10.1101/2020.06.26.166157v2, preprint."
    )
    assert (preprint.doi, preprint.year) == ("10.1101/2020.06.26.166157", 2020)


def test_an_article_number_after_the_venue_is_not_its_year() -> None:
    # PNAS, reference 38: the article number 2078 comes before the year.
    record = parse_reference(
        "38. A. Smith, B. Jones, Replication fork protection in human cells. Cells 12, 2078 (2023)."
    )
    assert record.year == 2023


def test_an_entry_that_reads_as_nothing_keeps_its_raw_text() -> None:
    record = parse_reference("  ")
    assert record.raw == "  " and record.title is None and record.authors == []
    assert parse_references([]) == []


# Strings that make a careless pattern backtrack without end: each is parsed in milliseconds.
LONG_ENTRIES = ["Aaa-" * 20_000, "A. " * 30_000, "Aaa Bbb, " * 10_000, "hep-th/" * 10_000]
SECONDS_FOR_LONG_ENTRIES = 10


def test_long_entries_parse_in_linear_time() -> None:
    start = time.process_time()
    for raw in LONG_ENTRIES:
        assert parse_reference(raw).raw == raw
    assert time.process_time() - start < SECONDS_FOR_LONG_ENTRIES


def test_bibtex_related_entries_by_key() -> None:
    entries, damaged = parse_bibtex(
        "@article{lewis2020, title = {RAG}, related = {chen2019, {wu2021},chen2019, lewis2020}}\n"
        "@article{chen2019, title = {Dense retrieval}}\n"
    )
    assert damaged == []
    assert [related_keys(entry) for entry in entries] == [["chen2019", "wu2021"], []]


# Zotero 7's tables for related items (userdata.sql), and the items they point into.
ZOTERO_RELATIONS = """
CREATE TABLE items (itemID INTEGER PRIMARY KEY, key TEXT NOT NULL);
CREATE TABLE relationPredicates (predicateID INTEGER PRIMARY KEY, predicate TEXT UNIQUE);
CREATE TABLE itemRelations (
    itemID INT NOT NULL, predicateID INT NOT NULL, object TEXT NOT NULL,
    PRIMARY KEY (itemID, predicateID, object)
);
INSERT INTO items VALUES (1, 'AAAA1111'), (2, 'BBBB2222'), (3, 'CCCC3333');
INSERT INTO relationPredicates VALUES (1, 'dc:relation'), (2, 'owl:sameAs');
INSERT INTO itemRelations VALUES
    (1, 1, 'http://zotero.org/users/local/x9/items/BBBB2222'),
    (2, 1, 'http://zotero.org/users/local/x9/items/AAAA1111'),
    (1, 1, 'http://zotero.org/users/local/x9/items/CCCC3333'),
    (3, 2, 'http://zotero.org/groups/7/items/DDDD4444');
"""


def test_zotero_related_items_by_key(tmp_path: Path) -> None:
    with closing(sqlite3.connect(tmp_path / "zotero.sqlite")) as db:
        db.executescript(ZOTERO_RELATIONS)
        db.commit()
    assert related_item_keys(tmp_path) == {
        "AAAA1111": ["BBBB2222", "CCCC3333"],
        "BBBB2222": ["AAAA1111"],
    }  # a merged duplicate (`owl:sameAs`) is no related item
    (tmp_path / "empty").mkdir()
    with closing(sqlite3.connect(tmp_path / "empty" / "zotero.sqlite")) as db:
        db.execute("CREATE TABLE items (itemID INTEGER PRIMARY KEY, key TEXT)")
        db.commit()
    assert related_item_keys(tmp_path / "empty") == {}


# Strings made of the pieces entries are made of, so that every branch of the parser is met.
REFERENCE_LIKE = st.lists(
    st.sampled_from(
        [
            *"AaBbÉéKkZz .,;:()[]&'\u2019\u201c\u201d\u2013-/0123456789\n",
            *["et al.", "and ", "2020", "10.1000/x", "arXiv:", "doi:", "In ", "https://"],
        ]
    ),
    max_size=150,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=400), REFERENCE_LIKE))
def test_any_string_gives_a_record_of_itself(raw: str) -> None:
    record = parse_reference(raw)
    assert record.raw == raw
    assert record.year is None or 1800 <= record.year <= 2099
