"""Per-paper ingestion: the source file or row → parsed document → section-aware chunks."""

from pathlib import Path

import dagster as dg

from litpipe.defs.paper_batches import PaperBuild, build_papers
from litpipe.defs.partitions import papers
from litpipe.defs.resources import (
    ArtifactsResource,
    CatalogResource,
    ChunkingResource,
    EmbedderResource,
)
from litpipe.defs.versions import CodeVersion, backfill_policy, versioned_asset
from litpipe.ingest import chunking, pdf, structured_abstracts, tables
from litpipe.ingest.ids import file_sha256
from litpipe.schemas import (
    IngestError,
    PaperChunks,
    PaperDocument,
    PaperSource,
    pdf_content_sha256,
)
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
        backfill_policy=backfill_policy(settings),
        description="Where the paper comes from, and the hash of its bytes (or of its table row).",
    )
    def paper_source(
        context: dg.AssetExecutionContext, catalog: CatalogResource, artifacts: ArtifactsResource
    ) -> dg.MaterializeResult:
        papers_catalog = catalog.catalog()

        def build(paper_id: str) -> PaperBuild[PaperSource]:
            source = papers_catalog.source(paper_id)
            if source.kind == "pdf":
                source = _check_file_unchanged(source)
            return PaperBuild(
                source,
                {"file": source.path, "kind": source.kind},
                dg.DataVersion(source.content_sha256[:16]),
            )

        return build_papers(context, artifacts.store(), papers_catalog, build)

    @versioned_asset(
        CodeVersion(modules=(*pdf.MODULES, tables, structured_abstracts), output=PaperDocument),
        settings,
        partitions_def=papers,
        group_name=GROUP,
        # Inputs are read from their artifacts, not loaded through the IO manager (which loads
        # one partition per input), so that one run builds a batch of papers.
        deps=[paper_source],
        backfill_policy=backfill_policy(settings),
        description="Title, authors, abstract, sections with pages; references kept apart.",
    )
    def paper_document(
        context: dg.AssetExecutionContext, catalog: CatalogResource, artifacts: ArtifactsResource
    ) -> dg.MaterializeResult:
        store = artifacts.store()

        def build(paper_id: str) -> PaperBuild[PaperDocument]:
            paper_source = store.read(["paper_source"], paper_id, PaperSource)
            try:
                document = read_document(paper_source, settings)
            except IngestError as error:
                # A bad paper is the user's input, not a transient fault: no retry, one line.
                raise dg.Failure(
                    description=f"{paper_source.path}: {error}", allow_retries=False
                ) from error
            return PaperBuild(
                document,
                {
                    "title": document.title,
                    "pages": document.pages,
                    "sections": len(document.sections),
                    "references": len(document.references),
                    "characters": len(document.text),
                },
            )

        return build_papers(context, store, catalog.catalog(), build)

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
        deps=[paper_document],
        backfill_policy=backfill_policy(settings),
        description="Section-aware chunks sized in the embedder's tokens, with page spans and "
        "character offsets into the document.",
    )
    def paper_chunks(
        context: dg.AssetExecutionContext,
        catalog: CatalogResource,
        embedder: EmbedderResource,
        chunker: ChunkingResource,
        artifacts: ArtifactsResource,
    ) -> dg.MaterializeResult:
        model = embedder.embedder()
        store = artifacts.store()

        def build(paper_id: str) -> PaperBuild[PaperChunks]:
            chunks = chunk_paper(
                store.read(["paper_document"], paper_id, PaperDocument),
                model,
                chunker.max_tokens,
                chunker.overlap_tokens,
            )
            sizes = [chunk.n_tokens for chunk in chunks.chunks]
            return PaperBuild(
                chunks,
                {
                    "chunks": len(sizes),
                    "max_chunk_tokens": max(sizes, default=0),
                    "token_limit": chunks.max_tokens,
                },
            )

        return build_papers(context, store, catalog.catalog(), build)

    return [paper_source, paper_document, paper_chunks]


def _check_file_unchanged(source: PaperSource) -> PaperSource:
    path = Path(source.path)
    if not path.is_file():
        raise dg.Failure(
            description=f"{path}: file not found (moved or deleted since it was registered)",
            allow_retries=False,
        )
    # A reference manager's PDF hashes its fields with its bytes (`pdf_content_sha256`); one
    # registered before they were hashed together has its bytes' hash alone.
    digest = file_sha256(path)
    if source.content_sha256 not in (digest, pdf_content_sha256(digest, source.fields)):
        raise dg.Failure(
            description=f"{path}: file changed since it was registered; "
            "run `litpipe run` on its folder again to register the new version",
            allow_retries=False,
        )
    return source
