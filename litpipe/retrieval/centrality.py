"""Sentence centrality: graphs of sentences weighted by shared terms, scored by PageRank.

Used by the extractive baselines (`litpipe.evaluation.baselines`: LexRank, TextRank) and by the
related-work writer's offline engine (`litpipe.agents.related_work`), which biases the walk
towards the research idea (query-focused LexRank, Otterbacher et al. 2005), and by the offline
synthesis writers (`litpipe.agents.synthesis`), which bias it towards the collection's theme.

- `lexrank_similarity` (Erkan & Radev 2004, continuous): cosine of TF-IDF sentence vectors, IDF
  over the sentences, edges below 0.1 dropped (weak shared terms are noise, not centrality).
- `textrank_similarity` (Mihalcea & Tarau 2004): shared words / (log |s1| + log |s2|); lengths
  are counted plus one so that a one-term sentence does not divide by zero.
- `pagerank`: power iteration with damping 0.85; the walk restarts uniformly, or from a given
  distribution (personalised PageRank), which is how a query biases centrality.
- `query_focused_lexrank` (Otterbacher et al. 2005): LexRank whose walk restarts at each
  sentence in proportion to its TF-IDF cosine with the query.
- `closest_to_centroid`: the sentences nearest the TF-IDF centroid of all (MEAD's centroid
  score, Radev et al. 2004), in time linear in the sentences: the bounded sample a caller ranks
  with LexRank when the sentences are too many for its quadratic graph.

Sentences come in as lists of terms (`litpipe.retrieval.text.tokenize`), so every caller counts
the same stemmed, stop-word-free terms.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
from numpy.typing import NDArray

DAMPING = 0.85
LEXRANK_THRESHOLD = 0.1
# A collection's (or a cluster's) most central sentence is looked for among at most this many
# of its sentences, those `closest_to_centroid`: LexRank's graph is quadratic in its sentences,
# and a collection may hold thousands of papers.
CENTRAL_SAMPLE = 200
_ITERATIONS = 100
_TOLERANCE = 1e-8


def pagerank(
    weights: NDArray[np.float64],
    damping: float = DAMPING,
    restart: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Stationary scores of a weighted graph by power iteration. The walk restarts uniformly,
    or from `restart` (a distribution over the nodes) to bias the scores towards its nodes; a
    node without edges spreads its score evenly (the usual dangling-node rule)."""
    n = weights.shape[0]
    if n == 0:
        return np.zeros(0)
    sums = weights.sum(axis=1, keepdims=True)
    transition = np.where(sums > 0, weights / np.where(sums > 0, sums, 1.0), 1.0 / n)
    jump = (1 - damping) / n if restart is None else (1 - damping) * restart
    scores = np.full(n, 1.0 / n)
    for _ in range(_ITERATIONS):
        updated = jump + damping * transition.T @ scores
        if np.abs(updated - scores).sum() < _TOLERANCE:
            return updated
        scores = updated
    return scores


def tfidf_cosines(terms: list[list[str]], queries: list[list[str]]) -> NDArray[np.float64]:
    """Cosine of each query's TF-IDF vector (rows) with each sentence's (columns), IDF over the
    sentences `terms`; a query's terms that no sentence holds carry no weight."""
    n = len(terms)
    frequency = Counter(term for sentence in terms for term in set(sentence))
    idf = {term: math.log(n / count) + 1.0 for term, count in frequency.items()}
    vocabulary = {term: i for i, term in enumerate(sorted(idf))}

    def unit_vectors(texts: list[list[str]]) -> NDArray[np.float64]:
        vectors = np.zeros((len(texts), len(vocabulary)))
        for row, text in enumerate(texts):
            for term, count in Counter(text).items():
                if term in vocabulary:
                    vectors[row, vocabulary[term]] = count * idf[term]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)

    return unit_vectors(queries) @ unit_vectors(terms).T


def lexrank_similarity(terms: list[list[str]]) -> NDArray[np.float64]:
    """Cosine of TF-IDF vectors (IDF over the sentences), edges below the threshold dropped."""
    cosine = tfidf_cosines(terms, terms)
    np.fill_diagonal(cosine, 0.0)
    return np.where(cosine >= LEXRANK_THRESHOLD, cosine, 0.0)


def query_focused_lexrank(terms: list[list[str]], query: list[str]) -> NDArray[np.float64]:
    """LexRank scores of the sentences, the walk restarting at each in proportion to its TF-IDF
    cosine with `query`: a sentence scores high when it says what the others say and is close to
    the query. A query sharing no term with any sentence leaves plain LexRank."""
    if not terms:
        return np.zeros(0)
    relevance = tfidf_cosines(terms, [query])[0]
    restart = relevance / relevance.sum() if relevance.sum() > 0 else None
    return pagerank(lexrank_similarity(terms), restart=restart)


def closest_to_centroid(terms: list[list[str]], count: int) -> list[int]:
    """The indices (in order) of the `count` sentences whose TF-IDF vectors (IDF over the
    sentences) have the largest dot product with the sum of all the others': the most central by
    continuous degree, computed against one centroid instead of every pair."""
    if len(terms) <= count:
        return list(range(len(terms)))
    frequency = Counter(term for sentence in terms for term in set(sentence))
    idf = {term: math.log(len(terms) / found) + 1.0 for term, found in frequency.items()}
    vectors: list[dict[str, float]] = []
    total: dict[str, float] = {}
    for sentence in terms:
        weights = {term: found * idf[term] for term, found in Counter(sentence).items()}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        vector = {term: w / norm for term, w in weights.items()}
        vectors.append(vector)
        for term, w in vector.items():
            total[term] = total.get(term, 0.0) + w
    # Each vector's product with the sum less its product with itself: its degree centrality.
    degree = [
        sum(w * total[term] for term, w in vector.items()) - sum(w * w for w in vector.values())
        for vector in vectors
    ]
    return sorted(sorted(range(len(terms)), key=lambda i: (-degree[i], i))[:count])


def textrank_similarity(terms: list[list[str]]) -> NDArray[np.float64]:
    """Mihalcea & Tarau's overlap: |shared words| / (log |s1| + log |s2|)."""
    n = len(terms)
    sets = [set(sentence) for sentence in terms]
    weights = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            shared = len(sets[i] & sets[j])
            norm = math.log(len(terms[i]) + 1) + math.log(len(terms[j]) + 1)
            if shared and norm > 0:
                weights[i, j] = weights[j, i] = shared / norm
    return weights
