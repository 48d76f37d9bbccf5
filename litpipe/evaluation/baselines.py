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
The graphs and PageRank are `litpipe.retrieval.centrality`'s, shared with the related-work
writer. Sentences are split with `litpipe.text.sentences`; terms are the stemmed,
stop-word-free terms of `litpipe.retrieval.text.tokenize`. The chosen sentences are returned in
rank order (lead: reading order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from litpipe.extractive.related_work import count_words
from litpipe.retrieval.centrality import lexrank_similarity, pagerank, textrank_similarity
from litpipe.retrieval.text import tokenize
from litpipe.text import sentences


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


def _ranked(
    pool: list[str], similarity: Callable[[list[list[str]]], NDArray[np.float64]]
) -> list[str]:
    terms = [tokenize(sentence) for sentence in pool]
    scores = pagerank(similarity(terms))
    # Ties go to the earlier sentence: a stable order over the documents as given.
    order = sorted(range(len(pool)), key=lambda i: (-scores[i], i))
    return [pool[i] for i in order]


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
