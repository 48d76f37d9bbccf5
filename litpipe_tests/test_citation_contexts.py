"""In-text citation markers linked to reference-list records, checked on bundled papers of
three marker styles (bracketed numbers, parenthesised numbers, author-year) and on written
documents for the forms the bundled papers do not use, and on any text at all.

What a user would notice: a sentence they can read in the PDF is linked to the entry it cites,
with its page and section; a range names every entry in it; an author-year marker finds its
entry by family name and year; a marker with no entry is counted, not an error.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litpipe.ingest.citation_contexts import citation_contexts
from litpipe.ingest.references import parse_reference, parse_references
from litpipe.schemas import CitationContexts, PaperDocument, ReferenceRecord, Section
from litpipe.text import SUPERSCRIPT_DIGITS, SUPERSCRIPT_MINUS
from litpipe_tests.bundled import BUNDLED_DOCUMENTS_GROUP, bundled_document

pytestmark = pytest.mark.xdist_group(BUNDLED_DOCUMENTS_GROUP)

BRACKETED = "10.1101_2024.02.13.580051.pdf"  # PLOS style: [1, 2], [6-8]
PARENTHESISED = "10.1093_nar_gkae252.pdf"  # NAR: (1), (2,3), (8-10)
AUTHOR_YEAR = "10.1093_g3journal_jkad293.pdf"  # G3: (Goffeau et al. 1996)


@pytest.fixture(scope="module")
def linked() -> dict[str, tuple[list[ReferenceRecord], CitationContexts]]:
    """Three bundled papers' records and contexts, each PDF parsed once."""
    found = {}
    for name in (BRACKETED, PARENTHESISED, AUTHOR_YEAR):
        document = bundled_document(Path(name).stem)
        records = parse_references(document.references)
        found[name] = records, citation_contexts(document, records)
    return found


def test_a_bracketed_sentence_links_to_its_entries_on_its_page(linked: dict) -> None:
    records, contexts = linked[BRACKETED]
    forks = [
        context
        for context in contexts.contexts
        if context.sentence.endswith("stalling replication forks [1, 2].")
    ]
    assert [records[context.reference_index].authors[0] for context in forks] == [
        "Eichman",
        "Tubbs",
    ]
    assert {(context.page, context.section) for context in forks} == {(4, "Introduction")}
    assert [context.reference_number for context in forks] == [1, 2]


def test_a_range_names_every_entry_in_it(linked: dict) -> None:
    _, contexts = linked[BRACKETED]
    numbers = [context.reference_number for context in contexts.contexts]
    assert numbers[numbers.index(6) : numbers.index(6) + 3] == [6, 7, 8]  # [6-8]
    assert next(c.marker for c in contexts.contexts if c.reference_number == 7) == "[6-8]"
    cited = {context.reference_number for context in contexts.contexts}
    assert cited == set(range(1, 95))  # every entry of its 94 is cited somewhere
    assert contexts.unresolved == []


def test_parenthesised_numbers_where_they_are_the_paper_s_style(linked: dict) -> None:
    records, contexts = linked[PARENTHESISED]
    first = contexts.contexts[0]
    assert first.marker == "(1)" and records[first.reference_index].authors == ["Supek", "Lehner"]
    assert first.sentence.startswith("The local variation in mutation rates")
    assert (first.page, first.section) == (1, "Introduction")
    # Its years in parentheses, `(2020)`, are past the list's last number: no markers.
    assert contexts.unresolved == []


def test_author_year_markers_resolve_by_family_name_and_year(linked: dict) -> None:
    records, contexts = linked[AUTHOR_YEAR]
    goffeau = next(c for c in contexts.contexts if c.marker == "(Goffeau et al. 1996)")
    assert records[goffeau.reference_index].authors[0] == "Goffeau"
    assert records[goffeau.reference_index].year == 1996
    assert (goffeau.page, goffeau.section) == (1, "Introduction")
    assert "first eukaryote to have its genome sequenced" in goffeau.sentence
    gallone = {
        records[c.reference_index].year
        for c in contexts.contexts
        if c.marker == "(Gallone et al. 2016, 2018, 2019)"
    }
    assert gallone == {2016, 2018, 2019}
    cited = {context.reference_index for context in contexts.contexts}
    assert len(cited) >= 0.95 * len(records)
    assert contexts.unresolved == []


def written(text: str, references: list[str]) -> CitationContexts:
    """The contexts of a two-page document whose second page starts at `Methods`."""
    split = text.index("Methods")
    document = PaperDocument(
        paper_id="written",
        source_path="written.pdf",
        title="A written paper",
        text=text,
        sections=[
            Section(heading="Introduction", char_start=0, char_end=split, page_start=1, page_end=1),
            Section(
                heading="Methods", char_start=split, char_end=len(text), page_start=2, page_end=2
            ),
        ],
        page_starts=[0, split],
        pages=2,
        references=references,
    )
    return citation_contexts(document, [parse_reference(entry) for entry in references])


AUTHOR_YEAR_LIST = [
    "Chen L, Wu M. 2019. A first method. J Tests. 1:1-2.",
    "Lewis P, Chen L, Perez E. 2020. Retrieval for all. J Tests. 2:3-4.",
    "Lewis P, Chen L, Perez E. 2020. Retrieval for some. J Tests. 2:5-6.",
    "Lewis P, Chen L. 2021. Retrieval again. J Tests. 3:1-9.",
    "Wu M. 2019. Another method. J Tests. 1:3-4.",
]


def test_narrative_and_grouped_author_year_markers() -> None:
    contexts = written(
        "Introduction. Lewis and Chen (2021) extend the first method. "
        "Methods. Others compare them (Lewis and Chen 2021; Wu 2019). "
        "In Lewis et al. (2020a) and Lewis et al. (2020b) it differs.",
        AUTHOR_YEAR_LIST,
    )
    by_marker = [(c.marker, c.reference_index, c.page, c.section) for c in contexts.contexts]
    assert by_marker == [
        ("Lewis and Chen (2021)", 3, 1, "Introduction"),
        ("(Lewis and Chen 2021; Wu 2019)", 3, 2, "Methods"),
        ("(Lewis and Chen 2021; Wu 2019)", 4, 2, "Methods"),
        # The word before a name is read with it, and the name alone then finds the entry.
        ("In Lewis et al. (2020a)", 1, 2, "Methods"),
        ("Lewis et al. (2020b)", 2, 2, "Methods"),
    ]
    assert contexts.contexts[0].sentence == "Lewis and Chen (2021) extend the first method."


def test_unknown_and_ambiguous_markers_are_unresolved_not_errors() -> None:
    contexts = written(
        "Introduction. As shown before (Nobody et al., 2001), and twice (Lewis et al., 2020). "
        "Methods. Fine.",
        AUTHOR_YEAR_LIST,
    )
    assert contexts.contexts == []
    assert [(u.marker, u.reason) for u in contexts.unresolved] == [
        ("(Nobody et al., 2001)", "no entry by nobody in 2001"),
        ("(Lewis et al., 2020)", "2 entries by lewis in 2020"),
    ]
    numbered = written(
        "Introduction. Lewis et al. [2] built it [1\u20133, 9]. Methods. PARP1 binds it.",
        ["[1] A. Chen, One. J. 1 (2019).", "[2] P. Lewis, Two. J. 2 (2020).", "[3] M. Wu, Three."],
    )
    assert [c.reference_number for c in numbered.contexts] == [2, 1, 2, 3]
    assert [(u.marker, u.reason, u.page) for u in numbered.unresolved] == [
        ("[1\u20133, 9]", "no entry numbered 9", 1)
    ]  # and `PARP1` is no superscript marker


NATURE_LIST = [f"{n}. Chen, A. Work number {n}. J. Tests {n}, 1-2 (2019)." for n in range(1, 21)]


def up(numbers: str) -> str:
    """`numbers` raised, as the PDF reader writes a superscript (`up("7-13")`: `⁷⁻¹³`)."""
    return numbers.translate(str.maketrans("0123456789-", SUPERSCRIPT_DIGITS + SUPERSCRIPT_MINUS))


def test_raised_numbers_cite_where_they_are_the_paper_s_style() -> None:
    contexts = written(
        f"Introduction. Its word{up('14')} cites, as does contact formation{up('10,20')} and "
        f"language models{up('7-13')}. A name ending in a digit, MMseqs2{up('15')}, and a "
        f"closing bracket, (RFA){up('16')}, cite too; PARP1 does not. Methods. We grew "
        f"10{up('5')} cells, 2.2X10{up('6')} more, on 500 cm{up('2')} plates in Ca{up('2')}\u207a, "
        f"fitted R{up('2')} = 0.9, and kept spn-A{up('057')} and item{up('99')} (past the list).",
        NATURE_LIST,
    )
    assert [(c.marker, c.reference_number) for c in contexts.contexts] == [
        (up("14"), 14),
        (up("10,20"), 10),
        (up("10,20"), 20),
        *((up("7-13"), number) for number in range(7, 14)),
        (up("15"), 15),
        (up("16"), 16),
    ]
    assert contexts.contexts[0].sentence == (
        f"Its word{up('14')} cites, as does contact formation{up('10,20')} and language "
        f"models{up('7-13')}."
    )
    # Exponents, units, charges, allele codes and numbers past the list are no markers at all.
    assert contexts.unresolved == []


def test_a_number_raised_after_a_full_stop_cites_from_the_sentence_it_ends() -> None:
    contexts = written(
        f"Introduction. Models help.{up('14,15')} They fail{up('16')}. Methods.", NATURE_LIST
    )
    assert [(c.reference_number, c.sentence) for c in contexts.contexts] == [
        (14, f"Models help.{up('14,15')}"),
        (15, f"Models help.{up('14,15')}"),
        (16, f"They fail{up('16')}."),
    ]


def test_raised_numbers_are_no_markers_in_the_front_matter_or_a_bracketed_paper() -> None:
    front = f"Ann Smith{up('1,2')}, Bob Jones{up('1')}"
    text = f"{front}\n\nIntroduction. Known{up('1')} and shown{up('2,3')}."
    body = len(front) + 2
    document = PaperDocument(
        paper_id="nature",
        source_path="nature.pdf",
        title="A paper",
        text=text,
        sections=[
            Section(
                heading="Front matter", char_start=0, char_end=len(front), page_start=1, page_end=1
            ),
            Section(
                heading="Introduction",
                char_start=body,
                char_end=len(text),
                page_start=1,
                page_end=1,
            ),
        ],
        page_starts=[0],
        pages=1,
        references=NATURE_LIST,
    )
    contexts = citation_contexts(document, [parse_reference(entry) for entry in NATURE_LIST])
    assert [(c.marker_start, c.reference_number) for c in contexts.contexts] == [
        (text.index(up("1"), body), 1),
        (text.index(up("2,3")), 2),
        (text.index(up("2,3")), 3),
    ]
    # A paper citing in brackets: its raised number is a footnote's mark.
    bracketed = written(
        f"Introduction. Shown twice [1, 2] and once [3]. Methods. Funded{up('1')} by a grant.",
        NATURE_LIST,
    )
    assert [c.marker for c in bracketed.contexts] == ["[1, 2]", "[1, 2]", "[3]"]


# 20 of the PLM paper's contexts, each read by hand: its marker cites, and the entry it is
# linked to is the one its number names.
RAISED_CHECKED = json.loads(
    (Path(__file__).parent / "data" / "superscript_contexts.json").read_text("utf-8")
)


def test_a_paper_citing_in_superscripts_has_its_markers_linked() -> None:
    # Nature's style (10.1101/2023.12.13.571462): no context at all while superscripts were
    # joined to the word before them.
    document = bundled_document(RAISED_CHECKED["paper"])
    records = parse_references(document.references)
    contexts = citation_contexts(document, records)
    assert "For ProtT5-XL-U50\u00b9\u2074 (labeled ProtT5)" in document.text
    assert len(contexts.contexts) == 185
    assert len({context.marker_start for context in contexts.contexts}) == 144
    assert contexts.unresolved == []
    # Every entry of its 75 is cited somewhere, some only inside a range (`⁷⁻¹³`).
    cited = {context.reference_number for context in contexts.contexts}
    assert cited == set(range(1, 76))
    # Each checked context by the text before its marker: the offsets move when the parser
    # takes text out before it (a table's cells, with `ingest.pdf_tables`).
    for checked in RAISED_CHECKED["contexts"]:
        [context] = [
            c
            for c in contexts.contexts
            if c.reference_number == checked["reference_number"]
            and c.marker == checked["marker"]
            and document.text[: c.marker_start].endswith(checked["before"])
        ]
        assert records[context.reference_index].raw.startswith(checked["entry_starts"])
    assert len(RAISED_CHECKED["contexts"]) == 20


# Texts made of the pieces markers are made of, so that every branch of the finder is met.
MARKER_LIKE = st.lists(
    st.sampled_from(
        [
            *"()[],;.- \n\u2013",
            *("Lewis", "Chen", "Wu", " et al.", " and ", "2020", "2021a", "1", "9"),
            *(up("1"), up("9"), up("0"), up("-"), "\u207a", "cm"),
        ]
    ),
    max_size=120,
).map("".join)
ENTRIES = [*AUTHOR_YEAR_LIST, "[1] A. Chen, One. J. 1 (2019)."]


def test_bracketed_numbers_of_an_author_year_paper_are_no_markers() -> None:
    # Genetics' DHFR fragments, `F[1,2]` and `F[3]` (10.1101/2024.05.13.593936).
    contexts = written(
        "Introduction. Sho1 was fused to DHFR F[1,2] and Pbs2 to F[3] (Wu 2019). Methods.",
        AUTHOR_YEAR_LIST,
    )
    assert [c.marker for c in contexts.contexts] == ["(Wu 2019)"]
    assert contexts.unresolved == []


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.text(max_size=300), MARKER_LIKE),
    st.lists(st.sampled_from(ENTRIES), max_size=4),
)
def test_any_text_gives_contexts_inside_it(body: str, references: list[str]) -> None:
    text = f"{body}Methods{body}"
    contexts = written(text, references)
    for context in contexts.contexts:
        assert 0 <= context.reference_index < len(references)
        assert text.startswith(context.marker, context.marker_start)
        assert text[context.char_start : context.char_end] == context.sentence
        assert context.page in (1, 2)
    assert all(marker.marker for marker in contexts.unresolved)


def test_long_texts_are_searched_in_linear_time() -> None:
    start = time.process_time()
    raised = [f"a{up('1,')}" * 20_000, f"a{up('1-')}" * 20_000, "a" + up("1") * 40_000]
    for body in ["Aaa-" * 20_000, "Lewis and " * 10_000 + "(2020)", "[1-" * 20_000, *raised]:
        written(f"{body} Methods.", AUTHOR_YEAR_LIST)
    assert time.process_time() - start < 10
