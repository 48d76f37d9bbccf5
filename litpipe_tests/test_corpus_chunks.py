"""What the embedder is given from the nine bundled papers: chunks that the real MiniLM sees
whole, with no references, running headers or line-number columns in them."""

from __future__ import annotations

import itertools
import re

import pytest
import tokenizers

from litpipe.ingest.chunking import chunk_document
from litpipe.ingest.pdf import parse_pdf
from litpipe.retrieval.embedder import Embedder
from litpipe.schemas import PaperChunks
from litpipe_tests.bundled import CORPUS, PAPERS
from litpipe_tests.test_ingest_pdf import FURNITURE, REFERENCE_ENTRY

# One worker builds this module's shared fixtures (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group("test_corpus_chunks")


@pytest.fixture(scope="module")
def corpus_chunks(minilm: Embedder) -> list[tuple[dict, PaperChunks]]:
    chunked = []
    for truth in PAPERS:
        document = parse_pdf(CORPUS / truth["file"], truth["paper_id"])
        chunks = chunk_document(
            document,
            minilm.tokenizer,
            max_tokens=minilm.max_chunk_tokens,
            overlap_tokens=32,
            tokenizer_name=minilm.embedder_id,
        )
        chunked.append((truth, chunks))
    return chunked


def test_no_chunk_is_truncated_by_the_model(
    corpus_chunks: list[tuple[dict, PaperChunks]], minilm: Embedder
) -> None:
    # Re-count independently, special tokens included, as the model will see the text.
    tokenizer = tokenizers.Tokenizer.from_file(str(minilm.model_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    texts = [chunk.text for _, chunks in corpus_chunks for chunk in chunks.chunks]
    assert len(texts) > 500
    lengths = [len(encoding.ids) for encoding in tokenizer.encode_batch(texts)]
    assert max(lengths) <= minilm.max_seq_length == 256


def test_chunks_hold_no_references_headers_or_line_numbers(
    corpus_chunks: list[tuple[dict, PaperChunks]],
) -> None:
    for truth, chunks in corpus_chunks:
        for chunk in chunks.chunks:
            flat = " ".join(chunk.text.split())
            for furniture in [*FURNITURE, truth["running_header"]]:
                assert furniture not in flat, (chunk.chunk_id, furniture)
            assert truth["reference_phrase"] not in flat, chunk.chunk_id
            for paragraph in chunk.text.split("\n\n"):
                for pattern in REFERENCE_ENTRY:
                    assert not pattern.search(paragraph), (chunk.chunk_id, paragraph[:200])
            for run in re.finditer(r"(?:\b\d{1,4}\s+){2,}\d{1,4}\b", chunk.text):
                numbers = [int(n) for n in run.group(0).split()]
                assert not all(b == a + 1 for a, b in itertools.pairwise(numbers)), chunk.chunk_id
