"""A BM25 index (rank-bm25's BM25Okapi) over a collection's chunks, persisted on disk.

The file's name is a fingerprint of what the index was built from (chunk ids, content hashes,
the tokenizer's version, the index format and the BM25 parameters): an unchanged collection loads
the index, a changed chunk builds a new one, and no query ever rebuilds it.

rank-bm25 computes the model (its ATIRE idf with the epsilon floor, term frequencies, document
lengths), but its `get_scores` loops in Python over every document for every query term: at
200k chunks a query costs hundreds of milliseconds. The index therefore keeps, instead of the
model, each term's BM25 contribution to each chunk that contains it, as a sparse term-by-chunk
matrix (CSR: one row of postings per term), so a query adds up the few rows of its terms.
The scores are rank-bm25's exactly: the same arithmetic per term, summed in the query's order,
a repeated query term counted as often as it is repeated.

The file is a NumPy `.npz` of plain arrays (the matrix's three, and the chunk ids, vocabulary and
parameters as UTF-8 JSON bytes), loaded with `allow_pickle=False`: whoever can write the home
cannot make a reader run code, as a pickle would let them. A file that cannot be read (cut
short, corrupted, of another format) is rebuilt, with a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import zipfile
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from rank_bm25 import BM25Okapi
from scipy.sparse import csr_array

from litpipe.files import replacing
from litpipe.retrieval.text import tokenize

log = logging.getLogger(__name__)

# Bump when `tokenize` changes: an index built with other terms must not be loaded.
TOKENIZER_VERSION = 2
# Bump when what is saved changes (2: the weight matrix instead of a BM25Okapi object; 3: an
# .npz of arrays instead of a pickle).
INDEX_FORMAT = 3
# Tuned on SciFact's train split (809 queries, chunk-level BM25 with titles, stemmed, nDCG@10):
# k1 0.9 / b 0.4 gave 0.694; 1.2/0.75 0.697, 1.2/0.5 0.697, 1.5/0.6 0.697, 0.9/0.6 0.695, and
# 0.9/0.4 fuses best with dense (hybrid 0.726 against 0.725 for 1.2/0.75). SciFact's abstracts vary
# little in length, so a weak length normalisation suits them (Anserini's BEIR runs use 0.9/0.4).
DEFAULT_K1 = 0.9
DEFAULT_B = 0.4
# Below this share of the collection, `allowed_ids` are scored by looking each one up in the
# query terms' postings (a binary search each); above it, scoring every chunk and masking is
# cheaper.
_LOOKUP_SHARE = 1 / 8
_SUFFIX = ".bm25.npz"


def index_fingerprint(chunk_ids: list[str], content_hashes: list[str], k1: float, b: float) -> str:
    digest = hashlib.sha256(
        f"tokenizer={TOKENIZER_VERSION};format={INDEX_FORMAT};k1={k1};b={b}\n".encode()
    )
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
        documents = [tokenize(text) for text in texts]
        # BM25Okapi divides by the corpus size and by the vocabulary's: a collection without a
        # single term gets an empty index.
        if any(documents):
            self._term_row, self._weights = _weight_matrix(BM25Okapi(documents, k1=k1, b=b))
        else:
            self._term_row = {}
            self._weights = csr_array((0, len(self.chunk_ids)), dtype=np.float64)

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
        saved = cls.load(directory, chunk_ids, content_hashes, k1=k1, b=b)
        if saved is not None:
            return saved
        fingerprint = index_fingerprint(chunk_ids, content_hashes, k1, b)
        path = Path(directory) / f"{fingerprint}{_SUFFIX}"
        index = cls(chunk_ids, texts, k1=k1, b=b, fingerprint=fingerprint)
        path.parent.mkdir(parents=True, exist_ok=True)
        index._save(path)
        # Indexes of earlier states of the collection (and pickles of earlier versions), not
        # the hidden temporary files other writers are still writing.
        for old in path.parent.glob("*.bm25.*"):
            if old != path and not old.name.startswith("."):
                old.unlink(missing_ok=True)
        return index

    @classmethod
    def load(
        cls,
        directory: Path,
        chunk_ids: list[str],
        content_hashes: list[str],
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
    ) -> BM25Index | None:
        """The index saved in `directory` for exactly these chunks, or None (none saved, or
        unreadable): a caller then reads the texts `load_or_build` needs only when it must."""
        fingerprint = index_fingerprint(chunk_ids, content_hashes, k1, b)
        path = Path(directory) / f"{fingerprint}{_SUFFIX}"
        if not path.is_file():
            return None
        try:
            return cls._load(path, fingerprint)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
            log.warning("BM25 index %s unreadable (%s): rebuilding it", path, error)
            return None

    def _save(self, path: Path) -> None:
        """Written aside, then renamed (`litpipe.files.replacing`): a reader in another process
        never loads half a file, and concurrent writers never share a temporary file."""
        header = {
            "format": INDEX_FORMAT,
            "fingerprint": self.fingerprint,
            "k1": self.k1,
            "b": self.b,
            "chunk_ids": self.chunk_ids,
            "terms": list(self._term_row),  # in row order
        }
        with replacing(path) as handle:
            np.savez(
                handle,
                header=np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8),
                data=self._weights.data,
                indices=self._weights.indices,
                indptr=self._weights.indptr,
            )

    @classmethod
    def _load(cls, path: Path, fingerprint: str) -> BM25Index:
        """The index saved at `path`; ValueError if it is not the index of `fingerprint`."""
        with np.load(path, allow_pickle=False) as arrays:
            header = json.loads(arrays["header"].tobytes().decode("utf-8"))
            data, indices, indptr = arrays["data"], arrays["indices"], arrays["indptr"]
        if header.get("format") != INDEX_FORMAT or header.get("fingerprint") != fingerprint:
            raise ValueError("saved for another format or state of the collection")
        chunk_ids, terms = list(header["chunk_ids"]), list(header["terms"])
        if not (
            len(indptr) == len(terms) + 1
            and len(data) == len(indices) == indptr[-1]
            and (len(indices) == 0 or 0 <= indices.min() <= indices.max() < len(chunk_ids))
        ):
            raise ValueError("inconsistent matrix")
        index = cls.__new__(cls)
        index.chunk_ids = chunk_ids
        index.fingerprint = fingerprint
        index.k1, index.b = float(header["k1"]), float(header["b"])
        index.built = False
        index._position = {chunk_id: position for position, chunk_id in enumerate(chunk_ids)}
        index._term_row = {term: row for row, term in enumerate(terms)}
        index._weights = csr_array(
            (data, indices, indptr), shape=(len(terms), len(chunk_ids)), copy=False
        )
        return index

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._position

    def search(
        self,
        query: str,
        limit: int,
        allowed_ids: set[str] | None = None,
        excluded_ids: set[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Up to `limit` (chunk id, score) pairs, best first, among `allowed_ids` when given and
        never `excluded_ids`; chunks sharing no term with the query are not returned.

        To leave a few chunks out, pass them as `excluded_ids` rather than every other chunk as
        `allowed_ids`: a set of most of a large collection costs more to read than the query."""
        # Unknown terms add nothing (rank-bm25 gives them an idf of 0); repeated ones count again.
        rows = [self._term_row[term] for term in tokenize(query) if term in self._term_row]
        if not rows or limit < 1:
            return []
        positions: NDArray[np.int64] | None = None  # None: the scores are every chunk's
        if allowed_ids is None:
            scores = self._scores_of_every_chunk(rows)
        else:
            allowed = self._positions_of(allowed_ids)
            if len(allowed) < _LOOKUP_SHARE * len(self.chunk_ids):
                positions, scores = allowed, self._scores_at(rows, allowed)
            else:
                scores = self._scores_of_every_chunk(rows)
                outside = np.ones(len(scores), dtype=bool)
                outside[allowed] = False
                scores[outside] = 0.0
        if excluded_ids:
            excluded = self._positions_of(excluded_ids)
            if positions is None:
                scores[excluded] = 0.0
            else:
                scores[np.isin(positions, excluded)] = 0.0
        matching = np.flatnonzero(scores > 0)
        if len(matching) > limit:
            matching = matching[np.argpartition(-scores[matching], limit - 1)[:limit]]
        chunk_positions = matching if positions is None else positions[matching]
        # Stable on ties: equal scores keep the collection's order.
        order = np.lexsort((chunk_positions, -scores[matching]))
        return [(self.chunk_ids[chunk_positions[i]], float(scores[matching[i]])) for i in order]

    def _positions_of(self, chunk_ids: set[str]) -> NDArray[np.int64]:
        """The sorted positions of those of `chunk_ids` that the index holds."""
        positions = np.fromiter(
            (self._position[i] for i in chunk_ids if i in self._position), dtype=np.int64
        )
        positions.sort()
        return positions

    def _scores_of_every_chunk(self, rows: list[int]) -> NDArray[np.float64]:
        """Every chunk's score: the terms' postings added up, each chunk's contributions in the
        query's order (as `BM25Okapi.get_scores` adds them)."""
        postings = [slice(self._weights.indptr[row], self._weights.indptr[row + 1]) for row in rows]
        chunks = np.concatenate([self._weights.indices[span] for span in postings])
        contributions = np.concatenate([self._weights.data[span] for span in postings])
        # numpy's stubs type bincount as integer counts even when `weights` makes them floats.
        return np.bincount(  # type: ignore[return-value]
            chunks, weights=contributions, minlength=len(self.chunk_ids)
        )

    def _scores_at(self, rows: list[int], positions: NDArray[np.int64]) -> NDArray[np.float64]:
        """The scores of the chunks at `positions` (sorted, distinct), each looked up in every
        term's postings (sorted by chunk) rather than scoring the whole collection."""
        scores = np.zeros(len(positions), dtype=np.float64)
        for row in rows:
            start, end = self._weights.indptr[row], self._weights.indptr[row + 1]
            chunks = self._weights.indices[start:end]
            at = np.minimum(np.searchsorted(chunks, positions), len(chunks) - 1)
            found = chunks[at] == positions
            scores[found] += self._weights.data[start + at[found]]
        return scores


def _weight_matrix(model: BM25Okapi) -> tuple[dict[str, int], csr_array]:
    """(term to row, the terms-by-chunks matrix of BM25 contributions) of a built model: for a
    term of idf `idf` occurring `tf` times in a chunk of `dl` terms, rank-bm25's
    idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))), computed as it computes it."""
    term_row = {term: row for row, term in enumerate(model.idf)}
    postings = sum(len(frequencies) for frequencies in model.doc_freqs)
    # 32-bit term and chunk numbers keep scipy's indices 32-bit (below 2**31 postings): a third
    # less to store and load than 64-bit ones.
    rows = np.fromiter(
        (term_row[term] for frequencies in model.doc_freqs for term in frequencies),
        dtype=np.int32,
        count=postings,
    )
    term_frequencies = np.fromiter(
        (tf for frequencies in model.doc_freqs for tf in frequencies.values()),
        dtype=np.float64,
        count=postings,
    )
    chunks = np.repeat(
        np.arange(len(model.doc_freqs), dtype=np.int32),
        [len(frequencies) for frequencies in model.doc_freqs],
    )
    idf = np.fromiter(model.idf.values(), dtype=np.float64, count=len(term_row))
    doc_len = np.asarray(model.doc_len, dtype=np.float64)
    length_norm = model.k1 * (1 - model.b + model.b * doc_len / model.avgdl)
    weights = idf[rows] * (
        term_frequencies * (model.k1 + 1) / (term_frequencies + length_norm[chunks])
    )
    matrix = csr_array((weights, (rows, chunks)), shape=(len(term_row), len(model.doc_freqs)))
    # Postings sorted by chunk: `_scores_at` binary-searches them.
    matrix.sort_indices()
    return term_row, matrix
