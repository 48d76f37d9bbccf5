"""The hand-checked comparison table of the nine bundled papers
(`litpipe_tests/data/comparison_eval/`, its README says how it was made): whole, and each entry
pointing at pages of its paper that hold its terms, so that a value scored against it is scored
against what the paper says where the reader found it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pymupdf

from litpipe.extractive.comparison_table import FIXED_ASPECTS
from litpipe_tests.bundled import CORPUS, PDFS_BY_SIZE

GOLD = Path(__file__).parent / "data" / "comparison_eval" / "gold.jsonl"


def page_texts(pdf: Path) -> list[str]:
    """Each page's text as the reader searched it: case-folded, soft hyphens dropped,
    whitespace collapsed."""
    with pymupdf.open(pdf) as document:
        return [
            " ".join(page.get_text().replace("\u00ad", "").split()).casefold() for page in document
        ]


def test_the_gold_table_has_every_bundled_paper_by_every_aspect_once() -> None:
    records = [json.loads(line) for line in GOLD.read_text("utf-8").splitlines() if line]
    cells = [(record["paper_id"], record["aspect"]) for record in records]
    assert sorted(cells) == sorted((pdf.stem, a) for pdf in PDFS_BY_SIZE for a in FIXED_ASPECTS)
    for record in records:
        assert bool(record["terms"]) == bool(record["pages"]) == record["reported"], record
        assert len(record["value"].split()) <= 20, record


def test_each_gold_term_is_on_one_of_its_pages() -> None:
    records = [json.loads(line) for line in GOLD.read_text("utf-8").splitlines() if line]
    pages = {pdf.stem: page_texts(CORPUS / pdf.name) for pdf in PDFS_BY_SIZE}
    misplaced = []
    for record in records:
        texts = pages[record["paper_id"]]
        assert all(1 <= page <= len(texts) for page in record["pages"]), record
        for term in record["terms"]:
            wanted = re.compile(re.escape(term.casefold()))
            if not any(wanted.search(texts[page - 1]) for page in record["pages"]):
                misplaced.append((record["paper_id"], record["aspect"], term, record["pages"]))
    assert misplaced == []
