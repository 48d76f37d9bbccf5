"""MMR keeps near-duplicates out of the top results."""

from __future__ import annotations

import numpy as np
import pytest

from litpipe.retrieval.mmr import mmr


def _normalised(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)).astype(np.float32)


def _near_duplicate_pairs(ids: list[str], vectors: dict[str, np.ndarray]) -> int:
    return sum(
        float(vectors[first] @ vectors[second]) > 0.98
        for position, first in enumerate(ids)
        for second in ids[position + 1 :]
    )


def test_mmr_removes_near_duplicates_from_the_top_ten() -> None:
    rng = np.random.default_rng(7)
    dimension, topics, copies = 64, 12, 3
    query = _normalised(rng.normal(size=dimension))
    ids, rows = [], []
    for topic in range(topics):
        # Topic directions less and less aligned with the query; three near-copies of each.
        direction = _normalised(rng.normal(size=dimension))
        base = _normalised(query * (1.0 - topic / topics) + direction)
        for copy in range(copies):
            ids.append(f"t{topic}c{copy}")
            rows.append(_normalised(base + rng.normal(scale=0.01, size=dimension)))
    vectors = np.stack(rows)
    by_id = dict(zip(ids, vectors, strict=True))
    by_relevance = [ids[index] for index in np.argsort(-(vectors @ query), kind="stable")]

    plain_top = by_relevance[:10]
    diverse_top = mmr(query, by_relevance, vectors[[ids.index(i) for i in by_relevance]], 0.5, 10)

    assert _near_duplicate_pairs(plain_top, by_id) >= 6
    assert _near_duplicate_pairs(diverse_top, by_id) == 0
    assert len(set(diverse_top)) == 10
    # The most relevant candidate still comes first.
    assert diverse_top[0] == by_relevance[0]


def test_lambda_one_keeps_relevance_order_and_given_relevance_wins() -> None:
    vectors = _normalised(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]]))
    query = _normalised(np.array([1.0, -0.1]))
    assert mmr(query, ["a", "b", "c"], vectors, 1.0, 3) == ["a", "b", "c"]
    relevance = np.array([0.0, 0.5, 1.0])
    assert mmr(query, ["a", "b", "c"], vectors, 1.0, 2, relevance=relevance) == ["c", "b"]


def test_edge_cases() -> None:
    assert mmr(np.ones(2, dtype=np.float32), [], np.empty((0, 2)), 0.5, 5) == []
    vectors = _normalised(np.eye(2))
    assert mmr(np.ones(2, dtype=np.float32), ["a", "b"], vectors, 0.5, 5) == ["a", "b"]
    with pytest.raises(ValueError):
        mmr(np.ones(2, dtype=np.float32), ["a"], vectors, 0.5, 1)
    with pytest.raises(ValueError):
        mmr(np.ones(2, dtype=np.float32), ["a", "b"], vectors, 1.5, 1)
