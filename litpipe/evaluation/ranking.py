"""Ranking metrics over graded relevance judgements (qrels: document id to grade, 0 = not
relevant), as BEIR computes them with pytrec_eval."""

from __future__ import annotations

import math


def ndcg_at_k(ranked_ids: list[str], qrels: dict[str, int], k: int) -> float:
    """Normalised discounted cumulative gain at `k`, with the grade as the gain (linear, as
    pytrec_eval's ndcg_cut): 0 when the query has no relevant document."""
    gains = [qrels.get(doc_id, 0) for doc_id in ranked_ids[:k]]
    dcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains))
    ideal = sorted((grade for grade in qrels.values() if grade > 0), reverse=True)[:k]
    idcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked_ids: list[str], qrels: dict[str, int], k: int) -> float:
    """Share of the relevant documents found in the first `k`: 0 when none is relevant."""
    relevant = {doc_id for doc_id, grade in qrels.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked_ids[:k])) / len(relevant)
