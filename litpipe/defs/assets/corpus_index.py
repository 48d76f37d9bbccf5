"""Per-collection retrieval index: the BM25 index over every chunk of the collection."""

import dagster as dg

from litpipe.defs.partitions import collections
from litpipe.defs.steps import Collection, all_partitions, step_asset
from litpipe.defs.versions import CodeVersion, data_version, versioned_output
from litpipe.retrieval import bm25, hybrid, text
from litpipe.schemas import CorpusIndex
from litpipe.settings import HomePaths, IngestSettings
from litpipe.text import counted


def build_corpus_index_assets(
    ingest: IngestSettings, paths: HomePaths
) -> list[dg.AssetsDefinition]:
    @step_asset(
        CodeVersion(modules=(bm25, hybrid, text), output=CorpusIndex, embedder=True),
        {"ingest": ingest, "paths": paths},
        resources=("catalog", "embedder", "lancedb", "retrieval"),
        partitions_def=collections,
        group_name="corpus_index",
        kinds={"lancedb"},
        # Lineage only: the index reads the collection's rows from LanceDB, not through an IO
        # manager that would load every paper partition.
        deps=all_partitions("chunk_embeddings"),
        description="The collection's BM25 index over its chunks in the embedder's LanceDB table, "
        "saved and rebuilt only when a chunk of the collection changed; questions that search "
        "other papers or the whole collection use it.",
    )
    def corpus_index(context: dg.AssetExecutionContext) -> dg.Output[CorpusIndex]:
        collection = Collection.of(context)
        model = collection.resources.embedder.embedder()
        retriever = collection.retriever(model)
        index = CorpusIndex(
            collection=collection.name,
            embedder_id=model.embedder_id,
            papers=len(retriever.paper_ids),
            chunks=len(retriever),
            bm25_fingerprint=retriever.bm25.fingerprint,
            bm25_built=retriever.bm25.built,
        )
        context.log.info(
            f"{collection.name}: {counted(index.chunks, 'chunk')} of "
            f"{counted(index.papers, 'paper')}, BM25 index "
            f"{'built' if index.bm25_built else 'loaded'} ({index.bm25_fingerprint})"
        )
        return versioned_output(
            index,
            {
                "papers": index.papers,
                "chunks": index.chunks,
                "bm25_index": index.bm25_fingerprint,
                "bm25_built": index.bm25_built,
            },
            # Loaded or built, the index is the same.
            data_version(index.model_copy(update={"bm25_built": False})),
        )

    return [corpus_index]
