"""Classic extractive baselines for multi-document summaries: lead, LexRank and TextRank.

Each takes the source documents (for related work: the cited abstracts, in the table's order)
and a word budget, and returns whole sentences, never exceeding the budget: sentences are taken
best first and one that does not fit in the words left is passed over for a shorter one. Words
are counted as the related-work writer counts them (`count_words`), so every system compared
under the same budget gets the same number of words.

- lead: the documents' sentences in reading order, the first sentence of each document first
  (round-robin), as lead is used for multi-document sets: every document gets its opening line.
- LexRank (Erkan & Radev 2004), continuous: cosine similarity of TF-IDF sentence vectors as
  edge weights, edges below 0.1 dropped (weak shared terms are noise, not centrality), PageRank
  with damping 0.85.
- TextRank (Mihalcea & Tarau 2004): similarity = shared words / (log |s1| + log |s2|), weighted
  PageRank with damping 0.85; lengths are counted plus one so a one-term sentence does not
  divide by zero.
Sentences are split with `litpipe.agents.extractive.sentences`; terms are the stemmed,
stop-word-free terms of `litpipe.retrieval.text.tokenize`. The chosen sentences are returned in
rank order (lead: reading order).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from litpipe.agents.extractive import sentences
from litpipe.agents.related_work import count_words
from litpipe.retrieval.text import tokenize

DAMPING = 0.85
LEXRANK_THRESHOLD = 0.1
_ITERATIONS = 100
_TOLERANCE = 1e-8


def split_documents(documents: Sequence[str]) -> list[list[str]]:
    """Each document's sentences, each on one line."""
    return [[" ".join(span.text.split()) for span in sentences(doc)] for doc in documents]


def within_budget(ranked: Sequence[str], max_words: int) -> list[str]:
    """`ranked` sentences best first while they fit in `max_words`; one too long for the words
    left is passed over so a shorter one further down may still fill the budget."""
    chosen: list[str] = []
    left = max_words
    for sentence in ranked:
        words = count_words(sentence)
        if 0 < words <= left:
            chosen.append(sentence)
            left -= words
    return chosen


def lead(documents: Sequence[str], max_words: int) -> list[str]:
    """First sentences first: every document's first sentence (in the documents' order), then
    every second sentence, and so on."""
    split = split_documents(documents)
    depth = max((len(doc) for doc in split), default=0)
    ranked = [doc[i] for i in range(depth) for doc in split if i < len(doc)]
    return within_budget(ranked, max_words)


def pagerank(weights: NDArray[np.float64], damping: float = DAMPING) -> NDArray[np.float64]:
    """Stationary scores of a weighted graph by power iteration; a node without edges spreads
    its score evenly (the usual dangling-node rule)."""
    n = weights.shape[0]
    if n == 0:
        return np.zeros(0)
    sums = weights.sum(axis=1, keepdims=True)
    transition = np.where(sums > 0, weights / np.where(sums > 0, sums, 1.0), 1.0 / n)
    scores = np.full(n, 1.0 / n)
    for _ in range(_ITERATIONS):
        updated = (1 - damping) / n + damping * transition.T @ scores
        if np.abs(updated - scores).sum() < _TOLERANCE:
            return updated
        scores = updated
    return scores


def _ranked(
    pool: list[str], similarity: Callable[[list[list[str]]], NDArray[np.float64]]
) -> list[str]:
    terms = [tokenize(sentence) for sentence in pool]
    scores = pagerank(similarity(terms))
    # Ties go to the earlier sentence: a stable order over the documents as given.
    order = sorted(range(len(pool)), key=lambda i: (-scores[i], i))
    return [pool[i] for i in order]


def lexrank_similarity(terms: list[list[str]]) -> NDArray[np.float64]:
    """Cosine of TF-IDF vectors (IDF over the sentences), edges below the threshold dropped."""
    n = len(terms)
    frequency = Counter(term for sentence in terms for term in set(sentence))
    idf = {term: math.log(n / count) + 1.0 for term, count in frequency.items()}
    vocabulary = {term: i for i, term in enumerate(sorted(idf))}
    vectors = np.zeros((n, len(vocabulary)))
    for row, sentence in enumerate(terms):
        for term, count in Counter(sentence).items():
            vectors[row, vocabulary[term]] = count * idf[term]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    cosine = unit @ unit.T
    np.fill_diagonal(cosine, 0.0)
    return np.where(cosine >= LEXRANK_THRESHOLD, cosine, 0.0)


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


def lexrank(documents: Sequence[str], max_words: int) -> list[str]:
    pool = [s for doc in split_documents(documents) for s in doc]
    return within_budget(_ranked(pool, lexrank_similarity), max_words)


def textrank(documents: Sequence[str], max_words: int) -> list[str]:
    pool = [s for doc in split_documents(documents) for s in doc]
    return within_budget(_ranked(pool, textrank_similarity), max_words)


BASELINES: dict[str, Callable[[Sequence[str], int], list[str]]] = {
    "lead": lead,
    "lexrank": lexrank,
    "textrank": textrank,
}
