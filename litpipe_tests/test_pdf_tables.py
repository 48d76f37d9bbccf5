"""Tables and captions at ingestion: the bundled papers' tables as Markdown with their captions
and pages, their chunks found by retrieval, and the tables a finder cannot read left as text."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pymupdf
import pytest

from litpipe.ingest.chunking import chunk_document
from litpipe.ingest.pdf import parse_pdf
from litpipe.ingest.pdf.tables import MAX_TABLE_COLUMNS
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.hybrid import HybridRetriever
from litpipe.retrieval.store import ChunkStore
from litpipe.schemas import PaperChunks, PaperDocument
from litpipe_tests.bundled import BUNDLED_DOCUMENTS_GROUP, CORPUS
from litpipe_tests.conftest import FakeEmbedder, FakeTokenizer

COUNTED = json.loads((Path(__file__).parent / "data" / "pdf_tables.json").read_text("utf-8"))
PAPERS: dict[str, list[dict]] = COUNTED["papers"]
WITH_TABLES = "10.1101_2023.12.13.571462"
BODY = (
    "We grew the strains in rich medium and measured their growth over three days. "
    "Each strain was tested in triplicate and the results are given below."
)

pytestmark = pytest.mark.xdist_group(BUNDLED_DOCUMENTS_GROUP)


@cache
def with_tables(stem: str) -> PaperDocument:
    """A bundled PDF parsed once a process with its tables read (`ingest.pdf_tables`)."""
    return parse_pdf(CORPUS / f"{stem}.pdf", stem, tables=True)


def test_the_tables_found_in_each_bundled_paper_are_those_counted_by_hand() -> None:
    assert len(PAPERS) == 9
    found = {
        stem: [{"page": table.page, "label": table.label} for table in with_tables(stem).tables]
        for stem in PAPERS
    }
    assert found == PAPERS


def test_a_table_is_markdown_with_its_header_row_caption_and_page() -> None:
    first, second = with_tables(WITH_TABLES).tables
    assert (first.page, first.rows, first.columns, first.capped) == (10, 10, 7, False)
    assert first.caption == "Table 1: Protein language models (pLMs) applied in study *"
    assert first.markdown.splitlines()[:2] == [
        "| Model | Architecture | Number of | Trained | Encoder | Emb | Huggingface |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    assert "| ESM2 3B |  | 3,000 M | 7,700 K | 36 | 2560 | esm2_t36_3B_UR50D |" in first.markdown
    assert second.page == 11 and second.caption.startswith("Table 2: Task-specific datasets")
    assert "|  |  | Meltome23,72 | 22,335 |  | 2,482 | 3,134 | 544.5 |" in second.markdown
    # The values are the table's alone: the text never states them.
    assert "544.5" not in with_tables(WITH_TABLES).text


def test_the_figure_captions_found_are_the_figures_counted_but_two() -> None:
    """Two captions the parser joins to the caption before them, whose figures are then found
    in that caption's chunk, not their own."""
    for stem, figures in COUNTED["figures"].items():
        counted = [f"{figures['label']} {number}" for number in range(1, figures["count"] + 1)]
        missed = COUNTED["figure_captions_not_found"].get(stem, [])
        found = [c.label for c in with_tables(stem).captions if c.kind == "figure"]
        assert found == [label for label in counted if label not in missed], stem


def test_the_bundled_papers_captions_are_their_figures_and_tables() -> None:
    document = with_tables(WITH_TABLES)
    assert [(caption.kind, caption.label, caption.page) for caption in document.captions] == [
        ("figure", "Fig. 1", 3),
        ("figure", "Fig. 2", 4),
        ("figure", "Fig. 3", 5),
        ("figure", "Fig. 4", 6),
        ("figure", "Fig. 5", 7),
        ("table", "Table 1", 10),
        ("table", "Table 2", 11),
    ]
    for caption in document.captions:
        assert document.text[caption.char_start : caption.char_end] == caption.text
    # A sentence that opens with a figure's number is no caption.
    assert not any(caption.text.startswith("Figure 3 shows") for caption in document.captions)


def test_table_and_caption_chunks_of_the_bundled_papers(minilm: Embedder) -> None:
    for stem in PAPERS:
        document = with_tables(stem)
        chunks = _chunks(document, minilm)
        tables = [chunk for chunk in chunks.chunks if chunk.kind == "table"]
        captions = [chunk for chunk in chunks.chunks if chunk.kind == "caption"]
        assert {chunk.page_start for chunk in tables} == {t.page for t in document.tables}, stem
        figures = [caption for caption in document.captions if caption.kind == "figure"]
        # Each figure's caption is chunked on its own (a long one in several chunks), at its
        # place in the text, never inside a chunk of body text.
        assert {chunk.char_start for chunk in captions} >= {c.char_start for c in figures}, stem
        for chunk in chunks.chunks:
            assert chunk.n_tokens <= minilm.max_chunk_tokens
            if chunk.kind == "table":
                assert chunk.char_start >= len(document.text)
                continue
            assert document.text[chunk.char_start : chunk.char_end] == chunk.text
            if chunk.kind == "text":
                assert not any(
                    chunk.char_start <= caption.char_start < chunk.char_end
                    for caption in document.captions
                ), (stem, chunk.chunk_id)
    chunks = _chunks(with_tables(WITH_TABLES), minilm)
    first = next(chunk for chunk in chunks.chunks if chunk.kind == "table")
    assert first.text.startswith("Table 1: Protein language models (pLMs) applied in study *\n\n")
    assert (first.page_start, first.section) == (10, "4.1. Pre-trained pLMs")


def test_a_long_table_is_chunked_by_rows_each_chunk_repeating_its_header_row() -> None:
    document = with_tables(WITH_TABLES)
    header = document.tables[1].markdown.splitlines()[0]
    # 150 fake tokens a chunk: the header row is 56, a row 18 to 76.
    chunks = chunk_document(document, FakeTokenizer(), 150, 0, "fake").chunks
    pieces = [chunk for chunk in chunks if chunk.kind == "table" and chunk.page_start == 11]
    assert len(pieces) > 2
    assert pieces[0].text.startswith("Table 2: Task-specific datasets")
    assert all(piece.text.startswith(header) for piece in pieces[1:])
    rows = [line for piece in pieces for line in piece.text.splitlines()[2:]]
    assert "|  |  | Meltome23,72 | 22,335 |  | 2,482 | 3,134 | 544.5 |" in rows
    # The offsets are the rows' in the tables part: the tables' texts after the body text.
    part = document.text + "".join(f"\n\n{table.text}" for table in document.tables)
    assert part[pieces[0].char_start : pieces[0].char_end] == pieces[0].text
    for piece in pieces[1:]:
        rows_text = "\n".join(piece.text.splitlines()[2:])
        assert part[piece.char_start : piece.char_end] == rows_text


def test_a_caption_that_leaves_no_room_for_rows_is_a_table_chunk_of_its_own() -> None:
    document = with_tables(WITH_TABLES)
    caption, header = document.tables[1].caption, document.tables[1].markdown.splitlines()[0]
    # 120 fake tokens: the caption (10) and header row (56) take over half.
    chunks = chunk_document(document, FakeTokenizer(), 120, 0, "fake").chunks
    first, second, *_ = [c for c in chunks if c.kind == "table" and c.page_start == 11]
    assert first.text == caption and second.text.startswith(header)


def test_a_question_on_a_value_only_a_table_states_finds_the_tables_chunk(
    minilm: Embedder, tmp_path: Path
) -> None:
    """Table 2 alone gives the Meltome set's average sequence length (544.5 residues)."""
    document = with_tables(WITH_TABLES)
    store = ChunkStore(tmp_path / "lancedb")
    store.embed_papers([_chunks(document, minilm)], minilm)
    retriever = HybridRetriever(store, minilm, "tables", None, papers=[WITH_TABLES])
    top = retriever.search("What is the average sequence length of the Meltome data set?", 3)
    table = next(chunk for chunk in top if chunk.kind == "table")
    assert "544.5" in table.text and table.page_start == 11
    assert table.char_start >= len(document.text)


def test_a_hundred_column_table_is_capped_and_marked(tmp_path: Path) -> None:
    path = _pdf_with_table(tmp_path / "wide.pdf", rows=3, columns=100, width=1600)
    (table,) = parse_pdf(path, "wide", tables=True).tables
    assert (table.rows, table.columns, table.capped) == (3, 100, True)
    header, separator, *rows, note = table.markdown.splitlines()
    assert header == "| " + " | ".join(f"c0-{column}" for column in range(20)) + " |"
    assert separator.count("---") == MAX_TABLE_COLUMNS and len(rows) == 2
    assert note == "(table capped: 3 of 3 rows and 20 of 100 columns shown)"


@pytest.mark.parametrize("lines", [True, False], ids=["ruled", "unruled"])
def test_a_table_is_read_with_its_caption(tmp_path: Path, lines: bool) -> None:
    path = _pdf_with_table(tmp_path / "table.pdf", rows=4, columns=3, width=612, lines=lines)
    document = parse_pdf(path, "table", tables=True)
    (table,) = document.tables
    assert (table.page, table.label, table.rows, table.columns) == (1, "Table 1", 4, 3)
    assert table.caption == "Table 1: Growth of the strains in rich medium"
    assert table.markdown.splitlines()[2] == "| c1-0 | c1-1 | c1-2 |"
    chunks = chunk_document(document, FakeTokenizer(), 64, 0, "fake").chunks
    assert [chunk.kind for chunk in chunks if "Growth of the strains" in chunk.text] == ["table"]


@pytest.mark.parametrize("bad", ["sparse", "uncaptioned"])
def test_a_table_the_finder_cannot_read_stays_as_text(tmp_path: Path, bad: str) -> None:
    """A ruled grid with two of its twelve cells filled, and a table whose caption lies far
    above it: neither is kept, the text is as it was, and the caption is a caption chunk."""
    path = _pdf_with_table(
        tmp_path / f"{bad}.pdf",
        rows=4,
        columns=3,
        width=612,
        filled=2 if bad == "sparse" else None,
        caption_gap=10 if bad == "sparse" else 80,
    )
    document = parse_pdf(path, bad, tables=True)
    assert document.tables == []
    assert "grew the strains" in document.text
    (caption,) = document.captions
    assert (caption.kind, caption.label, caption.page) == ("table", "Table 1", 1)
    chunks = chunk_document(document, FakeTokenizer(), 64, 0, "fake").chunks
    assert [chunk.kind for chunk in chunks if "Growth of the strains" in chunk.text] == ["caption"]


def test_a_store_written_before_chunk_kinds_gets_them_when_papers_are_written_again(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    store = ChunkStore(tmp_path / "lancedb")
    chunks = chunk_document(with_tables(WITH_TABLES), fake_embedder.tokenizer, 64, 0, "f")
    store.embed_papers([chunks], fake_embedder)
    written = store.open_table(fake_embedder.embedder_id)
    assert written is not None
    written.drop_columns(["kind"])

    (result,) = store.embed_papers([chunks], fake_embedder)
    assert result.embedded == 0
    rows = store.chunk_rows(fake_embedder.embedder_id, ["chunk_id", "kind"]).to_pylist()
    kinds = {row["chunk_id"]: row["kind"] for row in rows}
    assert kinds == {chunk.chunk_id: chunk.kind for chunk in chunks.chunks}
    assert set(kinds.values()) == {"text", "caption", "table"}


def _chunks(document: PaperDocument, embedder: Embedder) -> PaperChunks:
    return chunk_document(
        document, embedder.tokenizer, embedder.max_chunk_tokens, 32, embedder.embedder_id
    )


def _pdf_with_table(
    path: Path,
    *,
    rows: int,
    columns: int,
    width: float,
    lines: bool = True,
    filled: int | None = None,
    caption_gap: float = 10,
) -> Path:
    """A page of prose, a table caption `caption_gap` points above a grid of `rows` by `columns`
    cells `c<row>-<col>` (the first `filled` only), ruled or not."""
    doc = pymupdf.open()
    page = doc.new_page(width=width, height=792)
    page.insert_textbox(pymupdf.Rect(72, 72, 540, 160), BODY, fontsize=10)
    page.insert_text((72, 190), "Table 1: Growth of the strains in rich medium", fontsize=10)
    left, top, cell_width, cell_height = 36.0, 192 + caption_gap, (width - 72) / columns, 20.0
    size = min(9.0, cell_width / 4)
    for row in range(rows):
        for column in range(columns):
            if filled is not None and row * columns + column >= filled:
                continue
            x, y = left + column * cell_width, top + row * cell_height
            page.insert_text((x + 1, y + cell_height - 6), f"c{row}-{column}", fontsize=size)
    if lines:
        right, bottom = left + columns * cell_width, top + rows * cell_height
        for row in range(rows + 1):
            y = top + row * cell_height
            page.draw_line((left, y), (right, y), width=0.5)
        for column in range(columns + 1):
            x = left + column * cell_width
            page.draw_line((x, top), (x, bottom), width=0.5)
    page.insert_textbox(pymupdf.Rect(72, 420, 540, 520), BODY, fontsize=10)
    doc.save(path)
    return path
