"""The reranker the settings name, built from its settings: where `retrieval.reranker`,
`retrieval.cross_encoder_model` and the embedder's device and batch size are unpacked."""

from __future__ import annotations

from litpipe.agents.asker import Asker
from litpipe.agents.question_evidence.rerankers import reranker_for, reranker_version
from litpipe.retrieval.rerank import Reranker
from litpipe.settings import Settings


def settings_reranker(settings: Settings, asker: Asker) -> Reranker:
    """The configured reranker; an agent reranker asks through `asker`."""
    return reranker_for(
        settings.retrieval.reranker,
        asker,
        settings.retrieval.cross_encoder_model,
        device=settings.ingest.embed_device,
        batch_size=settings.ingest.embed_batch_size,
    )


def settings_reranker_version(settings: Settings, asker: Asker) -> str:
    """The configured reranker's version, without loading or calling it."""
    return reranker_version(
        settings.retrieval.reranker, asker, settings.retrieval.cross_encoder_model
    )
