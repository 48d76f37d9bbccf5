"""A paper's reference records matched to the papers of its collection: by DOI, arXiv id, then
title and year; at most one paper per record, a doubtful one left unmatched, and never the
citing paper itself. Checked on written records, on the bundled papers' real lists, and on any
records at all.

What a user would notice: the entry of paper A that names paper B, however its DOI or title is
written, points at B; an entry that could be two papers of theirs points at neither, and says
which; the bundled papers, which do not cite one another, get no false edge.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litpipe.ingest.citation_matching import (
    CollectionIndex,
    arxiv_key,
    doi_key,
    match_references,
    title_key,
)
from litpipe.ingest.references import parse_reference, parse_references
from litpipe.schemas import CollectionPaper, PaperDocument, ReferenceRecord
from litpipe_tests.bundled import BUNDLED_DOCUMENTS_GROUP, CORPUS, bundled_document

pytestmark = pytest.mark.xdist_group(BUNDLED_DOCUMENTS_GROUP)

RAG = CollectionPaper(
    paper_id="arxiv-2005.11401",
    title="Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks",
    year=2020,
    arxiv_id="2005.11401",
)
GCK = CollectionPaper(
    paper_id="gck",
    title="A comprehensive map of human glucokinase variant activity",
    year=2023,
    doi="10.1186/s13059-023-02935-8",
)
CITING = "citing"


def _record(**fields: object) -> ReferenceRecord:
    return ReferenceRecord(raw=str(fields), **fields)  # type: ignore[arg-type]


def _only(papers: list[CollectionPaper], record: ReferenceRecord) -> tuple[str | None, str | None]:
    match = match_references(papers, CITING, [record]).matches[0]
    return match.paper_id, match.rule


@pytest.mark.parametrize(
    "written",
    [
        "10.1186/s13059-023-02935-8",
        "10.1186/S13059-023-02935-8",
        "https://doi.org/10.1186/s13059-023-02935-8",
        "http://dx.doi.org/10.1186/S13059-023-02935-8.",
        "doi:10.1186/s13059-023-02935-8;",
    ],
)
def test_a_doi_matches_whatever_its_case_or_resolver(written: str) -> None:
    assert _only([GCK, RAG], _record(doi=written)) == ("gck", "doi")


@pytest.mark.parametrize("written", ["2005.11401", "2005.11401v4", "arXiv:2005.11401v1"])
def test_an_arxiv_id_matches_with_or_without_its_version(written: str) -> None:
    assert _only([GCK, RAG], _record(arxiv_id=written)) == ("arxiv-2005.11401", "arxiv")


def test_the_doi_decides_before_the_title() -> None:
    record = _record(doi=GCK.doi, title=RAG.title, year=2020)
    assert _only([GCK, RAG], record) == ("gck", "doi")


@pytest.mark.parametrize(
    "title",
    [
        "Retrieval-augmented generation for knowledge-intensive NLP tasks.",
        "RETRIEVAL AUGMENTED GENERATION FOR KNOWLEDGE INTENSIVE NLP TASKS",
        "Retrieval\u2010Augmented  Generation for Knowledge\u2011Intensive NLP Tasks",
    ],
)
def test_a_title_matches_across_punctuation_case_and_dashes(title: str) -> None:
    assert _only([GCK, RAG], _record(title=title, year=2020)) == ("arxiv-2005.11401", "title_year")


def test_a_title_matches_across_accents_and_ligatures() -> None:
    paper = CollectionPaper(paper_id="muller", title="Müller cells and the ﬁbre layer", year=2019)
    record = _record(title="Muller cells and the fibre layer", year=2019)
    assert _only([paper], record) == ("muller", "title_year")


def test_a_title_a_year_apart_matches_as_preprint_and_journal_version() -> None:
    assert _only([GCK], _record(title=GCK.title, year=2022)) == ("gck", "title_year")
    assert _only([GCK], _record(title=GCK.title, year=2024)) == ("gck", "title_year")


def test_a_title_two_years_apart_or_without_a_year_is_left_unmatched() -> None:
    far = match_references([GCK], CITING, [_record(title=GCK.title, year=2020)]).matches[0]
    assert far.paper_id is None and "year 2020 does not" in far.note
    undated = match_references([GCK], CITING, [_record(title=GCK.title)]).matches[0]
    assert undated.paper_id is None and "without a year" in undated.note
    # A paper whose year no one gave (a PDF's own pages give none) is never matched by title.
    unknown = GCK.model_copy(update={"year": None})
    assert _only([unknown], _record(title=GCK.title, year=2023)) == (None, None)


def test_a_short_title_is_too_little_to_tell_papers_apart() -> None:
    short = CollectionPaper(paper_id="short", title="Yeast genetics.", year=2010)
    match = match_references([short], CITING, [_record(title="Yeast Genetics", year=2010)])
    assert match.matches[0].paper_id is None
    assert "too short" in match.matches[0].note


def test_a_record_naming_two_papers_is_left_unmatched_and_names_both() -> None:
    preprint = GCK.model_copy(update={"paper_id": "gck-preprint", "doi": None, "year": 2022})
    match = match_references([GCK, preprint], CITING, [_record(title=GCK.title, year=2023)])
    assert match.matches[0].paper_id is None
    assert match.matches[0].ambiguous == ["gck", "gck-preprint"]
    twice = RAG.model_copy(update={"paper_id": "rag-copy"})
    by_arxiv = match_references([RAG, twice], CITING, [_record(arxiv_id="2005.11401v2")])
    assert by_arxiv.matches[0].ambiguous == ["arxiv-2005.11401", "rag-copy"]


def test_a_paper_never_matches_itself() -> None:
    for record in (_record(doi=GCK.doi), _record(title=GCK.title, year=2023)):
        match = match_references([GCK, RAG], "gck", [record]).matches[0]
        assert match.paper_id is None and "citing paper itself" in match.note


def test_records_without_ids_or_titles_match_nothing() -> None:
    matches = match_references([GCK, RAG], CITING, [_record(), _record(title="")]).matches
    assert [(m.reference_index, m.paper_id, m.note) for m in matches] == [
        (0, None, ""),
        (1, None, ""),
    ]


def test_the_keys_compare_as_the_rules_say() -> None:
    assert doi_key(" https://doi.org/10.1000/ABC.1). ") == "10.1000/abc.1)"
    assert doi_key("not a doi") == doi_key(None) == ""
    assert arxiv_key("arXiv: hep-th/9711200v2") == "hep-th/9711200"
    assert title_key("  The  Ångström: a (new) unit!  ") == "the angstrom a new unit"


# The bundled papers, each parsed once.
@pytest.fixture(scope="module")
def bundled() -> dict[str, tuple[PaperDocument, list[ReferenceRecord]]]:
    found = {}
    for path in sorted(CORPUS.glob("*.pdf")):
        document = bundled_document(path.stem)
        found[document.paper_id] = document, parse_references(document.references)
    return found


def test_no_bundled_paper_cites_another_and_none_is_matched_falsely(bundled: dict) -> None:
    """Checked by hand: the nine bundled papers (yeast brewing, DNA repair, microcins,
    glucokinase, ...) do not cite one another, so every match would be false."""
    index = CollectionIndex(CollectionPaper.of(document) for document, _ in bundled.values())
    matched = [
        (paper_id, match)
        for paper_id, (_, records) in bundled.items()
        for match in index.matches(paper_id, records).matches
        if match.paper_id is not None or match.ambiguous
    ]
    assert matched == []


def test_the_glucokinase_paper_s_own_data_deposit_is_a_self_citation(bundled: dict) -> None:
    """Its list's entry 100 is its own Zenodo deposit, under its own title and year."""
    document, records = bundled["10.1186_s13059-023-02935-8"]
    own = CollectionPaper.of(document).model_copy(update={"year": 2023})
    match = CollectionIndex([own]).match(document.paper_id, 100, records[100])
    assert records[100].title == document.title
    assert match.paper_id is None and match.note == "by title: the citing paper itself"


def test_a_bundled_pair_made_by_placing_b_in_a_s_list_is_one_edge(bundled: dict) -> None:
    """Paper A (the yeast brewing paper) given an entry naming paper B (the glucokinase map)
    as a journal sets it: B's own DOI and title, read back by the reference parser."""
    citing, citing_records = bundled["10.1093_g3journal_jkad293"]
    cited, _ = bundled["10.1186_s13059-023-02935-8"]
    entry = parse_reference(
        f"Gersing S, Cagiada M, Gebbia M, et al. 2023. {cited.title}. Genome Biol. 24(1):97. "
        f"https://doi.org/{cited.doi.upper()}"
    )
    records = [*citing_records, entry]
    index = CollectionIndex(CollectionPaper.of(document) for document, _ in bundled.values())
    matches = index.matches(citing.paper_id, records).matches
    assert [(m.reference_index, m.paper_id, m.rule) for m in matches if m.paper_id] == [
        (len(citing_records), cited.paper_id, "doi")
    ]
    # Without its DOI, the title with the year a reference manager gives B matches it too.
    by_title = entry.model_copy(update={"doi": None})
    dated = [
        CollectionPaper.of(document).model_copy(update={"year": 2023})
        for document, _ in bundled.values()
    ]
    match = CollectionIndex(dated).match(citing.paper_id, 0, by_title)
    assert (match.paper_id, match.rule) == (cited.paper_id, "title_year")


_TEXT = st.text(max_size=60)
_YEARS = st.none() | st.integers(min_value=1900, max_value=2030)
_RECORDS = st.builds(
    ReferenceRecord,
    raw=_TEXT,
    title=st.none() | _TEXT | st.sampled_from([GCK.title, RAG.title, "Yeast genetics"]),
    year=_YEARS,
    doi=st.none() | _TEXT | st.sampled_from(["10.1186/S13059-023-02935-8", "10.1/x"]),
    arxiv_id=st.none() | _TEXT | st.sampled_from(["2005.11401v3", "2005.11401"]),
)
_PAPERS = st.lists(
    st.builds(
        CollectionPaper,
        paper_id=st.sampled_from(["a", "b", "c", "d", "gck", CITING]),
        title=_TEXT | st.sampled_from([GCK.title, RAG.title, "Yeast genetics"]),
        year=_YEARS,
        doi=st.none() | st.sampled_from(["10.1186/s13059-023-02935-8", "10.1/X", "nonsense"]),
        arxiv_id=st.none() | st.sampled_from(["2005.11401", "2005.11401v1"]),
    ),
    max_size=6,
    unique_by=lambda paper: paper.paper_id,
)


@settings(max_examples=200, deadline=None)
@given(papers=_PAPERS, records=st.lists(_RECORDS, max_size=6), seed=st.integers())
def test_any_records_match_without_error_whatever_the_papers_order(
    papers: list[CollectionPaper], records: list[ReferenceRecord], seed: int
) -> None:
    result = match_references(papers, CITING, records)
    shuffled = papers[:]
    random.Random(seed).shuffle(shuffled)
    assert match_references(shuffled, CITING, records) == result
    assert [match.reference_index for match in result.matches] == list(range(len(records)))
    ids = {paper.paper_id for paper in papers}
    for match in result.matches:
        assert match.paper_id != CITING
        assert match.paper_id is None or (match.paper_id in ids and match.rule is not None)
        assert not (match.paper_id and match.ambiguous)
