"""Per-collection citation graph: which papers of the collection cite which, and the works
they keep citing that it lacks, from each paper's `paper_references`."""

import dagster as dg

from litpipe.defs.partitions import collections
from litpipe.defs.steps import (
    Collection,
    all_partitions,
    step_asset,
)
from litpipe.defs.versions import CodeVersion, versioned_output
from litpipe.ingest import citation_matching, often_cited
from litpipe.schemas import CitationGraph, PaperReferences
from litpipe.text import counted
from litpipe.workflows import citation_graph as workflow


def build_citation_graph_assets() -> list[dg.AssetsDefinition]:
    @step_asset(
        CodeVersion(modules=(citation_matching, often_cited, workflow), output=CitationGraph),
        {},
        resources=("catalog", "artifacts"),
        partitions_def=collections,
        group_name="citation_graph",
        # Lineage only: the graph reads its members' references from their artifacts.
        deps=all_partitions("paper_references"),
        description="Which papers of the collection cite which (a reference matched by DOI, "
        "arXiv id, then title and year, to one paper alone), each edge with its citing "
        "sentences; the works at least two papers cite that the collection lacks (often "
        "cited, not in your library); the references naming several papers, left unmatched.",
    )
    def citation_graph(context: dg.AssetExecutionContext) -> dg.Output[CitationGraph]:
        collection = Collection.of(context)
        found = collection.outputs("paper_references", PaperReferences)
        graph = workflow.citation_graph(collection.name, found)
        context.log.info(
            f"{collection.name}: {counted(len(graph.edges), 'citation')} between its papers, "
            f"{counted(len(graph.often_cited), 'work')} often cited and not in it"
        )
        return versioned_output(
            graph,
            {
                "papers": len(graph.papers),
                "edges": len(graph.edges),
                "often_cited": len(graph.often_cited),
                "ambiguous_references": len(graph.ambiguous),
                "unresolved_markers": sum(len(paper.unresolved) for paper in graph.counts),
                "untitled_references": sum(len(paper.untitled) for paper in graph.counts),
            },
        )

    return [citation_graph]
