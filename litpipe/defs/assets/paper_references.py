"""Per-paper references: the reference list as records and the sentences citing them, read
once per paper whatever its collections (a collection's `citation_graph` matches them)."""

import dagster as dg

from litpipe.defs.paper_batches import PaperBuild
from litpipe.defs.steps import PaperBatch, each_paper, paper_asset
from litpipe.defs.versions import CodeVersion
from litpipe.extractive import citation_intent
from litpipe.ingest import citation_contexts, references
from litpipe.schemas import PaperDocument, PaperReferences
from litpipe.settings import OperationsSettings
from litpipe.workflows import paper_references as workflow


def build_paper_references_assets(operations: OperationsSettings) -> list[dg.AssetsDefinition]:
    @paper_asset(
        CodeVersion(
            modules=(references, citation_contexts, citation_intent, workflow),
            output=PaperReferences,
        ),
        {"operations": operations},
        # Read with its document: a stage of the per-paper job.
        group_name="ingest",
        deps=["paper_document"],
        description="The paper's reference list as records (authors, title, year, venue, DOI, "
        "arXiv id; the entry kept whole), each marker of its body linked to its entry with "
        "the citing sentence, page and section, and what that sentence says of the cited work "
        "(extends, compares, contrasts, uses, background). Built once, whatever its collections.",
    )
    def paper_references(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        def references_of(papers: PaperBatch, paper_id: str) -> PaperBuild[PaperReferences]:
            document = papers.store.read(["paper_document"], paper_id, PaperDocument)
            found = workflow.paper_references(document)
            return papers.paper(
                found,
                {
                    "references": len(found.records),
                    "untitled_references": len(found.untitled),
                    "citing_sentences": len(found.contexts),
                    "unresolved_markers": len(found.unresolved),
                },
            )

        return each_paper(context, None, references_of)

    return [paper_references]
