""" "Often cited, not in your library": the works several papers of a collection cite and none
of its papers is, ranked, and written as a `.bib` and an RIS file. Checked on written records,
on the bundled papers' real reference lists, and on any records at all.

What a user would notice: the reference two of their three papers cite, and they lack, comes
first, with who cites it and the sentences; what they have, or only one paper cites, is not
listed; the `.bib` reads back in litpipe and as Zotero items with the same titles, authors,
years and DOIs.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from litpipe.ingest.bibtex import latex_to_text, names, parse_bibtex
from litpipe.ingest.citation_contexts import citation_contexts
from litpipe.ingest.citation_matching import CollectionIndex, doi_key
from litpipe.ingest.library import LibraryEntry
from litpipe.ingest.often_cited import often_cited
from litpipe.ingest.references import parse_references
from litpipe.ingest.zotero import list_zotero
from litpipe.report.bibliography import RIS_LINE_END, bibtex, citation_keys, ris
from litpipe.schemas import (
    CitationContext,
    CitationContexts,
    CitationMatches,
    CollectionPaper,
    OftenCited,
    ReferenceRecord,
)
from litpipe_tests.bundled import BUNDLED_DOCUMENTS_GROUP, CORPUS, bundled_document
from litpipe_tests.test_zotero import ZoteroLibrary

pytestmark = pytest.mark.xdist_group(BUNDLED_DOCUMENTS_GROUP)

RAG = ReferenceRecord(
    raw="Lewis, P. et al. Retrieval-augmented generation for knowledge-intensive NLP tasks. "
    "NeurIPS (2020). https://doi.org/10.5555/rag",
    authors=["Lewis", "Perez"],
    title="Retrieval-augmented generation for knowledge-intensive NLP tasks",
    year=2020,
    venue="NeurIPS",
    doi="10.5555/rag",
)
DPR = ReferenceRecord(
    raw="Karpukhin, V. Dense passage retrieval for open-domain question answering (2020).",
    authors=["Karpukhin"],
    title="Dense passage retrieval for open-domain question answering",
    year=2020,
)
ONLY_ONCE = ReferenceRecord(
    raw="Smith, A. A survey of things cited once (2019).",
    authors=["Smith"],
    title="A survey of things cited once",
    year=2019,
)
IN_COLLECTION = CollectionPaper(
    paper_id="atlas",
    title="Atlas: few-shot learning with retrieval augmented language models",
    year=2022,
    arxiv_id="2208.03299",
)
ATLAS = ReferenceRecord(
    raw="Izacard, G. Atlas: few-shot learning with retrieval augmented language models. "
    "arXiv:2208.03299 (2022).",
    authors=["Izacard"],
    title=IN_COLLECTION.title,
    year=2022,
    arxiv_id="2208.03299v2",
)


def _context(index: int, sentence: str, page: int) -> CitationContext:
    return CitationContext(
        reference_index=index,
        marker=f"[{index + 1}]",
        marker_start=0,
        sentence=sentence,
        char_start=page * 100,
        char_end=page * 100 + len(sentence),
        page=page,
        section="Introduction",
    )


def _ranked(
    references: dict[str, list[ReferenceRecord]],
    contexts: dict[str, CitationContexts] | None = None,
    collection: list[CollectionPaper] | None = None,
) -> list[OftenCited]:
    index = CollectionIndex(collection or [])
    matches = {
        paper_id: index.matches(paper_id, records) for paper_id, records in references.items()
    }
    return often_cited(references, matches, contexts or {})


def test_a_reference_two_of_three_papers_cite_and_the_collection_lacks_tops_the_list() -> None:
    """The acceptance case: RAG is cited by papers a and c (its DOI written differently) and
    is no paper of the collection; Atlas is cited by all three but is a paper of the
    collection; DPR and the survey are cited by one paper each."""
    references = {
        "a": [RAG, DPR, ATLAS],
        "b": [ONLY_ONCE, ATLAS],
        "c": [ATLAS, RAG.model_copy(update={"doi": "https://doi.org/10.5555/RAG"})],
    }
    contexts = {
        "a": CitationContexts(
            paper_id="a",
            contexts=[_context(0, "We extend retrieval-augmented generation [1].", 2)],
        ),
        "c": CitationContexts(
            paper_id="c", contexts=[_context(1, "Unlike RAG [2], we train the retriever.", 5)]
        ),
    }
    collection = [IN_COLLECTION, *(CollectionPaper(paper_id=paper_id) for paper_id in references)]

    ranked = _ranked(references, contexts, collection)

    assert [entry.reference.title for entry in ranked] == [RAG.title]
    assert ranked[0].citing_paper_ids == ["a", "c"]
    assert ranked[0].reference == RAG
    assert [(c.paper_id, c.page, c.sentence) for c in ranked[0].contexts] == [
        ("a", 2, "We extend retrieval-augmented generation [1]."),
        ("c", 5, "Unlike RAG [2], we train the retriever."),
    ]


def test_the_most_cited_comes_first_then_the_most_recent() -> None:
    newer = ONLY_ONCE.model_copy(update={"title": "A newer survey of retrieval", "year": 2024})
    references = {"a": [RAG, DPR, newer], "b": [RAG, DPR, newer], "c": [RAG]}

    ranked = _ranked(references)

    assert [entry.reference.title for entry in ranked] == [RAG.title, newer.title, DPR.title]
    assert [len(entry.citing_paper_ids) for entry in ranked] == [3, 2, 2]


def test_a_work_in_the_collection_stays_out_even_where_one_record_of_it_does_not_match() -> None:
    """Paper b's record of Atlas has a garbled title and no arXiv id, so it alone matches no
    paper of the collection; its DOI is that of a's record, which matches Atlas by arXiv id:
    one work, in the library."""
    with_doi = ATLAS.model_copy(update={"doi": "10.5555/atlas"})
    garbled = ReferenceRecord(raw="Izacard. Atlas few shot. 10.5555/atlas", doi="10.5555/atlas")
    assert _ranked({"a": [with_doi], "b": [garbled]}, None, [IN_COLLECTION]) == []
    assert len(_ranked({"a": [with_doi], "b": [garbled]})) == 1


@pytest.mark.parametrize(
    "other",
    [
        RAG.model_copy(update={"doi": "DOI:10.5555/RAG.", "title": "Something else entirely"}),
        RAG.model_copy(
            update={
                "doi": None,
                "title": "Retrieval Augmented Generation for Knowledge-Intensive NLP Tasks!",
                "year": 2021,
            }
        ),
        RAG.model_copy(update={"doi": None, "title": None, "arxiv_id": "arXiv:2005.11401v4"}),
    ],
    ids=["doi-case-and-prefix", "title-punctuation-and-year-off-by-one", "arxiv-version"],
)
def test_records_of_one_work_written_differently_are_grouped(other: ReferenceRecord) -> None:
    first = RAG.model_copy(update={"arxiv_id": "2005.11401"})

    ranked = _ranked({"a": [first], "b": [other]})

    assert [entry.citing_paper_ids for entry in ranked] == [["a", "b"]]
    assert ranked[0].reference == first  # the most complete record stands for the work


def test_what_cannot_tell_works_apart_is_not_grouped() -> None:
    """A short title, or a title without a year, names too little; two years apart is two
    works (an earlier and a later paper under one title)."""
    short = ReferenceRecord(raw="Yeast genetics (2001).", title="Yeast genetics", year=2001)
    undated = DPR.model_copy(update={"year": None})
    later = DPR.model_copy(update={"year": 2022})
    assert _ranked({"a": [short, undated, DPR], "b": [short, undated, later]}) == []


def test_a_paper_citing_a_work_twice_counts_once() -> None:
    assert _ranked({"a": [RAG, RAG.model_copy(update={"doi": None})], "b": [DPR]}) == []
    ranked = _ranked({"a": [RAG, RAG], "b": [RAG]}, None, None)
    assert ranked[0].citing_paper_ids == ["a", "b"]


def test_a_higher_threshold_keeps_fewer() -> None:
    references = {"a": [RAG, DPR], "b": [RAG, DPR], "c": [RAG]}
    matches = {paper_id: CitationMatches(paper_id=paper_id) for paper_id in references}
    ranked = often_cited(references, matches, {}, min_papers=3)
    assert [entry.reference.title for entry in ranked] == [RAG.title]


# The bundled papers, each parsed once.
@pytest.fixture(scope="module")
def bundled() -> tuple[dict[str, list[ReferenceRecord]], dict, dict]:
    references, contexts, papers = {}, {}, []
    for path in sorted(CORPUS.glob("*.pdf")):
        document = bundled_document(path.stem)
        references[document.paper_id] = parse_references(document.references)
        contexts[document.paper_id] = citation_contexts(document, references[document.paper_id])
        papers.append(CollectionPaper.of(document))
    index = CollectionIndex(papers)
    matches = {
        paper_id: index.matches(paper_id, records) for paper_id, records in references.items()
    }
    return references, matches, contexts


def test_the_bundled_papers_share_five_works_none_of_them_is(bundled: tuple) -> None:
    """Checked by hand in the PDFs' reference lists: Fowler & Fields 2014, "Deep mutational
    scanning: a new style of protein science" (Nat. Methods 11, 801-807), is entry 67 of
    bioRxiv 2023.12.13.571462, in the list of bioRxiv 2024.05.13.593936 (author-year) and
    entry 33 of Genome Biology s13059-023-02935-8, none with a DOI: three papers, by title
    and year. Four more works are cited by two each (R, AlphaFold, RECQ1 by Berti 2013, MAFFT
    7 by Katoh 2013)."""
    ranked = often_cited(*bundled)

    assert len(ranked) == 5
    top = ranked[0]
    assert top.reference.title == "Deep mutational scanning: a new style of protein science"
    assert top.reference.year == 2014
    assert top.citing_paper_ids == [
        "10.1101_2023.12.13.571462",
        "10.1101_2024.05.13.593936",
        "10.1186_s13059-023-02935-8",
    ]
    assert {context.paper_id for context in top.contexts} <= set(top.citing_paper_ids)
    assert top.contexts
    mafft = next(
        entry for entry in ranked if doi_key(entry.reference.doi) == "10.1093/molbev/mst010"
    )
    assert mafft.citing_paper_ids == ["10.1101_2024.05.13.593936", "10.1128_aem.01486-22"]
    assert [len(entry.citing_paper_ids) for entry in ranked[1:]] == [2, 2, 2, 2]


SPECIAL = ReferenceRecord(
    raw="Müller, J. & O'Neil, K. 100% of R&D_costs: $5 #1 {braces} ~tilde^hat \\back -- ``q''",
    authors=["Müller", "O'Neil", "De Silva", "Food and Drug Administration"],
    title="100% of R&D_costs: $5 #1 {braces} ~tilde^hat \\back -- ``q'' \u2013 Ærø",
    year=2021,
    venue="J. Stat. & Prob.",
    doi="10.1000/a_b%c",
    arxiv_id="2101.00001",
)


def _read_back(text: str) -> list[tuple[str, list[str], int | None, str]]:
    entries, damaged = parse_bibtex(text)
    assert damaged == []
    return [
        (
            latex_to_text(entry.fields.get("title", "")),
            names(entry.fields.get("author", "")),
            int(entry.fields["year"]) if "year" in entry.fields else None,
            latex_to_text(entry.fields.get("doi", ""), ligatures=False),
        )
        for entry in entries
    ]


def _as_written(record: ReferenceRecord) -> tuple[str, list[str], int | None, str]:
    return (
        " ".join((record.title or "").split()),
        [" ".join(author.split()) for author in record.authors],
        record.year,
        record.doi or "",
    )


def test_the_bib_reads_back_with_litpipe_s_bibtex_reader_special_characters_and_all() -> None:
    records = [SPECIAL, RAG, DPR, ATLAS]

    assert _read_back(bibtex(records)) == [_as_written(record) for record in records]
    entries, _ = parse_bibtex(bibtex(records))
    assert entries[0].type == "article" and entries[2].type == "misc"
    assert entries[0].fields["archiveprefix"] == "arXiv"
    assert entries[0].fields["eprint"] == "2101.00001"
    assert "Ærø" in bibtex(records)  # UTF-8 kept, not made LaTeX accents


def test_keys_are_stable_readable_and_suffixed_on_a_clash() -> None:
    twin = RAG.model_copy(update={"title": "Retrieval for a second task", "doi": None})
    anonymous = ReferenceRecord(raw="The anonymous one", title="The anonymous one")
    keys = citation_keys([RAG, twin, RAG, SPECIAL, anonymous])
    assert keys == [
        "lewis2020retrieval",
        "lewis2020retrievala",
        "lewis2020retrievalb",
        # A number is not the title's word ("100% of R&D_costs"): its first word that is.
        "muller2021rdcosts",
        "anonanonymous",
    ]
    assert citation_keys([RAG, twin, RAG]) == keys[:3]


def test_the_ris_follows_refman_s_specification() -> None:
    text = ris([RAG, DPR])
    lines = text.split(RIS_LINE_END)
    assert lines[:8] == [
        "TY  - JOUR",
        "AU  - Lewis",
        "AU  - Perez",
        f"TI  - {RAG.title}",
        "PY  - 2020",
        "JO  - NeurIPS",
        "DO  - 10.5555/rag",
        "ER  - ",
    ]
    assert lines[8] == "TY  - GEN"
    assert text.endswith("ER  - " + RIS_LINE_END)
    assert "\n" not in text.replace(RIS_LINE_END, "")


def test_the_bib_entries_are_readable_as_zotero_items(tmp_path: Path) -> None:
    """What Zotero's BibTeX import would store, stored by hand: each entry of the written
    `.bib`, read with litpipe's BibTeX reader, is inserted into a Zotero database made with
    Zotero 7's schema (test_zotero's `ZoteroLibrary`) as a journal article (`title`, `date`,
    `publicationTitle` for `journal`, `DOI`, its authors as creators in order), the mapping of
    Zotero's BibTeX translator; litpipe's Zotero reader then reads the same titles, authors,
    years and DOIs back.

    This proves the entries carry nothing Zotero's item tables cannot hold and that the
    round trip through them loses nothing litpipe reads. It does not run Zotero, nor its
    BibTeX translator (its own LaTeX decoding, its handling of `@misc` and `eprint`): Zotero
    cannot run here."""
    records = [SPECIAL, RAG, DPR, ATLAS]
    read = imported_into_zotero(bibtex(records), tmp_path / "Zotero")

    assert [
        (item.title, item.authors, int(item.year.split("-")[0]), item.doi) for item in read
    ] == [_as_written(record) for record in records]
    assert read[0].venue == SPECIAL.venue


def imported_into_zotero(bib: str, folder: Path) -> list[LibraryEntry]:
    """The entries of `bib`, read with litpipe's BibTeX reader, inserted into a Zotero database
    made in `folder` as Zotero's BibTeX translator maps them (journal articles: `title`,
    `date`, `publicationTitle` for `journal`, `DOI`, the authors as creators in order), then
    read back by litpipe's Zotero reader."""
    entries, damaged = parse_bibtex(bib)
    assert damaged == []
    library = ZoteroLibrary(folder)
    for number, entry in enumerate(entries):
        values = {name: latex_to_text(value) for name, value in entry.fields.items()}
        fields = {"title": values["title"]}
        if "year" in values:
            fields["date"] = f"{values['year']}-00-00 {values['year']}"
        if "journal" in values:
            fields["publicationTitle"] = values["journal"]
        if "doi" in entry.fields:
            fields["DOI"] = latex_to_text(entry.fields["doi"], ligatures=False)
        item = library.item(f"ITEM{number:04d}", "journalArticle", **fields)
        library.creators(
            item,
            *(
                (family, given, "author")
                for family, _, given in (
                    name.partition(", ") for name in names(entry.fields["author"])
                )
            ),
        )
    library.close()
    return list_zotero(folder).entries


_text = st.text(st.characters(codec="utf-8"), max_size=40)
_records = st.builds(
    ReferenceRecord,
    raw=_text,
    authors=st.lists(_text, max_size=3),
    title=st.none() | _text | st.sampled_from([RAG.title, DPR.title]),
    year=st.none() | st.integers(-5, 3000),
    venue=st.none() | _text,
    doi=st.none() | _text | st.sampled_from(["10.5555/rag", "https://doi.org/10.5555/RAG"]),
    arxiv_id=st.none() | _text | st.just("2005.11401v1"),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lists=st.dictionaries(st.sampled_from("abcd"), st.lists(_records, max_size=5), max_size=4),
    indexes=st.lists(st.integers(-3, 8), max_size=6),
)
def test_any_records_rank_without_error_and_write_a_bib_that_reads_back(
    lists: dict[str, list[ReferenceRecord]], indexes: list[int]
) -> None:
    """Contexts and matches may point past a list's end (or before its start): ignored."""
    contexts = {
        paper_id: CitationContexts(
            paper_id=paper_id, contexts=[_context(index, "A sentence.", 1) for index in indexes]
        )
        for paper_id in lists
    }
    collection = [CollectionPaper(paper_id="x", title=DPR.title or "", year=2020)]

    ranked = _ranked(lists, contexts, collection)

    for entry in ranked:
        assert len(entry.citing_paper_ids) >= 2
    records = [record for records in lists.values() for record in records]
    text = bibtex(records)
    entries, damaged = parse_bibtex(text)
    assert damaged == []
    assert len(entries) == len(records)
    assert len({entry.key for entry in entries}) == len(records)
    assert [entry.key for entry in entries] == citation_keys(records)
    for bib_entry, record in zip(entries, records, strict=True):
        if record.title and record.title.split():
            # The reader composes accents (NFC), as a `.bib`'s `{\\"u}` is read.
            written = unicodedata.normalize("NFC", " ".join(record.title.split()))
            assert latex_to_text(bib_entry.fields["title"]) == written
    assert ris(records).count("ER  - ") == len(records)
