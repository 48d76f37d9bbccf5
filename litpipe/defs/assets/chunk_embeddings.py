"""Per-paper embeddings: the paper's chunks upserted into its embedder's LanceDB table."""

import dagster as dg

from litpipe.defs.paper_batches import add_paper_metadata
from litpipe.defs.steps import Resources, paper_asset
from litpipe.defs.versions import CodeVersion, batch_data_version, data_version
from litpipe.retrieval import embedder as embedder_module
from litpipe.retrieval import store as store_module
from litpipe.schemas import EmbeddingResult, PaperChunks
from litpipe.settings import HomePaths, IngestSettings, OperationsSettings
from litpipe.text import counted

ASSET = "chunk_embeddings"


def build_chunk_embeddings_assets(
    ingest: IngestSettings, operations: OperationsSettings, paths: HomePaths
) -> list[dg.AssetsDefinition]:
    @paper_asset(
        CodeVersion(modules=(embedder_module, store_module), output=EmbeddingResult, embedder=True),
        {"ingest": ingest, "operations": operations, "paths": paths},
        resources=("artifacts", "embedder", "lancedb"),
        name=ASSET,
        group_name="ingest",
        kinds={"lancedb"},
        # A run over a batch of papers embeds them with one encode and one LanceDB commit.
        deps=["paper_chunks"],
        description="The paper's chunk vectors in the LanceDB table of the configured embedder "
        "(one table per embedder: another embedder fills its own, the old one stays as it is). "
        "A chunk whose (content hash, embedder) is stored already is not embedded again.",
    )
    def chunk_embeddings(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        resources = Resources(context)
        store = resources.artifacts.store()
        chunks = [store.read(["paper_chunks"], p, PaperChunks) for p in context.partition_keys]
        results = resources.lancedb.store().embed_papers(chunks, resources.embedder.embedder())
        versions: dict[str, dg.DataVersion] = {}
        for result in results:
            path = store.write([ASSET], result.paper_id, result)
            # What was stored, not how much of it this run had to encode.
            versions[result.paper_id] = data_version(
                result.model_copy(update={"embedded": 0, "reused": 0})
            )
            add_paper_metadata(
                context,
                result.paper_id,
                {
                    "path": dg.MetadataValue.path(str(path)),
                    "table": result.table,
                    "chunks": result.chunks,
                    "embedded": result.embedded,
                    "reused": result.reused,
                },
            )
        table = results[0].table if results else "-"
        context.log.info(
            f"{counted(len(results), 'paper')}: "
            f"{counted(sum(r.embedded for r in results), 'chunk')} embedded, "
            f"{sum(r.reused for r in results)} reused, {sum(r.removed for r in results)} stale "
            f"rows removed in {table}"
        )
        return dg.MaterializeResult(data_version=batch_data_version(versions))

    return [chunk_embeddings]
