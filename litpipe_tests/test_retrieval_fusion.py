"""Reciprocal Rank Fusion against hand-computed scores."""

from __future__ import annotations

import pytest

from litpipe.retrieval.fusion import reciprocal_rank_fusion


def test_scores_are_sums_of_reciprocal_ranks() -> None:
    fused = dict(reciprocal_rank_fusion({"bm25": ["a", "b", "c"], "dense": ["b", "d"]}, k=10))
    assert fused["a"] == pytest.approx(1 / 11)
    assert fused["b"] == pytest.approx(1 / 12 + 1 / 11)
    assert fused["c"] == pytest.approx(1 / 13)
    assert fused["d"] == pytest.approx(1 / 12)


def test_order_is_by_fused_score_and_ties_keep_first_seen_order() -> None:
    fused = reciprocal_rank_fusion({"bm25": ["a", "b"], "dense": ["b", "a", "c"]}, k=60)
    # a and b both score 1/61 + 1/62; a was met first.
    assert [item for item, _ in fused] == ["a", "b", "c"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[2][1] == pytest.approx(1 / 63)


def test_weights_scale_each_ranking() -> None:
    fused = reciprocal_rank_fusion(
        {"bm25": ["a", "b"], "dense": ["b", "a"]}, k=0, weights={"dense": 3.0}
    )
    # a: 1/1 + 3/2 = 2.5; b: 1/2 + 3/1 = 3.5.
    assert fused == [("b", pytest.approx(3.5)), ("a", pytest.approx(2.5))]


def test_empty_rankings_and_negative_k() -> None:
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"bm25": []}) == []
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"bm25": ["a"]}, k=-1)
