"""Vectors of texts an embedder has already encoded, so no text is encoded twice.

The offline graders embed every cited sentence and every sentence of the passages it cites:
a 5,000-paper synthesis grades some 50,000 texts, and the plain summary, the completeness check
and the next night's digest grade most of them again. Retrieval encodes a batch's questions
in one call and then looks each up. `CachedEncoder` serves both: it answers from vectors it
was given (a chunk's vector read back from LanceDB), then from what it encoded before, then
from the home's `VectorCache`, and encodes only the rest, in one call.

The cache is one SQLite file per embedder (its id names the file, so a model or backend swap
starts an empty one), which records its vectors' length with the first it keeps: a lookup needs
no model loaded, so a step whose texts were all encoded before (the nightly digest's insights,
encoded by the night's relationship analysis) never loads one. It is in WAL mode: the sensor,
the UI's runs and the CLI share it, a killed writer loses only its open transaction, and a file
that cannot be read is a miss, never an error. Deleting `<home>/cache/vectors` is always safe.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from litpipe.retrieval.store import TextEncoder, table_name

log = logging.getLogger(__name__)

# SQLite caps the host parameters of one statement (32,766 since 3.32); lookups go in slices.
_LOOKUP_SLICE = 5000
# Texts encoded by one call to the model, then kept.
_ENCODE_SLICE = 2048
# A writer holding the file's lock (another process's insert) is waited for this long.
_BUSY_TIMEOUT_S = 30.0


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class VectorCache:
    """An embedder's vectors by the SHA-256 of their text, in `<folder>/<embedder table>.sqlite`."""

    def __init__(self, folder: Path, embedder_id: str) -> None:
        self.path = folder / f"{table_name(embedder_id)}.sqlite"
        self._broken = False

    def get(self, texts: list[str]) -> dict[str, NDArray[np.float32]]:
        """The stored vectors of those of `texts` the cache holds (none before the file records
        their length: a vector of another length is a damaged one, and a miss)."""
        if not texts or not self.path.exists():
            return {}
        text_of = {_key(text): text for text in texts}
        dimension, rows = self._read(list(text_of))
        found: dict[str, NDArray[np.float32]] = {}
        for key, blob in rows:
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape == (dimension,):
                found[text_of[key]] = vector
        return found

    def put(self, vectors: Mapping[str, NDArray[np.float32]]) -> None:
        """Keep `vectors` (text to vector); a text already kept stays as it was."""
        if not vectors or self._broken:
            return
        rows = [
            (_key(text), np.asarray(vector, dtype=np.float32).tobytes())
            for text, vector in vectors.items()
        ]
        dimension = len(rows[0][1]) // np.dtype(np.float32).itemsize
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute("INSERT OR IGNORE INTO facts VALUES ('dimension', ?)", (str(dimension),))
                db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)", rows)
        except sqlite3.Error as error:
            self._give_up(error)

    def _read(self, keys: list[bytes]) -> tuple[int | None, list[tuple[bytes, bytes]]]:
        """The recorded length of the vectors, and the rows of those of `keys` kept."""
        if self._broken:
            return None, []
        rows: list[tuple[bytes, bytes]] = []
        try:
            with self._connect() as db:
                recorded = db.execute("SELECT value FROM facts WHERE name = 'dimension'").fetchone()
                if recorded is None:
                    return None, []
                for start in range(0, len(keys), _LOOKUP_SLICE):
                    part = keys[start : start + _LOOKUP_SLICE]
                    marks = ", ".join("?" * len(part))
                    rows.extend(
                        db.execute(
                            f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part
                        ).fetchall()
                    )
        except sqlite3.Error as error:
            self._give_up(error)
            return None, []
        return int(recorded[0]), rows

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB) STRICT")
        # A cache kept before its length was recorded is read once a vector is kept again.
        db.execute("CREATE TABLE IF NOT EXISTS facts (name TEXT PRIMARY KEY, value TEXT) STRICT")
        return db

    def _give_up(self, error: sqlite3.Error) -> None:
        # A cache that cannot be read or written costs time, never a result: encode instead.
        log.warning("vector cache %s unusable, encoding without it: %s", self.path, error)
        self._broken = True


class CachedEncoder:
    """A `TextEncoder` that encodes each distinct text at most once: from `known` vectors, then
    its own, then `cache`'s; the rest in one call to `encoder`, kept in memory and in `cache`."""

    def __init__(
        self,
        encoder: TextEncoder,
        cache: VectorCache | None = None,
        known: Mapping[str, NDArray[np.float32]] | None = None,
    ) -> None:
        self.encoder = encoder
        self.cache = cache
        self._vectors: dict[str, NDArray[np.float32]] = dict(known or {})

    @property
    def embedder_id(self) -> str:
        return self.encoder.embedder_id

    def know(self, vectors: Mapping[str, NDArray[np.float32]]) -> None:
        """Vectors this encoder answers with instead of encoding (e.g. chunks' stored ones)."""
        self._vectors.update(vectors)

    def encode_ahead(self, texts: Iterable[str]) -> None:
        """Encode `texts` now, in one call, so that later `encode` calls only look them up."""
        self.encode(list(texts))

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        if not texts:
            return self.encoder.encode([])
        missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if missing and self.cache is not None:
            self._vectors.update(self.cache.get(missing))
            missing = [text for text in missing if text not in self._vectors]
        # In slices, each kept at once: a 5,000-paper synthesis grades some 50,000 texts, and a
        # run killed half way keeps what it encoded.
        for start in range(0, len(missing), _ENCODE_SLICE):
            part = missing[start : start + _ENCODE_SLICE]
            encoded = dict(zip(part, self.encoder.encode(part), strict=True))
            self._vectors.update(encoded)
            if self.cache is not None:
                self.cache.put(encoded)
        return np.stack([self._vectors[text] for text in texts])
