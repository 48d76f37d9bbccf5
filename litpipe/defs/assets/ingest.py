"""Per-paper ingestion: the source file or row → parsed document → section-aware chunks."""

from pathlib import Path

import dagster as dg

from litpipe.defs.partitions import papers
from litpipe.defs.resources import (
    ArtifactsResource,
    CatalogResource,
    ChunkingResource,
    EmbedderResource,
)
from litpipe.defs.versions import (
    CodeVersion,
    backfill_policy,
    batch_data_version,
    data_version,
    versioned_asset,
    versioned_output,
)
from litpipe.ingest import chunking, pdf, tables
from litpipe.ingest.ids import file_sha256
from litpipe.schemas import IngestError, PaperChunks, PaperDocument, PaperSource
from litpipe.settings import Settings
from litpipe.workflows.ingest import chunk_paper, read_document

GROUP = "ingest"


def build_ingest_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    @versioned_asset(
        CodeVersion(output=PaperSource),
        settings,
        partitions_def=papers,
        group_name=GROUP,
        kinds={"pdf"},
        description="Where the paper comes from, and the hash of its bytes (or of its table row).",
    )
    def paper_source(
        context: dg.AssetExecutionContext, catalog: CatalogResource
    ) -> dg.Output[PaperSource]:
        source = catalog.catalog().source(context.partition_key)
        if source.kind == "pdf":
            source = _check_file_unchanged(source)
        return versioned_output(
            source,
            {"file": source.path, "collection": source.collection, "kind": source.kind},
            dg.DataVersion(source.content_sha256[:16]),
        )

    @versioned_asset(
        CodeVersion(modules=(pdf, tables), output=PaperDocument),
        settings,
        partitions_def=papers,
        group_name=GROUP,
        description="Title, authors, abstract, sections with pages; references kept apart.",
    )
    def paper_document(paper_source: PaperSource) -> dg.Output[PaperDocument]:
        try:
            document = read_document(paper_source, settings)
        except IngestError as error:
            # A bad paper is the user's input, not a transient fault: no retry, one clear line.
            raise dg.Failure(
                description=f"{paper_source.path}: {error}", allow_retries=False
            ) from error
        return versioned_output(
            document,
            {
                "title": document.title,
                "pages": document.pages,
                "sections": len(document.sections),
                "references": len(document.references),
                "characters": len(document.text),
            },
        )

    @versioned_asset(
        CodeVersion(
            modules=(chunking,),
            output=PaperChunks,
            # Hashed under these names since before the settings were declared by field.
            settings={
                "max_tokens": "ingest.chunk_tokens",
                "overlap_tokens": "ingest.chunk_overlap_tokens",
            },
            embedder=True,
        ),
        settings,
        partitions_def=papers,
        group_name=GROUP,
        # The document is read from its artifact, not loaded as an input (an IO manager loads
        # one partition per input), so that a backfill's run chunks a batch of papers.
        deps=[paper_document],
        backfill_policy=backfill_policy(settings),
        description="Section-aware chunks sized in the embedder's tokens, with page spans and "
        "character offsets into the document.",
    )
    def paper_chunks(
        context: dg.AssetExecutionContext,
        embedder: EmbedderResource,
        chunker: ChunkingResource,
        artifacts: ArtifactsResource,
    ) -> dg.MaterializeResult:
        model = embedder.embedder()
        store = artifacts.store()
        versions: dict[str, dg.DataVersion] = {}
        for paper_id in context.partition_keys:
            chunks = chunk_paper(
                store.read(["paper_document"], paper_id, PaperDocument),
                model,
                chunker.max_tokens,
                chunker.overlap_tokens,
            )
            path = store.write(["paper_chunks"], paper_id, chunks)
            versions[paper_id] = data_version(chunks)
            sizes = [chunk.n_tokens for chunk in chunks.chunks]
            context.add_asset_metadata(
                {
                    "path": dg.MetadataValue.path(str(path)),
                    "chunks": len(sizes),
                    "max_chunk_tokens": max(sizes, default=0),
                    "token_limit": chunks.max_tokens,
                },
                partition_key=paper_id,
            )
        return dg.MaterializeResult(data_version=batch_data_version(versions))

    return [paper_source, paper_document, paper_chunks]


def _check_file_unchanged(source: PaperSource) -> PaperSource:
    path = Path(source.path)
    if not path.is_file():
        raise dg.Failure(
            description=f"{path}: file not found (moved or deleted since it was registered)",
            allow_retries=False,
        )
    if file_sha256(path) != source.content_sha256:
        raise dg.Failure(
            description=f"{path}: file changed since it was registered; "
            "run `litpipe run` on its folder again to register the new version",
            allow_retries=False,
        )
    return source
