"""Maximal Marginal Relevance (Carbonell & Goldstein, 1998): pick, one at a time, the candidate
that best trades relevance to the query against similarity to what is already picked, so that
near-duplicate chunks (an abstract repeated in the introduction) do not fill the top results."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

DEFAULT_MMR_LAMBDA = 0.7


def mmr(
    query_vector: NDArray[np.float32],
    candidate_ids: list[str],
    vectors: NDArray[np.float32],
    lambda_: float = DEFAULT_MMR_LAMBDA,
    limit: int = 10,
    relevance: NDArray[np.float64] | None = None,
) -> list[str]:
    """Up to `limit` of `candidate_ids` (row i of `vectors` is candidate i's L2-normalised
    vector) in MMR order: lambda_ = 1 is pure relevance, 0 pure diversity. Relevance is the
    cosine to `query_vector` unless given (a fused score in [0, 1], so that diversification keeps
    what BM25 contributed). Ties go to the earlier candidate: a tie keeps the incoming order."""
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"lambda_ must lie in [0, 1], not {lambda_}")
    if len(candidate_ids) != len(vectors):
        raise ValueError(f"{len(candidate_ids)} candidates but {len(vectors)} vectors")
    if not candidate_ids or limit < 1:
        return []
    matrix = np.asarray(vectors, dtype=np.float32)
    scores: NDArray[np.floating]
    if relevance is None:
        scores = matrix @ np.asarray(query_vector, dtype=np.float32)
    elif len(relevance) != len(candidate_ids):
        raise ValueError(f"{len(candidate_ids)} candidates but {len(relevance)} relevance scores")
    else:
        scores = relevance
    # Highest similarity of each candidate to any already picked one; -inf marks picked ones.
    redundancy = np.full(len(candidate_ids), -np.inf, dtype=np.float32)
    picked: list[int] = []
    available = np.ones(len(candidate_ids), dtype=bool)
    while len(picked) < min(limit, len(candidate_ids)):
        penalty = np.where(np.isfinite(redundancy), redundancy, 0.0)
        objective = lambda_ * scores - (1.0 - lambda_) * penalty
        objective[~available] = -np.inf
        best = int(np.argmax(objective))
        picked.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, matrix @ matrix[best])
    return [candidate_ids[index] for index in picked]
