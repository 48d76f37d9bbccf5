"""Nearest neighbours among the rows of a matrix of unit vectors, by cosine, in blocks: the
similarities of a block of rows with every row at once (one matrix product), so memory stays
at `block_rows` x rows floats whatever the number of rows."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

# 512 rows against 25,000 (5,000 papers' insights): 50 MB of float32 similarities at a time.
DEFAULT_BLOCK_ROWS = 512


def nearest_pairs(
    vectors: NDArray[np.float32],
    groups: NDArray[np.int64],
    neighbours: int,
    block_rows: int = DEFAULT_BLOCK_ROWS,
) -> list[tuple[int, int]]:
    """The pairs (i, j), i < j, such that j is among the `neighbours` rows nearest to i or i
    among those nearest to j, never two rows of the same group (`groups`, one code per row):
    at most rows x `neighbours` pairs, sorted."""
    rows = len(vectors)
    if rows < 2 or neighbours < 1:
        return []
    matrix = np.asarray(vectors, dtype=np.float32)
    found: list[NDArray[np.int64]] = []
    for start in range(0, rows, block_rows):
        block = slice(start, min(start + block_rows, rows))
        similarity = matrix[block] @ matrix.T
        similarity[groups[block, None] == groups[None, :]] = -np.inf
        kept = min(neighbours, rows - 1)
        nearest = np.argpartition(-similarity, kept - 1, axis=1)[:, :kept]
        sources = np.repeat(np.arange(block.start, block.stop), kept)
        targets = nearest.ravel()
        allowed = np.isfinite(similarity[sources - start, targets])
        found.append(np.stack([sources[allowed], targets[allowed]], axis=1))
    pairs = np.sort(np.concatenate(found), axis=1)
    return [(int(i), int(j)) for i, j in np.unique(pairs, axis=0)]
