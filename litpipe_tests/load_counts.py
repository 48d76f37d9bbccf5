"""Counts of what a question must not pay for again: embedding models loaded, embedder backends
made, BM25 indexes built (and loaded), LanceDB indexes created. Counted by wrapping the calls
that do each, so a cache that stops working shows up as a count that grows per question.
`litpipe_tests/test_collection_answer_loads.py` and `benchmarks/collection_answer.py` use it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, fields, replace
from typing import Any
from unittest import mock

import sentence_transformers
from lancedb.table import LanceTable

from litpipe.retrieval.bm25 import BM25Index
from litpipe.retrieval.embedder import Embedder

# LanceDB's calls that build an index of a table: vector, scalar and full-text.
_LANCE_INDEX_CALLS = ("create_index", "create_scalar_index", "create_fts_index")


@dataclass
class LoadCounts:
    models: int = 0  # sentence-transformers models constructed (read from disk)
    backends: int = 0  # embedder backends made from a model (torch, int8, ONNX, model2vec)
    bm25_builds: int = 0  # BM25 indexes built from chunk texts
    bm25_loads: int = 0  # saved BM25 indexes looked up on disk (a load, or none saved yet)
    lance_indexes: int = 0  # LanceDB index builds asked for

    def copy(self) -> LoadCounts:
        return replace(self)

    def since(self, earlier: LoadCounts) -> LoadCounts:
        """What was counted after `earlier` (a `copy` of these counts) was taken."""
        return LoadCounts(
            **{
                field.name: getattr(self, field.name) - getattr(earlier, field.name)
                for field in fields(self)
            }
        )


@contextmanager
def counting_loads() -> Iterator[LoadCounts]:
    """Counts, while open, every load and build `LoadCounts` names, in this process."""
    counts = LoadCounts()

    def counted(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            setattr(counts, name, getattr(counts, name) + 1)
            return call(*args, **kwargs)

        return wrapper

    load_saved = BM25Index.load.__func__  # type: ignore[attr-defined]
    with ExitStack() as patches:
        patches.enter_context(
            mock.patch.object(
                sentence_transformers.SentenceTransformer,
                "__init__",
                counted("models", sentence_transformers.SentenceTransformer.__init__),
            )
        )
        patches.enter_context(
            mock.patch.object(
                Embedder, "_load_backend", counted("backends", Embedder._load_backend)
            )
        )
        patches.enter_context(
            mock.patch.object(BM25Index, "__init__", counted("bm25_builds", BM25Index.__init__))
        )
        patches.enter_context(
            mock.patch.object(BM25Index, "load", classmethod(counted("bm25_loads", load_saved)))
        )
        for call in _LANCE_INDEX_CALLS:
            patches.enter_context(
                mock.patch.object(
                    LanceTable, call, counted("lance_indexes", getattr(LanceTable, call))
                )
            )
        yield counts
