"""PDF parsing, checked on the nine papers of corpora/biology-cc-by and on generated files.

What a reader of `PaperDocument.text` would notice: the right title and abstract, no running
headers, page or line numbers, no words broken at line ends, columns read in order, the
references kept out of the text and the body kept whole.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from pathlib import Path

import pymupdf
import pytest

from litpipe.ingest.pdf import MODULES, parse_pdf
from litpipe.schemas import IngestError, PaperDocument
from litpipe_tests.bundled import CORPUS, PAPERS, write_bad_pdfs

# One worker builds this module's shared fixtures (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group("test_ingest_pdf")

IDS = [paper["file"] for paper in PAPERS]

# A reference entry that leaked into the text would show one of these (one per citation style).
NAME = r"[A-Z][\w'\u2019-]+"
INITIALS = r"(?:[A-Z]\.\s?)"
REFERENCE_ENTRY = [
    re.compile(rf"^\[?\d{{1,3}}[.\])]\s+{INITIALS}{{0,3}}{NAME},? (?:{INITIALS}|[A-Z]{{1,3}}\b)"),
    re.compile(rf"^{NAME} [A-Z]{{1,3}}, {NAME} [A-Z]{{1,3}}[,.]"),  # Smith AB, Jones CD,
    re.compile(rf"^{NAME} {INITIALS}{{1,3}}, {INITIALS}{{1,3}}[A-Z]"),  # Amberg D., D. C. Burke
    re.compile(r"\b(?:19|20)\d\d;\d+(?:\(\d+\))?:\d+"),  # 2017;168(4):644
    re.compile(r"\bPubMed PMID\b"),
    re.compile(rf"^{INITIALS}{{1,3}}{NAME}, .*\b\d+, \d+[\u2013-]\d+ \((?:19|20)\d\d\)"),  # PNAS
    re.compile(r"\b\d+\(\d+\):\d+[\u2013-]\d+\. doi:"),  # 21(6):974-984. doi:
    re.compile(r" , \d+ , \d+[\u2013-]\d+\.$"),  # Nature , 488 , 504-507.
]
FURNITURE = ["bioRxiv preprint", "The copyright holder for this preprint", "this version posted"]


def normalized(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def documents() -> dict[str, PaperDocument]:
    return {paper["file"]: parse_pdf(CORPUS / paper["file"], paper["paper_id"]) for paper in PAPERS}


@pytest.fixture(params=PAPERS, ids=IDS)
def case(request: pytest.FixtureRequest, documents: dict) -> tuple[dict, PaperDocument]:
    return request.param, documents[request.param["file"]]


def test_title_authors_abstract_and_identifiers(case: tuple[dict, PaperDocument]) -> None:
    truth, document = case
    assert normalized(document.title) == truth["title"]
    abstract = normalized(document.abstract)
    assert abstract.startswith(truth["abstract_starts"])
    assert abstract.endswith(truth["abstract_ends"]), abstract[-200:]
    assert set(truth["authors_include"]) <= set(document.authors)
    assert document.doi == truth["doi"]
    assert document.paper_id == truth["paper_id"]
    assert document.pages == truth["pages"]


def test_body_is_kept_and_columns_read_in_order(case: tuple[dict, PaperDocument]) -> None:
    truth, document = case
    text = normalized(document.text)
    for phrase in truth["body_phrases"] + truth["column_break_phrases"]:
        assert phrase in text


def test_references_are_listed_and_kept_out_of_the_text(case: tuple[dict, PaperDocument]) -> None:
    truth, document = case
    assert len(document.references) == truth["reference_count"]
    assert any(truth["reference_phrase"] in normalized(entry) for entry in document.references)
    assert truth["reference_phrase"] not in normalized(document.text)
    for paragraph in document.text.split("\n\n"):
        for pattern in REFERENCE_ENTRY:
            assert not pattern.search(paragraph), paragraph[:300]


def test_no_page_furniture_in_the_text(case: tuple[dict, PaperDocument]) -> None:
    truth, document = case
    text = normalized(document.text)
    for furniture in [*FURNITURE, truth["running_header"]]:
        assert furniture not in text
    assert not re.search(r"\bPage \d+ of \d+\b", text)
    for run in re.finditer(r"(?:\b\d{1,4}\s+){2,}\d{1,4}\b", document.text):
        numbers = [int(number) for number in run.group(0).split()]
        counting = all(after == before + 1 for before, after in itertools.pairwise(numbers))
        assert not counting, f"line numbers: {run.group(0)!r}"


def test_lines_are_joined_into_paragraphs(case: tuple[dict, PaperDocument]) -> None:
    _, document = case
    text = document.text
    assert "\n\n\n" not in text
    assert not re.search(r"[^\n]\n[^\n]", text), "a line break inside a paragraph"
    assert "\u00ad" not in text
    broken = re.findall(r"\b[a-z]{2,}-\s+(?!and\b|or\b|to\b|nor\b|versus\b)[a-z]{2,}\b", text)
    assert not broken


def test_sections_cover_the_text_in_order(case: tuple[dict, PaperDocument]) -> None:
    _, document = case
    sections = document.sections
    assert sections[0].char_start == 0
    assert sections[-1].char_end == len(document.text)
    for before, after in itertools.pairwise(sections):
        assert before.char_end == after.char_start
    for section in sections:
        assert section.char_start < section.char_end
        assert section.page_start == document.page_at(section.char_start)
        assert section.page_end == document.page_at(section.char_end - 1)
    headings = " | ".join(section.heading.lower() for section in sections)
    assert re.search(r"introduction|background", headings)
    assert re.search(r"results|methods", headings)


def test_pages_map_text_to_where_it_is_printed(case: tuple[dict, PaperDocument]) -> None:
    truth, document = case
    starts = document.page_starts
    assert len(starts) == document.pages and starts[0] == 0
    assert all(before <= after for before, after in itertools.pairwise(starts))
    assert starts[-1] <= len(document.text)
    with pymupdf.open(CORPUS / truth["file"]) as pdf:
        # NFKC: plain text keeps ligatures ("identiﬁcation") that parse_pdf expands
        printed = [normalized(unicodedata.normalize("NFKC", page.get_text())) for page in pdf]
    for phrase in truth["body_phrases"]:
        # words 2-4: pymupdf's plain text splits drop capitals ("V irtually")
        opening = " ".join(phrase.split()[1:4])
        pages = [number for number, page in enumerate(printed, 1) if opening in page]
        found = re.search(r"\s+".join(map(re.escape, phrase.split())), document.text)
        assert found and document.page_at(found.start()) in pages, phrase


# ---------------------------------------------------------------------------------------------
# Generated PDFs


def _write_two_column_pdf(path: Path) -> None:
    """Three pages: running header, page number, line numbers, two columns, a hyphenated word."""
    doc = pymupdf.open()
    for number in range(1, 4):
        page = doc.new_page(width=612, height=792)
        page.insert_text((72, 40), "Journal of Generated Tests, 2024", fontsize=8)
        page.insert_text((300, 770), str(number), fontsize=9)
        for row in range(30):
            y = 110 + row * 14
            page.insert_text((40, y), str((number - 1) * 30 + row + 1), fontsize=8)
            left = f"Left column page {number} line {row} says alpha beta gamma"
            right = f"Right column page {number} line {row} says delta epsilon"
            if row == 10:
                left = "The cells showed a strong and clear regu-"
            if row == 11:
                left = "lation of the genes in every left column"
            page.insert_text((72, y), left, fontsize=10)
            page.insert_text((320, y), right, fontsize=10)
    doc.save(path)


def test_generated_two_column_pdf(tmp_path: Path) -> None:
    path = tmp_path / "columns.pdf"
    _write_two_column_pdf(path)
    document = parse_pdf(path, "generated")
    text = document.text
    assert "Journal of Generated Tests" not in text
    assert "strong and clear regulation of the genes" in text
    for number in range(1, 4):
        last_left = text.index(f"Left column page {number} line 29")
        first_right = text.index(f"Right column page {number} line 0")
        assert last_left < first_right
        assert first_right < text.index(f"Right column page {number} line 29")
    assert not re.search(r"\b(?:\d{1,3}\s+){3,}", text), "line numbers left in the text"
    assert document.pages == 3 and len(document.page_starts) == 3
    assert document.page_at(text.index("Left column page 2 line 0")) == 2


def test_bad_input_raises_a_one_line_ingest_error(tmp_path: Path) -> None:
    for name, (path, reason) in write_bad_pdfs(tmp_path).items():
        with pytest.raises(IngestError) as raised:
            parse_pdf(path, "bad")
        message = str(raised.value)
        assert message.startswith(reason), (name, message)
        assert "\n" not in message


def test_missing_file_raises_an_ingest_error(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="file not found"):
        parse_pdf(tmp_path / "absent.pdf", "absent")


def test_a_space_drawn_between_kerned_letters_does_not_split_the_word() -> None:
    # NAR's typesetter draws a space glyph (font "dummy-space") between kerned letters: read as
    # drawn, "to evaluate the performance" became "to e v aluate the perf ormance".
    document = parse_pdf(CORPUS / "10.1093_nar_gkae252.pdf", "nar")
    text = document.text
    assert "e v aluate" not in text and "perf ormance" not in text and "co v ariates" not in text
    # The real spaces around the word are kept.
    assert "used to evaluate the performance" in text


def test_the_code_version_hashes_every_module_of_the_parser() -> None:
    """`paper_document`'s code version hashes `MODULES`: editing any module of the package marks
    it stale."""
    package = Path(str(MODULES[0].__file__)).parent
    assert {Path(str(module.__file__)) for module in MODULES} == set(package.glob("*.py"))


def _write_line(page: pymupdf.Page, y: float, line: str, size: float) -> None:
    """One line of text, its pieces between carets (`U50^14^`) set smaller above the baseline,
    as a typesetter sets a superscript (PyMuPDF flags such a span superscript)."""
    x = 72.0
    for index, text in enumerate(line.split("^")):
        fontsize, rise = (0.65 * size, 0.35 * size) if index % 2 else (size, 0.0)
        page.insert_text((x, y - rise), text, fontsize=fontsize)
        x += pymupdf.get_text_length(text, fontsize=fontsize)


def test_raised_numbers_read_as_superscripts_and_authors_without_their_marks(
    tmp_path: Path,
) -> None:
    # Read with the word before, a raised `14` made `U5014`, which reads as a name (`PARP1`).
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 80), "Raised numbers in a generated paper", fontsize=18)
    _write_line(page, 110, "Ann Smith^1,2^, Bob Jones^1^", size=11)
    body = [
        "For ProtT5-XL-U50^14^ and ESM2^16^ we read contact formation^10,20^.",
        "Language models^7-13^ were used on 2 x 10^5^ cells of mCherry^+^ cultures.",
        "Plates of 500 cm^2^ held them for a while in the cold.",
    ]
    for row, line in enumerate(body):
        _write_line(page, 150 + 12 * row, line, size=10)
    doc.save(tmp_path / "raised.pdf")
    document = parse_pdf(tmp_path / "raised.pdf", "raised")
    text = document.text
    assert "For ProtT5-XL-U50\u00b9\u2074 and ESM2\u00b9\u2076 we" in text
    assert (
        "formation\u00b9\u2070,\u00b2\u2070. Language models\u2077\u207b\u00b9\u00b3 were" in text
    )
    # Exponents and units read right; a raised sign is left as it is set.
    assert "2 x 10\u2075 cells of mCherry+ cultures" in text
    assert "500 cm\u00b2 held" in text
    assert document.authors == ["Ann Smith", "Bob Jones"]
