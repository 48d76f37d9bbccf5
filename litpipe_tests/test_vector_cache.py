"""The vector cache: a text is encoded once per embedder, by any step or process of a home;
vectors come back as encoded; a cache that cannot be used costs time, never a result."""

from __future__ import annotations

import logging
import multiprocessing
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from litpipe.retrieval.support import support_scores
from litpipe.retrieval.vector_cache import CachedEncoder, VectorCache, _key
from litpipe_tests.conftest import FakeEmbedder

TEXTS = [
    "Insulin resistance rises with age in the cohort.",
    "The vaccine reduced hospital admissions by a third.",
    "Knockout mice lacked the receptor entirely.",
]


def _cached(folder: Path, embedder: FakeEmbedder) -> CachedEncoder:
    return CachedEncoder(embedder, VectorCache(folder, embedder.embedder_id))


def test_a_text_is_encoded_once_in_a_process_and_by_the_next_one(tmp_path: Path) -> None:
    first = FakeEmbedder()
    encoder = _cached(tmp_path, first)
    vectors = encoder.encode([*TEXTS, TEXTS[0]])
    encoder.encode(TEXTS[1:])
    assert first.embedded_texts == len(TEXTS)
    np.testing.assert_array_equal(vectors[0], vectors[3])
    np.testing.assert_allclose(vectors[:3], FakeEmbedder().encode(TEXTS))

    # Another process of the same home (a new encoder on the same folder) encodes only news.
    second = FakeEmbedder()
    again = _cached(tmp_path, second).encode([*TEXTS, "A new sentence."])
    assert second.encode_calls == [["A new sentence."]]
    np.testing.assert_allclose(again[:3], vectors[:3])


def test_another_embedder_does_not_read_the_first_ones_vectors(tmp_path: Path) -> None:
    _cached(tmp_path, FakeEmbedder()).encode(TEXTS)
    other = FakeEmbedder()
    other.embedder_id = "another-model"
    _cached(tmp_path, other).encode(TEXTS)
    assert other.embedded_texts == len(TEXTS)


def test_known_vectors_are_used_as_given_and_not_encoded(tmp_path: Path) -> None:
    embedder = FakeEmbedder()
    stored = np.eye(embedder.dimension, dtype=np.float32)[0]
    encoder = CachedEncoder(embedder, None, known={TEXTS[0]: stored})
    vectors = encoder.encode(TEXTS[:2])
    np.testing.assert_array_equal(vectors[0], stored)
    assert embedder.encode_calls == [[TEXTS[1]]]


def test_support_scores_are_the_same_through_the_cache(tmp_path: Path) -> None:
    claims = [(TEXTS[0], [TEXTS[0] + " " + TEXTS[1]]), (TEXTS[2], [TEXTS[1]])]
    plain = support_scores(claims, FakeEmbedder())
    _cached(tmp_path, FakeEmbedder()).encode([TEXTS[1]])
    through_cache = support_scores(claims, _cached(tmp_path, FakeEmbedder()))
    assert through_cache == plain


def test_an_unreadable_cache_is_a_miss_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = FakeEmbedder()
    cache = VectorCache(tmp_path, embedder.embedder_id)
    cache.path.write_bytes(b"this is not a SQLite database, it was truncated by a crash" * 20)
    with caplog.at_level(logging.WARNING):
        vectors = CachedEncoder(embedder, cache).encode(TEXTS)
    np.testing.assert_allclose(vectors, FakeEmbedder().encode(TEXTS))
    assert "vector cache" in caplog.text and "encoding without it" in caplog.text


def _fill(folder: str, start: int) -> None:
    embedder = FakeEmbedder()
    texts = [f"sentence number {number}" for number in range(start, start + 400)]
    _cached(Path(folder), embedder).encode(texts)


def test_processes_writing_one_cache_at_once_lose_nothing(tmp_path: Path) -> None:
    # Overlapping ranges: both write 200 of the same texts.
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_fill, args=(str(tmp_path), start)) for start in (0, 200)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    reader = FakeEmbedder()
    texts = [f"sentence number {number}" for number in range(600)]
    vectors = _cached(tmp_path, reader).encode(texts)
    assert reader.embedded_texts == 0
    np.testing.assert_allclose(vectors, FakeEmbedder().encode(texts))


def test_many_texts_are_encoded_in_slices_each_kept_as_it_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("litpipe.retrieval.vector_cache._ENCODE_SLICE", 3)
    embedder = FakeEmbedder()
    texts = [f"claim {number}" for number in range(7)]
    vectors = _cached(tmp_path, embedder).encode(texts)
    assert [len(call) for call in embedder.encode_calls] == [3, 3, 1]
    np.testing.assert_allclose(vectors, FakeEmbedder().encode(texts))
    later = FakeEmbedder()
    _cached(tmp_path, later).encode(texts)
    assert later.embedded_texts == 0


class UnloadableEmbedder:
    """An embedder whose model is never loaded: reading its vectors' length or encoding fails,
    as a step that loads no model must not need either."""

    embedder_id = FakeEmbedder.embedder_id

    @property
    def dimension(self) -> int:
        raise AssertionError("the model was loaded to read the vectors' length")

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        raise AssertionError(f"the model was loaded to encode {texts}")


def test_texts_encoded_before_come_back_without_loading_the_model(tmp_path: Path) -> None:
    # The night's relationship analysis encodes the insights; the digest's process reads them.
    encoded = _cached(tmp_path, FakeEmbedder()).encode(TEXTS)
    unloaded = CachedEncoder(UnloadableEmbedder(), VectorCache(tmp_path, FakeEmbedder.embedder_id))
    np.testing.assert_array_equal(unloaded.encode(TEXTS[::-1]), encoded[::-1])


def test_a_cache_from_before_the_length_was_recorded_is_read_once_a_vector_is_kept(
    tmp_path: Path,
) -> None:
    embedder = FakeEmbedder()
    cache = VectorCache(tmp_path, embedder.embedder_id)
    with sqlite3.connect(cache.path) as db:  # as older litpipe wrote it: vectors, no length
        db.execute("CREATE TABLE vectors (key BLOB PRIMARY KEY, vector BLOB) STRICT")
        db.executemany(
            "INSERT INTO vectors VALUES (?, ?)",
            [
                (_key(text), vector.tobytes())
                for text, vector in zip(TEXTS, embedder.encode(TEXTS), strict=True)
            ],
        )
    assert cache.get(TEXTS) == {}
    cache.put({"Another sentence.": embedder.encode(["Another sentence."])[0]})
    found = cache.get(TEXTS)
    assert list(found) == TEXTS
    np.testing.assert_array_equal(np.stack(list(found.values())), embedder.encode(TEXTS))
