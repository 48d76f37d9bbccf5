"""A BM25 index (rank-bm25's BM25Okapi) over a collection's chunks, persisted on disk.

The file's name is a fingerprint of what the index was built from (chunk ids, content hashes,
the tokenizer's version and the BM25 parameters): an unchanged collection loads the index, a
changed chunk builds a new one, and no query ever rebuilds it.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from litpipe.retrieval.text import tokenize

# Bump when `tokenize` changes: an index built with other terms must not be loaded.
TOKENIZER_VERSION = 1
# Tuned on SciFact's train split (809 queries, chunk-level BM25, nDCG@10): k1 0.9 / b 0.4 gave
# 0.658; 0.9/0.75 0.657, 1.2/0.75 0.656, 1.5/0.75 0.653, 1.2/0.9 0.652. SciFact's abstracts vary
# little in length, so a weak length normalisation suits them (Anserini's BEIR runs use 0.9/0.4).
DEFAULT_K1 = 0.9
DEFAULT_B = 0.4
_SUFFIX = ".bm25.pkl"


def index_fingerprint(chunk_ids: list[str], content_hashes: list[str], k1: float, b: float) -> str:
    digest = hashlib.sha256(f"tokenizer={TOKENIZER_VERSION};k1={k1};b={b}\n".encode())
    for chunk_id, content_hash in sorted(zip(chunk_ids, content_hashes, strict=True)):
        digest.update(f"{chunk_id}\0{content_hash}\n".encode())
    return digest.hexdigest()[:16]


class BM25Index:
    """BM25 over chunk texts; `built` says whether this instance was built rather than loaded."""

    def __init__(
        self,
        chunk_ids: list[str],
        texts: list[str],
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        fingerprint: str = "",
    ) -> None:
        if len(chunk_ids) != len(texts):
            raise ValueError(f"{len(chunk_ids)} chunk ids but {len(texts)} texts")
        self.chunk_ids = list(chunk_ids)
        self.fingerprint = fingerprint
        self.k1 = k1
        self.b = b
        self.built = True
        self._position = {chunk_id: index for index, chunk_id in enumerate(self.chunk_ids)}
        # BM25Okapi divides by the corpus size: an empty collection gets no model at all.
        self._bm25 = BM25Okapi([tokenize(text) for text in texts], k1=k1, b=b) if texts else None

    @classmethod
    def load_or_build(
        cls,
        directory: Path,
        chunk_ids: list[str],
        content_hashes: list[str],
        texts: list[str],
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
    ) -> BM25Index:
        """The index saved in `directory` for exactly these chunks, or a new one, saved there
        (replacing indexes of earlier states of the collection)."""
        fingerprint = index_fingerprint(chunk_ids, content_hashes, k1, b)
        path = Path(directory) / f"{fingerprint}{_SUFFIX}"
        if path.is_file():
            with path.open("rb") as handle:
                index = pickle.load(handle)
            if isinstance(index, cls) and index.fingerprint == fingerprint:
                index.built = False
                return index
        index = cls(chunk_ids, texts, k1=k1, b=b, fingerprint=fingerprint)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written aside, then renamed: a reader in another process never loads half a file.
        partial = path.with_suffix(".partial")
        with partial.open("wb") as handle:
            pickle.dump(index, handle, protocol=pickle.HIGHEST_PROTOCOL)
        partial.replace(path)
        for old in path.parent.glob(f"*{_SUFFIX}"):
            if old != path:
                old.unlink(missing_ok=True)
        return index

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def search(
        self, query: str, limit: int, allowed_ids: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """Up to `limit` (chunk id, score) pairs, best first, among `allowed_ids` when given;
        chunks sharing no term with the query are not returned."""
        terms = tokenize(query)
        if self._bm25 is None or not terms or limit < 1:
            return []
        scores = np.asarray(self._bm25.get_scores(terms), dtype=np.float64)
        if allowed_ids is not None:
            mask = np.zeros(len(scores), dtype=bool)
            positions = [self._position[i] for i in allowed_ids if i in self._position]
            mask[positions] = True
            scores = np.where(mask, scores, 0.0)
        matching = np.flatnonzero(scores > 0)
        if len(matching) > limit:
            matching = matching[np.argpartition(-scores[matching], limit - 1)[:limit]]
        # Stable on ties: equal scores keep the collection's order.
        ordered = matching[np.lexsort((matching, -scores[matching]))]
        return [(self.chunk_ids[index], float(scores[index])) for index in ordered]

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state.pop("_position")
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._position = {chunk_id: index for index, chunk_id in enumerate(self.chunk_ids)}
