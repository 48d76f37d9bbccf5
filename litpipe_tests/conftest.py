"""Shared fixtures: a fast deterministic fake embedder, a tiny real model, the packaged MiniLM."""

from __future__ import annotations

import hashlib
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy
from numpy.typing import NDArray

from litpipe.cli import main
from litpipe.retrieval.embedder import Embedder
from litpipe.schemas import RunReport
from litpipe_tests.bundled import CORPUS, PDFS_BY_SIZE
from litpipe_tests.tiny_model import build_tiny_model

# The local OpenAI-compatible stub (`stub_llm`) and the real llama.cpp server (`llama_server`):
# their fixtures serve every test module.
pytest_plugins = ("litpipe_tests.stub_llm", "litpipe_tests.llama_server")


class FakeTokenizer:
    """Words of at most six characters and single punctuation marks: wordpiece-like enough that
    long words become several tokens, and instant."""

    _TOKEN = re.compile(r"\w{1,6}|[^\w\s]")

    def token_offsets(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        return [[match.span() for match in self._TOKEN.finditer(text)] for text in texts]


class FakeEmbedder:
    """Bag of words hashed into 32 dimensions, L2-normalised; records every `encode` call."""

    embedder_id = "fake-hash-32"
    dimension = 32
    max_seq_length = 66
    max_chunk_tokens = 64

    def __init__(self) -> None:
        self.tokenizer = FakeTokenizer()
        self.encode_calls: list[list[str]] = []

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        self.encode_calls.append(list(texts))
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest())
                vectors[row, bucket % self.dimension] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)

    @property
    def embedded_texts(self) -> int:
        return sum(len(call) for call in self.encode_calls)


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The default embedder; its tokenizer loads in milliseconds, its model on first encode."""
    return Embedder("all-MiniLM-L6-v2")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local sentence-transformers folder for end-to-end runs through the real loading code."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def bundled_pdfs_home(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    """A home where `litpipe run` ingested the nine bundled PDFs into `biology-cc-by` with the
    tiny model, once per worker (20 s idle, near 100 s on a loaded machine): the modules that
    read it share one xdist group (BUNDLED_PDFS_GROUP), and each test works on a copy."""
    home = tmp_path_factory.mktemp("bundled-pdfs") / "home"
    run = ["run", str(CORPUS), "--collection", CORPUS.name, "--home", str(home)]
    assert main([*run, "--embedder", str(tiny_model)]) == 0
    report = RunReport.model_validate_json(
        (home / "outputs" / CORPUS.name / "report.json").read_text()
    )
    assert report.papers == len(PDFS_BY_SIZE)
    return home


def _sqlite_without_fsync(connection: object, _record: object) -> None:
    if isinstance(connection, sqlite3.Connection):
        connection.execute("PRAGMA synchronous=OFF")


@pytest.fixture(scope="session", autouse=True)
def dagster_sqlite_without_fsync() -> Iterator[None]:
    """Dagster's SQLite storages commit every event of every step on its own connection, and
    each commit waits for the disk: a third of an in-process `litpipe run` (a two-row table:
    16 s, 11 s without, on a busy 2-core machine). The wait guards the last commits against a
    power cut, which no test is about; a killed process loses nothing either way (SQLite has
    handed each commit to the OS), and the child processes a test starts keep the default."""
    sqlalchemy.event.listen(sqlalchemy.Engine, "connect", _sqlite_without_fsync)
    yield
    sqlalchemy.event.remove(sqlalchemy.Engine, "connect", _sqlite_without_fsync)


@pytest.fixture(autouse=True)
def absl_logs_to_the_real_stderr() -> None:
    """rouge-score imports absl, whose logging handler keeps the sys.stderr of that moment
    (pytest's capture file). Every Dagster run configures logging (`dictConfig`), which closes
    all handlers, and absl's then closes its stream unless it is the current sys.stderr: under
    `capsys` it is not, the capture file is closed and every later test fails with "I/O
    operation on closed file". Pointed at the real stderr, which absl never closes, it is
    harmless. (Outside pytest, sys.stderr is the real one.)"""
    from absl import logging as absl_logging

    absl_logging.get_absl_handler().python_handler.stream = sys.__stderr__
