"""Section-aware chunking: exact slices, within the model's token limit, overlapping, complete."""

from __future__ import annotations

import itertools
import random
import time

import pytest

from litpipe.ingest.chunking import chunk_document
from litpipe.retrieval.embedder import Embedder
from litpipe.schemas import Chunk, PaperChunks, PaperDocument, Section
from litpipe_tests.conftest import FakeTokenizer

# One worker builds this module's shared fixtures (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group("test_chunking")

WORDS = [
    *("the", "protein", "binds", "a", "receptor", "in", "cells", "while", "expression", "of"),
    *("genes", "changes", "under", "stress", "heterogeneous", "unbelievably", "knockout"),
    *("phosphorylation", "CRISPR-Cas9", "results", "show", "that", "samples", "were"),
    "methylated",
]
# Full stops that do not end a sentence, and numbers with decimal points.
VOCABULARY = [*WORDS, "(p < 0.05)", "Fig. 3", "et al.", "e.g.", "12.5%"]


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(words)).capitalize() + "."


def synthetic_paper(seed: int = 7) -> PaperDocument:
    """Four sections over six pages; Results holds one 1000-word 'sentence' without a full stop
    inside, and Discussion is a single short sentence."""
    rng = random.Random(seed)
    bodies = {
        "Introduction": " ".join(sentence(rng, rng.randint(4, 45)) for _ in range(60)),
        "Methods": "\n\n".join(
            " ".join(sentence(rng, rng.randint(8, 30)) for _ in range(8)) for _ in range(6)
        ),
        "Results": " ".join(sentence(rng, rng.randint(5, 25)) for _ in range(20))
        + " "
        + " ".join(rng.choice(WORDS) for _ in range(1000))
        + ". "
        + " ".join(sentence(rng, 12) for _ in range(10)),
        "Discussion": "This short section fits in one chunk.",
    }
    text, sections = "", []
    for heading, body in bodies.items():
        text += heading + "\n"
        start = len(text)
        text += body
        sections.append(
            Section(heading=heading, char_start=start, char_end=len(text), page_start=1, page_end=1)
        )
        text += "\n\n"
    page_starts = [round(len(text) * page / 6) for page in range(6)]
    return PaperDocument(
        paper_id="bio.p1",
        source_path="p1.pdf",
        title="A synthetic paper",
        text=text,
        sections=sections,
        page_starts=page_starts,
        pages=6,
    )


@pytest.fixture(scope="module")
def paper() -> PaperDocument:
    return synthetic_paper()


@pytest.fixture(scope="module")
def minilm_chunks(paper: PaperDocument, minilm: Embedder) -> PaperChunks:
    return chunk_document(
        paper, minilm.tokenizer, minilm.max_chunk_tokens, 32, tokenizer_name=minilm.embedder_id
    )


def section_of(doc: PaperDocument, chunk: Chunk) -> Section:
    """The section a chunk lies in; the heading line before a section belongs to it."""
    return next(s for s in doc.sections if chunk.char_start < s.char_end)


def test_chunks_are_exact_slices_within_one_section(
    paper: PaperDocument, minilm_chunks: PaperChunks
) -> None:
    assert len(minilm_chunks.chunks) > 10
    for chunk in minilm_chunks.chunks:
        assert chunk.text == paper.text[chunk.char_start : chunk.char_end]
        section = section_of(paper, chunk)
        assert chunk.char_end <= section.char_end, f"{chunk.chunk_id} crosses {section.heading}"
        assert chunk.section == section.heading
    first_chunks = {chunk.section: chunk for chunk in reversed(minilm_chunks.chunks)}
    assert first_chunks["Methods"].text.startswith("Methods\n")


def test_every_chunk_fits_the_model_as_counted_by_the_real_tokenizer(
    minilm_chunks: PaperChunks, minilm: Embedder
) -> None:
    assert minilm.max_chunk_tokens == 254
    assert minilm_chunks.max_tokens == 254
    recounted = minilm.tokenizer.token_offsets([chunk.text for chunk in minilm_chunks.chunks])
    for chunk, offsets in zip(minilm_chunks.chunks, recounted, strict=True):
        assert chunk.n_tokens == len(offsets) <= minilm.max_chunk_tokens
    # Packing fills chunks, rather than cutting one per sentence.
    sizes = sorted(chunk.n_tokens for chunk in minilm_chunks.chunks)
    assert sizes[len(sizes) // 2] > 180


def test_consecutive_chunks_of_a_section_overlap(
    paper: PaperDocument, minilm_chunks: PaperChunks
) -> None:
    chunks = minilm_chunks.chunks
    pairs = [(a, b) for a, b in itertools.pairwise(chunks) if a.section == b.section]
    assert pairs
    for before, after in pairs:
        assert after.char_start < before.char_end, f"{before.chunk_id} / {after.chunk_id}"
        assert after.char_end > before.char_end  # each chunk moves forward
    for before, after in itertools.pairwise(chunks):
        if before.section != after.section:
            assert after.char_start >= before.char_end  # no overlap across sections


def test_every_non_whitespace_character_of_every_section_is_covered(
    paper: PaperDocument, minilm_chunks: PaperChunks
) -> None:
    covered = bytearray(len(paper.text))
    for chunk in minilm_chunks.chunks:
        covered[chunk.char_start : chunk.char_end] = b"\x01" * (chunk.char_end - chunk.char_start)
    for section in paper.sections:
        missing = [
            offset
            for offset in range(section.char_start, section.char_end)
            if not covered[offset] and not paper.text[offset].isspace()
        ]
        assert missing == [], f"{section.heading}: {paper.text[missing[0] : missing[0] + 40]!r}"


def test_a_sentence_longer_than_the_limit_is_split(
    paper: PaperDocument, minilm_chunks: PaperChunks
) -> None:
    results = [chunk for chunk in minilm_chunks.chunks if chunk.section == "Results"]
    inside_long_sentence = [chunk for chunk in results if "." not in chunk.text[:-1]]
    assert len(inside_long_sentence) >= 3, "the 1000-word sentence spans several chunks"


def test_pages_ids_and_metadata(paper: PaperDocument, minilm_chunks: PaperChunks) -> None:
    chunks = minilm_chunks.chunks
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))
    assert chunks[0].chunk_id == "bio.p1:0000" and chunks[12].chunk_id == "bio.p1:0012"
    # The embedder id names the chunks' tokenizer: the default backend's (int8) is part of it.
    assert minilm_chunks.tokenizer == "all-MiniLM-L6-v2.torch-int8"
    assert minilm_chunks.overlap_tokens == 32
    for chunk in chunks:
        assert chunk.page_start == paper.page_at(chunk.char_start)
        assert chunk.page_end == paper.page_at(chunk.char_end - 1)
        assert chunk.paper_id == "bio.p1"
    assert chunks[0].page_start == 1 and chunks[-1].page_end == 6
    assert any(chunk.page_end > chunk.page_start for chunk in chunks)
    assert chunks[-1].section == "Discussion"
    assert chunks[-1].text == "Discussion\nThis short section fits in one chunk."


def test_whole_sentences_are_kept_when_they_fit() -> None:
    text = "One two three. Four five six. Seven eight nine. Ten eleven twelve."
    doc = PaperDocument(paper_id="p", source_path="x", title="t", text=text)
    chunks = chunk_document(doc, FakeTokenizer(), 8, 4, "fake").chunks
    assert [chunk.text for chunk in chunks] == [
        "One two three. Four five six.",
        "Four five six. Seven eight nine.",
        "Seven eight nine. Ten eleven twelve.",
    ]
    assert chunks[0].section == "Text"  # a document without sections is one section


def test_without_overlap_chunks_tile_the_text() -> None:
    rng = random.Random(3)
    text = " ".join(sentence(rng, rng.randint(3, 30)) for _ in range(100))
    doc = PaperDocument(paper_id="p", source_path="x", title="t", text=text)
    chunks = chunk_document(doc, FakeTokenizer(), 40, 0, "fake").chunks
    for before, after in itertools.pairwise(chunks):
        assert before.char_end <= after.char_start
        assert text[before.char_end : after.char_start].strip() == ""
    assert all(chunk.n_tokens <= 40 for chunk in chunks)


def test_text_outside_every_section_joins_a_section_and_blank_sections_are_skipped() -> None:
    text = "Front matter here.\n\nIntro body.   \n\nMethods body."
    doc = PaperDocument(
        paper_id="p",
        source_path="x",
        title="t",
        text=text,
        sections=[
            Section(heading="Intro", char_start=20, char_end=31, page_start=1, page_end=1),
            Section(heading="Empty", char_start=31, char_end=36, page_start=1, page_end=1),
            Section(heading="Methods", char_start=36, char_end=49, page_start=1, page_end=1),
        ],
    )
    chunks = chunk_document(doc, FakeTokenizer(), 50, 8, "fake").chunks
    assert [(chunk.section, chunk.text) for chunk in chunks] == [
        ("Intro", "Front matter here.\n\nIntro body."),
        ("Methods", "Methods body."),
    ]


def test_an_empty_document_has_no_chunks() -> None:
    doc = PaperDocument(paper_id="p", source_path="x", title="t", text="  \n ")
    assert chunk_document(doc, FakeTokenizer(), 50, 8, "fake").chunks == []


def test_chunking_a_long_paper_is_fast(minilm: Embedder) -> None:
    # About 30 pages of text; a quadratic step would take seconds.
    doc = synthetic_paper(seed=11)
    long_doc = doc.model_copy(update={"text": doc.text * 5, "sections": [], "page_starts": []})
    chunk_document(long_doc, minilm.tokenizer, 254, 32, "minilm")  # warm-up
    started = time.perf_counter()
    chunks = chunk_document(long_doc, minilm.tokenizer, 254, 32, "minilm")
    elapsed = time.perf_counter() - started
    assert len(long_doc.text) > 100_000 and len(chunks.chunks) > 100
    assert elapsed < 1.5, f"{elapsed:.2f} s"
