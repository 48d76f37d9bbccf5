"""Paper ids: stable, short, URL-safe, named by the paper's own DOI when it has one."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest

from litpipe.ingest.ids import pdf_paper_id, slug, table_paper_id
from litpipe_tests.bundled import CORPUS, PAPERS, pdf_with_pages, write_bad_pdfs

SAFE_ID = re.compile(r"[A-Za-z0-9._-]+")


@pytest.mark.parametrize("paper", PAPERS, ids=[paper["file"] for paper in PAPERS])
def test_each_corpus_pdf_is_named_by_its_doi(paper: dict) -> None:
    assert pdf_paper_id(CORPUS / paper["file"]) == paper["paper_id"]


def test_id_is_stable_and_independent_of_the_file_name(tmp_path: Path) -> None:
    original = CORPUS / PAPERS[0]["file"]
    renamed = tmp_path / "downloaded (1).pdf"
    shutil.copy(original, renamed)
    assert pdf_paper_id(original) == pdf_paper_id(original) == pdf_paper_id(renamed)


def test_own_doi_wins_over_a_cited_one(tmp_path: Path) -> None:
    header = "Journal of Tests 2024 https://doi.org/10.5555/own.2024.1\n"
    pages = [
        header + "Title\nAs shown before (doi:10.9999/cited.7), things hold.",
        header + "More text citing 10.8888/other.3 without a label.",
    ]
    assert pdf_paper_id(pdf_with_pages(tmp_path / "a.pdf", pages)) == "10.5555_own.2024.1"


def test_arxiv_id_when_there_is_no_doi(tmp_path: Path) -> None:
    pages = ["arXiv:2301.00001v2 [cs.CL] 3 Jan 2023\nA Title\nSome abstract text."]
    assert pdf_paper_id(pdf_with_pages(tmp_path / "a.pdf", pages)) == "arxiv-2301.00001"


def test_unlabelled_doi_on_one_page_only_is_not_taken(tmp_path: Path) -> None:
    pages = ["A Title\nWe build on 10.1234/cited.5 and others.", "Second page."]
    path = pdf_with_pages(tmp_path / "a.pdf", pages)
    assert pdf_paper_id(path) == "sha256-" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def test_unreadable_files_fall_back_to_their_content_hash(tmp_path: Path) -> None:
    for path, _ in write_bad_pdfs(tmp_path).values():
        expected = "sha256-" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        assert pdf_paper_id(path) == expected, path.name


@pytest.mark.parametrize(
    "text",
    [
        "Fine-tuning, protein|language models",
        "a,b|c",
        "   ",
        "",
        ",,,|||",
        "ünïcödé títle — 2024",
        "10.1093/nar/gkae252",
        "x" * 500,
        "Rows/with spaces and (brackets) " * 10,
    ],
)
def test_slug_is_url_safe_bounded_and_never_empty(text: str) -> None:
    for max_len in (16, 64):
        fragment = slug(text, max_len)
        assert SAFE_ID.fullmatch(fragment), fragment
        assert "," not in fragment and "|" not in fragment
        assert 0 < len(fragment) <= max_len
        assert fragment == slug(text, max_len)


def test_slug_keeps_case_and_trims_separators() -> None:
    assert slug("  Fine-Tuning: pLMs!  ") == "Fine-Tuning-pLMs"
    assert slug("10.1101_2024.02.13.580051") == "10.1101_2024.02.13.580051"
    assert slug("doi:10.1101/x y") == "doi-10.1101-x-y"


def test_long_texts_sharing_a_prefix_get_different_slugs() -> None:
    first, second = "a" * 100 + "first", "a" * 100 + "second"
    assert slug(first) != slug(second)
    assert len(slug(first)) == len(slug(second)) == 64


def test_table_paper_id_joins_slugged_collection_and_row() -> None:
    assert table_paper_id("iclr abstracts", "row,1|x") == "iclr-abstracts.row-1-x"
    long_id = table_paper_id("c" * 300, "r" * 300)
    assert SAFE_ID.fullmatch(long_id) and len(long_id) <= 129


def test_table_paper_ids_of_different_collections_and_rows_never_collide() -> None:
    assert table_paper_id("a.b", "c") != table_paper_id("a", "b.c")
    pairs = [(c, r) for c in ["a", "a.b", "a.b.c", "a..b", "b"] for r in ["c", "b.c", "c.d", "x"]]
    ids = [table_paper_id(collection, row) for collection, row in pairs]
    assert len(set(ids)) == len(pairs)
    assert all(SAFE_ID.fullmatch(paper_id) for paper_id in ids)
    # A collection without a dot keeps the ids it always had.
    assert table_paper_id("iclr-2024", "b.c") == "iclr-2024.b.c"
