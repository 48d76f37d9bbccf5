"""The reranker the settings name, built from its settings: where `retrieval.reranker`,
`retrieval.cross_encoder_model` and the embedder's device and batch size are unpacked."""

from __future__ import annotations

from litpipe.agents.asker import Asker
from litpipe.agents.question_evidence.rerankers import reranker_for, reranker_version
from litpipe.retrieval.rerank import Reranker
from litpipe.settings import IngestSettings, RetrievalSettings


def settings_reranker(
    retrieval: RetrievalSettings, ingest: IngestSettings, asker: Asker
) -> Reranker:
    """The configured reranker (a cross-encoder on the embedder's device, in its batches); an
    agent reranker asks through `asker`."""
    return reranker_for(
        retrieval.reranker,
        asker,
        retrieval.cross_encoder_model,
        device=ingest.embed_device,
        batch_size=ingest.embed_batch_size,
    )


def settings_reranker_version(retrieval: RetrievalSettings, asker: Asker) -> str:
    """The configured reranker's version, without loading or calling it."""
    return reranker_version(retrieval.reranker, asker, retrieval.cross_encoder_model)
