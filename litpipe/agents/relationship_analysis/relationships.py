"""The `relationships` agent: the relationship analysis of a collection, before any prose.

From all the insights at once: typed relationships between insights of different papers
(extension, contradiction, complementary, improvement, parallel), each with a short explanation;
an overall theme; and a 3-5 sentence narrative naming every paper. The prompt labels the papers
`P1`, `P2`, ... with their titles; the narrative names a paper by citing it with a marker taken
from that paper's insights (its title may be shortened), which is what `papers_named` checks.

Its offline engine (`litpipe.extractive.relationships.offline_analysis`) relates insights of
different papers whose stemmed terms overlap enough, types each with a heuristic that reads
words, not meaning (a contradiction only for opposite claims about the same terms), takes the
sentence most central to what the papers share as the theme, and builds the narrative from each
paper's best insight, verbatim, in fixed frames. Given an encoder, it weighs only each insight's
nearest neighbours (`neighbour_pairs`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.extractive.relationships import (
    PaperLabel,
    RelationsInput,
    RelationsReply,
    different_papers,
    neighbour_pairs,
    offline_analysis,
)
from litpipe.llm.prompts import fence
from litpipe.schemas import (
    RELATIONSHIP_TYPES,
    Citation,
    CitedRelationship,
    Insight,
    Relationship,
)
from litpipe.text import marker, markers_in, without_markers

if TYPE_CHECKING:
    from litpipe.retrieval.store import TextEncoder


class RelationshipDraft(BaseModel):
    """The relationship analysis as written: checked relationships, theme and narrative."""

    relationships: list[Relationship]
    theme: str
    narrative: str
    citations: list[Citation] = Field(description="The narrative's, from the insights' own.")


def narrative_citations(narrative: str, insights: list[Insight]) -> tuple[str, list[Citation]]:
    """The narrative with markers that no insight cites removed, and its citations: those of
    the insights, the chunks of every insight citing the same marker merged."""
    chunks: dict[str, list[str]] = {}
    known: dict[str, Citation] = {}
    for insight in insights:
        for citation in insight.citations:
            known.setdefault(citation.marker, citation)
            chunks.setdefault(citation.marker, [])
            chunks[citation.marker] += citation.chunk_ids
    written = list(dict.fromkeys(marker(paper, page) for paper, page in markers_in(narrative)))
    text = without_markers(narrative, [m for m in written if m not in known])
    return text, [
        known[m].model_copy(update={"chunk_ids": list(dict.fromkeys(chunks[m]))})
        for m in written
        if m in known
    ]


def checked_relationships(
    relationships: list[Relationship], insights: list[Insight]
) -> list[Relationship]:
    """Relationships between known insights of different papers, each pair of insights once."""
    by_id = {insight.insight_id: insight for insight in insights}
    seen: set[frozenset[str]] = set()
    kept = []
    for relationship in relationships:
        source, target = by_id.get(relationship.source), by_id.get(relationship.target)
        pair = frozenset((relationship.source, relationship.target))
        if source is None or target is None or not different_papers(source, target):
            continue
        if pair in seen:
            continue
        seen.add(pair)
        kept.append(relationship)
    return kept


def _labels(insights: list[Insight], titles: dict[str, str]) -> list[PaperLabel]:
    """Every paper, the collection's in their order, then any other an insight names."""
    papers = list(titles)
    papers += [p for i in insights for p in [i.paper_id, *i.papers] if p and p not in papers]
    papers = list(dict.fromkeys(papers))
    return [
        PaperLabel(label=f"P{index}", paper_id=paper, title=titles.get(paper, "") or paper)
        for index, paper in enumerate(papers, start=1)
    ]


class RelationshipsAgent(Agent[RelationsInput, RelationsReply]):
    name = "relationships"
    offline = staticmethod(offline_analysis)

    def prompt_values(self, inputs: RelationsInput) -> dict[str, str]:
        label = {paper.paper_id: paper.label for paper in inputs.papers}
        papers = papers_block(inputs.papers)
        insights = "\n".join(
            f"{insight.insight_id} ({_insight_papers(insight, label)}):\n{fence(insight.text)}"
            for insight in inputs.insights
        )
        citations = citations_block(inputs.citations, label)
        return dict(papers=papers, insights=insights, citations=citations)


def papers_block(papers: list[PaperLabel]) -> str:
    """The papers as the prompt names them: each label with its id and fenced title."""
    return "\n".join(
        f"{paper.label} = paper id {paper.paper_id}, title:\n{fence(paper.title)}"
        for paper in papers
    )


def citations_block(citations: Sequence[CitedRelationship], label: Mapping[str, str]) -> str:
    """How the papers cite each other as the prompt shows it: the citing and the cited paper's
    labels, the citing sentence fenced, its page and what it says of the cited work."""
    lines = [
        f"- {label.get(cited.citing, cited.citing)} cites {label.get(cited.cited, cited.cited)} "
        f"(page {cited.context.page}, {cited.type}):\n"
        + fence(" ".join(cited.context.sentence.split()))
        for cited in citations
    ]
    return "\n".join(lines) if lines else "(none: no paper of the collection cites another)"


def _insight_papers(insight: Insight, label: dict[str, str]) -> str:
    if insight.paper_id:
        return label[insight.paper_id]
    return (
        "comparative: " + ", ".join(label[p] for p in insight.papers)
        if insight.papers
        else "comparative"
    )


def relate(
    collection: str,
    insights: list[Insight],
    titles: dict[str, str],
    asker: Asker,
    nearest: tuple[TextEncoder, int] | None = None,
    citations: Sequence[CitedRelationship] = (),
) -> RelationshipDraft:
    """The relationship analysis of the collection whose papers `titles` lists (id -> title);
    with `nearest` (an encoder and `synthesis.relationship_neighbours`), the offline engine
    weighs only each insight's nearest neighbours, without it every pair (a small set's).
    `citations`: how the papers cite each other, a model's evidence for the types."""
    candidates = neighbour_pairs(insights, *nearest) if nearest is not None else None
    inputs = RelationsInput(
        collection=collection,
        papers=_labels(insights, titles),
        insights=insights,
        candidates=candidates,
        citations=list(citations),
    )
    reply = asker.ask(RelationshipsAgent(), inputs)
    return draft_from(reply, insights)


def draft_from(reply: RelationsReply, insights: list[Insight]) -> RelationshipDraft:
    """The analysis as written, checked against `insights`: relationships between known
    insights of different papers, the narrative's markers that no insight cites removed."""
    narrative, cited = narrative_citations(" ".join(reply.narrative.split()), insights)
    return RelationshipDraft(
        relationships=checked_relationships(reply.relationships, insights),
        theme=" ".join(reply.theme.split()),
        narrative=narrative,
        citations=cited,
    )


def type_distribution(relationships: list[Relationship]) -> dict[str, int]:
    """How many relationships of each type, every type listed (zeros included)."""
    counts = Counter(relationship.type for relationship in relationships)
    return {kind: counts[kind] for kind in RELATIONSHIP_TYPES}


def papers_named(narrative: str, citations: list[Citation], titles: dict[str, str]) -> set[str]:
    """The papers of `titles` the narrative names: cited with one of its markers, or by their
    full title."""
    cited = {citation.paper_id for citation in citations}
    folded = narrative.casefold()
    return {
        paper
        for paper, title in titles.items()
        if paper in cited or (title.strip() and " ".join(title.split()).casefold() in folded)
    }
