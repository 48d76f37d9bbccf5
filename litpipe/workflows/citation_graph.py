"""How a collection's papers cite each other: the graph of their references
(`citation_graph`, from each paper's `paper_references`), and the relationships its citing
sentences support (`cited_relationships`).

    graph = citation_graph(collection, {paper_id: paper_references(document), ...})
    relationships = cited_relationships(graph, {paper_id: chunks, ...})
"""

from __future__ import annotations

from collections.abc import Mapping

from litpipe.ingest.citation_matching import CollectionIndex
from litpipe.ingest.often_cited import often_cited
from litpipe.schemas import (
    CitationContext,
    CitationContexts,
    CitationEdge,
    CitationGraph,
    CitedRelationship,
    CitedRelationshipType,
    PaperChunks,
    PaperCitationCounts,
    PaperReferences,
    RetrievedChunk,
    UnmatchedReference,
)

# What a citing sentence's intent makes of the relationship; `uses` and `background` type none.
_TYPE_OF_INTENT: dict[str, CitedRelationshipType] = {
    "extends": "extension",
    "compares": "improvement",
    "contrasts": "contrast",
}
# The sentence that decides an edge's type: a contrast outweighs a comparison, which outweighs
# an extension (a paper that extends a method and outperforms it improves on it).
_DECIDING = ("contrasts", "compares", "extends", "uses", "background")


def citation_graph(collection: str, references: Mapping[str, PaperReferences]) -> CitationGraph:
    """The graph of the papers of `references` (by paper id, the collection's order): an edge
    for each record naming another of them, one paper alone; the works at least two cite and
    none of them is (`often_cited`); the records naming several papers, and what of each
    paper's references could not be used."""
    index = CollectionIndex(paper.paper for paper in references.values())
    edges: list[CitationEdge] = []
    ambiguous: list[UnmatchedReference] = []
    matches = {}
    for paper_id, paper in references.items():
        matched = index.matches(paper_id, paper.records)
        matches[paper_id] = matched
        for match in matched.matches:
            if match.ambiguous:
                ambiguous.append(
                    UnmatchedReference(
                        paper_id=paper_id,
                        reference_index=match.reference_index,
                        raw=paper.records[match.reference_index].raw,
                        candidates=match.ambiguous,
                        note=match.note,
                    )
                )
            if match.paper_id is None or match.rule is None:
                continue
            edges.append(
                CitationEdge(
                    citing=paper_id,
                    cited=match.paper_id,
                    reference_index=match.reference_index,
                    rule=match.rule,
                    contexts=[
                        context
                        for context in paper.contexts
                        if context.reference_index == match.reference_index
                    ],
                )
            )
    return CitationGraph(
        collection=collection,
        papers=list(references),
        edges=edges,
        often_cited=often_cited(
            {paper_id: paper.records for paper_id, paper in references.items()},
            matches,
            {
                paper_id: CitationContexts(paper_id=paper_id, contexts=paper.contexts)
                for paper_id, paper in references.items()
            },
        ),
        ambiguous=ambiguous,
        counts=[
            PaperCitationCounts(
                paper_id=paper_id,
                references=len(paper.records),
                untitled=[record.raw for record in paper.untitled],
                unresolved=[f"{marker.marker} ({marker.reason})" for marker in paper.unresolved],
            )
            for paper_id, paper in references.items()
        ],
    )


def cited_relationships(
    graph: CitationGraph, chunks: Mapping[str, PaperChunks]
) -> list[CitedRelationship]:
    """Each edge with a citing sentence as a relationship, typed by its deciding sentence
    (`_DECIDING`), and cited by the citing paper's chunk holding it (`chunks`, by paper id;
    none where the paper's chunks are not given or hold no such offset)."""
    found = []
    for edge in graph.edges:
        if not edge.contexts:
            continue
        context = min(edge.contexts, key=_deciding_rank)
        intent = context.intent
        label = intent.label if intent is not None else "background"
        kind = _TYPE_OF_INTENT.get(label, "complementary")
        reason = intent.why if intent is not None else "not classified"
        why = (
            f"{label}: {reason}"
            if kind != "complementary"
            else f"cited for its {'use' if label == 'uses' else 'background'} only ({reason}): "
            "no sentence of it supports a type"
        )
        found.append(
            CitedRelationship(
                citing=edge.citing,
                cited=edge.cited,
                type=kind,
                context=context,
                passage=_passage(chunks.get(edge.citing), context),
                why=why,
            )
        )
    return found


def _deciding_rank(context: CitationContext) -> tuple[int, int]:
    label = context.intent.label if context.intent is not None else "background"
    return _DECIDING.index(label), context.marker_start


def _passage(chunks: PaperChunks | None, context: CitationContext) -> RetrievedChunk | None:
    """The chunk holding the context's marker, as a passage a synthesis may cite."""
    for chunk in chunks.chunks if chunks is not None else []:
        if chunk.char_start <= context.marker_start < chunk.char_end:
            # Not retrieved: the passage the citing sentence sits in.
            fields = chunk.model_dump(include=set(RetrievedChunk.model_fields))
            return RetrievedChunk(**fields, fused_rank=0, fused_score=0.0)
    return None
