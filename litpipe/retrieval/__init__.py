"""Embedding chunks and finding them again: the embedder, the LanceDB chunk store."""
