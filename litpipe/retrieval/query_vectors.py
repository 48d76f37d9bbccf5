"""Query vectors encoded ahead, in one call: a step over a batch of papers asks its retrievers
one question at a time, and one encode call per question costs a model call's overhead each
(tokenizing, a forward pass of one short text). Encoding the batch's questions together first
makes each search a lookup."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from litpipe.retrieval.store import TextEncoder


class EncodedAhead:
    """A `TextEncoder` that encodes `texts` at once, now, and answers `encode` from those
    vectors; a text it was not given is encoded when asked (and kept)."""

    def __init__(self, encoder: TextEncoder, texts: Iterable[str]) -> None:
        self.encoder = encoder
        ahead = list(dict.fromkeys(texts))
        self._vectors: dict[str, NDArray[np.float32]] = (
            dict(zip(ahead, encoder.encode(ahead), strict=True)) if ahead else {}
        )

    @property
    def embedder_id(self) -> str:
        return self.encoder.embedder_id

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self.encoder.encode(missing), strict=True))
        if not texts:
            return self.encoder.encode([])
        return np.stack([self._vectors[text] for text in texts])
