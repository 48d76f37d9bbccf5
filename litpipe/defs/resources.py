from __future__ import annotations

from pathlib import Path

import dagster as dg

from litpipe.catalog import Catalog
from litpipe.retrieval.embedder import Embedder
from litpipe.retrieval.store import ChunkStore


class CatalogResource(dg.ConfigurableResource):
    """The catalog of registered papers: tells a `papers` partition which file or row it is."""

    path: str

    def catalog(self) -> Catalog:
        return Catalog(Path(self.path))


class EmbedderResource(dg.ConfigurableResource):
    """The sentence-transformers embedder whose tokens size the chunks and whose vectors fill
    its LanceDB table. The model loads once per process, however many runs build this resource."""

    model: str
    device: str = "cpu"
    batch_size: int = 32

    def embedder(self) -> Embedder:
        return Embedder(self.model, device=self.device, batch_size=self.batch_size)


class ChunkingResource(dg.ConfigurableResource):
    """Chunk size and overlap in the embedder's tokens; size defaults to what the embedder takes."""

    max_tokens: int | None = None
    overlap_tokens: int = 32

    def max_tokens_for(self, embedder: Embedder) -> int:
        limit = embedder.max_chunk_tokens
        return limit if self.max_tokens is None else min(self.max_tokens, limit)


class LanceDBResource(dg.ConfigurableResource):
    """The LanceDB database holding one chunk table per embedder, with vectors and a full-text
    index."""

    uri: str

    def store(self) -> ChunkStore:
        return ChunkStore(Path(self.uri))
