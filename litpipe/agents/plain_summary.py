"""The `plain_summary` agent: a collection's plain-language summary for a general audience, from
the same spine as the expert synthesis (theme, narrative, every insight) and its citations.

Each paper's contribution stays distinguishable and cited. The reply is checked as the expert
synthesis is: markers that are not among the expert synthesis' or the insights' citations are
removed, and an uncited paper gets an "Also in this collection" sentence from its best insight
(recorded, and counted apart by the coverage check).

The offline engine cannot rephrase, so it cannot remove jargon: it writes the shortest faithful
version instead, the collection's most central finding and, per paper, its most central insight
that cites a passage, never one restating its title (verbatim, cited), in a fixed plain frame
("One study found: ..."), the marker naming the paper.
"""

from __future__ import annotations

from pydantic import BaseModel

from litpipe.agents import synthesis
from litpipe.agents.base import Agent, StructuredClient, engine_name, run_agent, version
from litpipe.agents.paper_summary import cited_insight
from litpipe.agents.synthesis import (
    WrittenReply,
    also_in_collection,
    central_findings,
    checked_synthesis,
    cited_units,
    citing_insights,
    covered,
    most_central,
    relationship_map,
    spine_insights,
)
from litpipe.hashing import digest
from litpipe.llm.prompts import PromptLibrary, fence
from litpipe.schemas import Citation, Insight, Relationship, RelationshipAnalysis, Synthesis
from litpipe.settings import Settings
from litpipe.text import cited_sentences, marker, markers_in


class PlainSummaryInput(BaseModel):
    collection: str
    theme: str
    narrative: str
    papers: list[str]
    titles: dict[str, str]
    insights: list[Insight]
    relationships: list[Relationship]
    expert_text: str


def offline_plain_summary(inputs: PlainSummaryInput) -> WrittenReply:
    """The collection's most central finding, then per other paper its most central cited
    insight in a fixed plain frame."""
    findings = {}
    citing = citing_insights(inputs.insights)
    for paper in inputs.papers:
        own = [unit for insight in citing[paper] for unit in cited_units(cited_insight(insight))]
        title = inputs.titles.get(paper, paper)
        ranked = central_findings(own, inputs.theme, [title])
        if ranked:
            findings[paper] = ranked[0]
    opening = most_central(list(findings.values()), inputs.theme)
    count = len(inputs.papers)
    lines = [
        f"What these {count} studies have most in common: {opening}"
        if opening
        else f"These {count} studies: {inputs.theme}"
    ]
    # The opening's paper is introduced by it: its finding is not said twice.
    rest = [finding for finding in findings.values() if finding != opening]
    for number, finding in enumerate(rest):
        lines.append(f"{'One study' if number == 0 else 'Another study'} found: {finding}")
    title = synthesis.offline_title(inputs.collection, count)
    return WrittenReply(
        title=f"In plain words: {title[:1].lower()}{title[1:]}", text="\n\n".join(lines)
    )


# The agents a plain summary may call: a step writing one needs a client if any is routed.
PLAIN_SUMMARY_AGENTS = ("plain_summary",)


class PlainSummaryAgent(Agent[PlainSummaryInput, WrittenReply]):
    name = "plain_summary"
    reply_tokens = 1024
    offline = staticmethod(offline_plain_summary)

    def prompt_values(self, inputs: PlainSummaryInput) -> dict[str, str]:
        titles = "\n".join(f"{p}: {inputs.titles.get(p, p)}" for p in inputs.papers)
        return dict(
            papers=", ".join(inputs.papers),
            titles=fence(titles),
            theme=fence(inputs.theme),
            narrative=fence(inputs.narrative),
            insights=spine_insights(inputs.insights),
            relationships=relationship_map(inputs.insights, inputs.relationships),
            expert=fence(inputs.expert_text),
        )


def known_citations(text: str, known: dict[str, Citation]) -> tuple[list[Citation], list[str]]:
    """The distinct citations of `text` among `known` (by marker), in order of first use, and
    the markers that are not."""
    found: dict[str, Citation] = {}
    unknown: list[str] = []
    for paper_id, page in markers_in(text):
        written = marker(paper_id, page)
        if written in known:
            found.setdefault(written, known[written])
        elif written not in unknown:
            unknown.append(written)
    return list(found.values()), unknown


def expert_fallbacks(expert_text: str, titles: dict[str, str]) -> dict[str, str]:
    """Each paper's first sentence of the expert synthesis that cites it (without the words
    introducing it, where the expert synthesis appended it itself): what an uncited paper's
    appended sentence says when none of its insights cites a passage."""
    found: dict[str, str] = {}
    for sentence in cited_sentences(expert_text):
        for paper, _ in markers_in(sentence):
            found.setdefault(paper, sentence.removeprefix(also_in_collection(paper, titles)))
    return found


def write_plain_summary(
    analysis: RelationshipAnalysis,
    expert: Synthesis,
    titles: dict[str, str],
    settings: Settings,
    prompts: PromptLibrary,
    client: StructuredClient | None,
) -> Synthesis:
    """The `plain_summary` asset's work: the plain-language summary, every paper cited with a
    citation of the expert synthesis or of an insight."""
    inputs = PlainSummaryInput(
        collection=analysis.collection,
        theme=analysis.theme,
        narrative=analysis.narrative,
        papers=analysis.papers,
        titles={paper: titles.get(paper, paper) for paper in analysis.papers},
        insights=analysis.insights,
        relationships=analysis.relationships,
        expert_text=expert.text,
    )
    agent = PlainSummaryAgent()
    reply = run_agent(agent, inputs, settings, prompts, client)
    known = {c.marker: c for c in expert.citations}
    for insight in analysis.insights:
        known.update((c.marker, c) for c in insight.citations if c.marker not in known)
    checked = covered(
        reply.text,
        lambda written: known_citations(written, known),
        analysis,
        titles,
        "plain",
        expert_fallbacks(expert.text, titles),
        "the expert synthesis has no sentence citing it",
    )
    engine = engine_name(settings.route(agent.name))
    return checked_synthesis(analysis, "plain", engine, expert.pattern, reply, checked)


def plain_summary_version(settings: Settings, prompts: PromptLibrary) -> str:
    """Hash of the plain writer (prompt, schema, code, route) and the checks it shares with the
    expert writer."""
    return digest(version(PlainSummaryAgent(), settings, prompts), synthesis.module_source())
