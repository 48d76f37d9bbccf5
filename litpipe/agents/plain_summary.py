"""The `plain_summary` agent: a collection's plain-language summary for a general audience, from
the same spine as the expert synthesis (theme, narrative, every insight) and its citations.

Each paper's contribution stays distinguishable and cited. The reply is checked as the expert
synthesis is: markers that are not among the expert synthesis' or the insights' citations are
removed, and an uncited paper gets an "Also in this collection" sentence from its best insight
(recorded, and counted apart by the coverage check).

Its offline engine (`litpipe.extractive.plain_summary.offline_plain_summary`) cannot rephrase,
so it writes the shortest faithful version instead: the collection's most central finding and,
per paper, its most central cited insight, verbatim, in a fixed plain frame.
"""

from __future__ import annotations

from litpipe.agents import synthesis
from litpipe.agents.asker import Asker
from litpipe.agents.base import Agent
from litpipe.agents.synthesis import (
    also_in_collection,
    checked_synthesis,
    covered,
    relationship_map,
    spine_insights,
)
from litpipe.extractive.plain_summary import PlainSummaryInput, offline_plain_summary
from litpipe.extractive.synthesis import WrittenReply
from litpipe.hashing import digest
from litpipe.llm.prompts import fence
from litpipe.schemas import Citation, RelationshipAnalysis, Synthesis
from litpipe.text import cited_sentences, marker, markers_in

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
    asker: Asker,
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
    reply = asker.ask(agent, inputs)
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
    engine = asker.engine(agent.name)
    return checked_synthesis(analysis, "plain", engine, expert.pattern, reply, checked)


def plain_summary_version(asker: Asker) -> str:
    """Hash of the plain writer (prompt, schema, code, route) and the checks it shares with the
    expert writer."""
    return digest(asker.version(PlainSummaryAgent()), synthesis.module_source())
