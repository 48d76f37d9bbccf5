"""Per-paper embeddings: the paper's chunks upserted into its embedder's LanceDB table."""

import dagster as dg

from litpipe.defs.partitions import papers
from litpipe.defs.resources import EmbedderResource, LanceDBResource
from litpipe.defs.versions import code_version, data_version
from litpipe.retrieval import embedder as embedder_module
from litpipe.retrieval import store as store_module
from litpipe.schemas import EmbeddingResult, PaperChunks
from litpipe.settings import Settings


def build_embedding_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    @dg.asset(
        partitions_def=papers,
        group_name="ingest",
        kinds={"lancedb"},
        code_version=code_version(
            [embedder_module, store_module], EmbeddingResult, embedder=settings.embedder
        ),
        description="The paper's chunk vectors in the LanceDB table of the configured embedder. "
        "A chunk whose (content hash, embedder) is stored already is not embedded again.",
    )
    def chunk_embeddings(
        context: dg.AssetExecutionContext,
        paper_chunks: PaperChunks,
        embedder: EmbedderResource,
        lancedb: LanceDBResource,
    ) -> dg.Output[EmbeddingResult]:
        result = lancedb.store().embed_paper(paper_chunks, embedder.embedder())
        context.log.info(
            f"{result.embedded} chunks embedded, {result.reused} reused, "
            f"{result.removed} stale rows removed in {result.table}"
        )
        return dg.Output(
            result,
            data_version=data_version(result.model_copy(update={"embedded": 0, "reused": 0})),
            metadata={
                "table": result.table,
                "chunks": result.chunks,
                "embedded": result.embedded,
                "reused": result.reused,
            },
        )

    return [chunk_embeddings]
