"""Nearest neighbours among the rows of a matrix (unit vectors, dense or sparse), by dot
product, in blocks: the similarities of a block of rows with every row at once (one matrix
product), so memory stays at `block_rows` x rows floats whatever the number of rows."""

from __future__ import annotations

import math
from collections.abc import Sequence, Set

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import csr_array, sparray

# 256 rows against 25,000 (5,000 papers' insights): 25 MB of float32 similarities at a time (and
# twice as much for their ranking): 25,000 insights take about 25 s and 140 MB on two cores.
DEFAULT_BLOCK_ROWS = 256


def nearest_neighbours(
    vectors: NDArray[np.float32] | sparray,
    groups: NDArray[np.int64],
    neighbours: int,
    block_rows: int = DEFAULT_BLOCK_ROWS,
) -> list[tuple[float, int, int]]:
    """(similarity, i, j) for each row i and each of the `neighbours` rows j nearest to it,
    never a row of its own group (`groups`, one code per row; a row is never its own
    neighbour): at most rows x `neighbours` triples."""
    rows = vectors.shape[0]
    kept = min(neighbours, rows - 1)
    if kept < 1:
        return []
    found: list[tuple[float, int, int]] = []
    for start in range(0, rows, block_rows):
        stop = min(start + block_rows, rows)
        similarity = vectors[start:stop] @ vectors.T
        if isinstance(similarity, sparray):
            similarity = similarity.toarray()
        similarity = np.asarray(similarity, dtype=np.float32)
        similarity[groups[start:stop, None] == groups[None, :]] = -np.inf
        similarity[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        nearest = np.argpartition(-similarity, kept - 1, axis=1)[:, :kept]
        sources = np.repeat(np.arange(start, stop), kept)
        targets = nearest.ravel()
        scores = similarity[sources - start, targets]
        allowed = np.isfinite(scores)
        found += zip(
            scores[allowed].tolist(),
            sources[allowed].tolist(),
            targets[allowed].tolist(),
            strict=True,
        )
    return found


def nearest_pairs(
    vectors: NDArray[np.float32],
    groups: NDArray[np.int64],
    neighbours: int,
    block_rows: int = DEFAULT_BLOCK_ROWS,
) -> list[tuple[int, int]]:
    """The pairs (i, j), i < j, such that j is among the `neighbours` rows nearest to i or i
    among those nearest to j, never two rows of the same group: sorted, each once."""
    matrix = np.asarray(vectors, dtype=np.float32)
    found = nearest_neighbours(matrix, groups, neighbours, block_rows)
    return sorted({(min(i, j), max(i, j)) for _, i, j in found})


def term_vectors(terms: Sequence[Set[str]]) -> csr_array:
    """One sparse row per set of words, each word weighing 1 / sqrt(the set's size): the dot
    product of two rows is the cosine overlap of their sets (`litpipe.text.overlap`)."""
    vocabulary: dict[str, int] = {}
    columns = [vocabulary.setdefault(term, len(vocabulary)) for held in terms for term in held]
    rows = np.repeat(np.arange(len(terms)), [len(held) for held in terms])
    weights = np.repeat([1 / math.sqrt(len(held) or 1) for held in terms], [len(h) for h in terms])
    return csr_array((weights, (rows, columns)), shape=(len(terms), max(len(vocabulary), 1)))
