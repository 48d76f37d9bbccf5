"""Per-paper ingestion: the source file or row → parsed document → section-aware chunks."""

from pathlib import Path

import dagster as dg

from litpipe.citation_keys import KeyParts
from litpipe.defs.paper_batches import PaperBuild
from litpipe.defs.steps import PaperBatch, Resources, each_paper, paper_asset
from litpipe.defs.versions import CodeVersion
from litpipe.ingest import chunking, pdf, structured_abstracts, tables
from litpipe.ingest.ids import file_sha256
from litpipe.schemas import (
    IngestError,
    PaperChunks,
    PaperDocument,
    PaperSource,
    pdf_content_sha256,
)
from litpipe.settings import HomePaths, IngestSettings, OperationsSettings
from litpipe.settings.groups import SettingsGroups
from litpipe.workflows.citation_keys import key_parts
from litpipe.workflows.ingest import chunk_paper, read_document

GROUP = "ingest"


def build_ingest_assets(
    ingest: IngestSettings, operations: OperationsSettings, paths: HomePaths
) -> list[dg.AssetsDefinition]:
    groups: SettingsGroups = {"ingest": ingest, "operations": operations, "paths": paths}

    @paper_asset(
        CodeVersion(output=PaperSource),
        groups,
        group_name=GROUP,
        kinds={"pdf"},
        description="Where the paper comes from, and the hash of its bytes (or of its table row).",
    )
    def paper_source(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        return each_paper(context, None, source_of)

    @paper_asset(
        CodeVersion(
            modules=(*pdf.MODULES, tables, structured_abstracts),
            output=PaperDocument,
            settings=("ingest.pdf_tables",),
        ),
        groups,
        group_name=GROUP,
        # Inputs are read from their artifacts, not loaded through the IO manager (which loads
        # one partition per input), so that one run builds a batch of papers.
        deps=[paper_source],
        description="Title, authors, abstract, sections with pages; references kept apart.",
    )
    def paper_document(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        read: dict[str, KeyParts] = {}

        def document_of(papers: PaperBatch, paper_id: str) -> PaperBuild[PaperDocument]:
            paper_source = papers.store.read(["paper_source"], paper_id, PaperSource)
            try:
                document = read_document(paper_source, ingest)
            except IngestError as error:
                # A bad paper is the user's input, not a transient fault: no retry, one line.
                raise dg.Failure(
                    description=f"{paper_source.path}: {error}", allow_retries=False
                ) from error
            read[paper_id] = key_parts(document)
            return papers.paper(
                document,
                {
                    "title": document.title,
                    "pages": document.pages,
                    "sections": len(document.sections),
                    "references": len(document.references),
                    "characters": len(document.text),
                },
            )

        built = each_paper(context, None, document_of)
        # After the batch, not paper by paper: papers of one base are suffixed in the order
        # they were registered, whichever was read first.
        Resources(context).catalog.catalog().give_generated_keys(read)
        return built

    @paper_asset(
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
        groups,
        resources=("catalog", "artifacts", "embedder", "chunker"),
        group_name=GROUP,
        deps=[paper_document],
        description="Section-aware chunks sized in the embedder's tokens, with page spans and "
        "character offsets into the document.",
    )
    def paper_chunks(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        resources = Resources(context)
        model, chunker = resources.embedder.embedder(), resources.chunker

        def chunks_of(papers: PaperBatch, paper_id: str) -> PaperBuild[PaperChunks]:
            chunks = chunk_paper(
                papers.store.read(["paper_document"], paper_id, PaperDocument),
                model,
                chunker.max_tokens,
                chunker.overlap_tokens,
            )
            sizes = [chunk.n_tokens for chunk in chunks.chunks]
            return papers.paper(
                chunks,
                {
                    "chunks": len(sizes),
                    "max_chunk_tokens": max(sizes, default=0),
                    "token_limit": chunks.max_tokens,
                },
            )

        return each_paper(context, None, chunks_of)

    return [paper_source, paper_document, paper_chunks]


def source_of(papers: PaperBatch, paper_id: str) -> PaperBuild[PaperSource]:
    source = papers.catalog.source(paper_id)
    if source.kind == "pdf":
        source = _check_file_unchanged(source)
    return papers.paper(
        source,
        {"file": source.path, "kind": source.kind},
        dg.DataVersion(source.content_sha256[:16]),
    )


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
