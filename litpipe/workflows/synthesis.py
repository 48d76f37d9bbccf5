"""The `synthesis` chain: a collection's expert synthesis written from its relationship analysis,
its answers and its comparative questions, every paper cited.

The pattern is chosen from the size of the evidence (`choose_pattern`): `stuff` gives the writer
the passages; `map_reduce` first summarizes each paper (the `paper_summary` agent, all papers
concurrently); `hierarchical` then clusters and summarizes those summaries level by level
(`summary_tree`, the `cluster_summary` agent). The `synthesis` agent writes from the result, and
its text is checked and fixed (`covered`) as `litpipe/agents/synthesis.py` says.
"""

from __future__ import annotations

import inspect
import logging
import sys
from functools import partial

from litpipe import citations
from litpipe.agents.base import ModelClient, engine_name, run_agent, run_batch, version
from litpipe.agents.cluster_summary import (
    ClusterSummaryAgent,
    ClusterSummaryInput,
    Member,
    cluster,
)
from litpipe.agents.paper_summary import PaperSummaryAgent, SummaryReply
from litpipe.agents.synthesis import (
    PaperMaterial,
    Resolver,
    SynthesisAgent,
    SynthesisInput,
    checked_synthesis,
    choose_pattern,
    collection_evidence,
    covered,
    evidence_fallbacks,
    paper_summary_inputs,
)
from litpipe.hashing import digest
from litpipe.llm.prompts import PromptLibrary
from litpipe.schemas import (
    CrossPaperQuestions,
    PaperAnswers,
    RelationshipAnalysis,
    RetrievedChunk,
    Synthesis,
)
from litpipe.settings import Settings
from litpipe.text import estimate_tokens, without_markers

log = logging.getLogger(__name__)


def evidence_resolver(evidence: list[RetrievedChunk]) -> Resolver:
    """`citations.citations` against `evidence`, the evidence grouped by paper once for the
    many texts a large collection's tree of summaries checks."""
    return partial(citations.cited_in, by_paper=citations.passages_by_paper(evidence))


def _without_invented(text: str, resolve: Resolver, writer: str) -> str:
    _, unresolved = resolve(text)
    if unresolved:
        log.warning("%s: removed markers citing no passage: %s", writer, ", ".join(unresolved))
    return without_markers(text, unresolved)


def paper_summaries(
    inputs: SynthesisInput,
    resolve: Resolver,
    settings: Settings,
    prompts: PromptLibrary,
    client: ModelClient | None,
) -> list[str]:
    """The map step: one summary per paper, in order, its invented markers removed."""
    batch = paper_summary_inputs(inputs)
    replies: list[SummaryReply] = run_batch(PaperSummaryAgent(), batch, settings, prompts, client)
    return [
        _without_invented(reply.summary, resolve, f"summary of {paper.paper_id}")
        for paper, reply in zip(inputs.papers, replies, strict=True)
    ]


def summary_tree(
    members: list[Member],
    theme: str,
    resolve: Resolver,
    settings: Settings,
    prompts: PromptLibrary,
    client: ModelClient | None,
) -> list[Member]:
    """The top of the tree: members clustered and summarized, level by level, until the level
    fits the writer's context, is one cluster, or clustering merges nothing more."""
    level = members
    while len(level) > 1:
        groups = cluster(level)
        if len(groups) == len(level):
            break
        batch = [ClusterSummaryInput(theme=theme, members=[level[i] for i in g]) for g in groups]
        replies = run_batch(ClusterSummaryAgent(), batch, settings, prompts, client)
        level = [
            Member(
                label="; ".join(member.label for member in inputs.members),
                papers=inputs.papers,
                summary=_without_invented(reply.summary, resolve, "cluster summary"),
            )
            for inputs, reply in zip(batch, replies, strict=True)
        ]
        text = "\n\n".join(member.summary for member in level)
        if estimate_tokens(text) <= settings.synthesis.context_tokens:
            break
    return level


def write_synthesis(
    analysis: RelationshipAnalysis,
    answers: dict[str, PaperAnswers],
    comparative: CrossPaperQuestions | None,
    titles: dict[str, str],
    settings: Settings,
    prompts: PromptLibrary,
    client: ModelClient | None,
) -> Synthesis:
    """The `synthesis` asset's work: the collection's expert synthesis, every paper cited."""
    evidence = collection_evidence(analysis, answers, comparative)
    evidence_tokens = estimate_tokens(citations.evidence_block(evidence))
    pattern = choose_pattern(evidence_tokens, len(analysis.papers), settings)
    evidence_of: dict[str, list[RetrievedChunk]] = {}
    for chunk in evidence:
        evidence_of.setdefault(chunk.paper_id, []).append(chunk)
    inputs = SynthesisInput(
        collection=analysis.collection,
        pattern=pattern,
        theme=analysis.theme,
        narrative=analysis.narrative,
        insights=analysis.insights,
        relationships=analysis.relationships,
        type_distribution=analysis.type_distribution,
        papers=[
            PaperMaterial(
                paper_id=paper,
                title=titles.get(paper, paper),
                evidence=evidence_of.get(paper, []),
            )
            for paper in analysis.papers
        ],
        comparative=comparative.answers if comparative else [],
        context_tokens=settings.synthesis.context_tokens,
    )
    resolve = evidence_resolver(evidence)
    if pattern != "stuff":
        summaries = paper_summaries(inputs, resolve, settings, prompts, client)
        inputs.papers = [
            paper.model_copy(update={"evidence": [], "summary": summary})
            for paper, summary in zip(inputs.papers, summaries, strict=True)
        ]
    if pattern == "hierarchical":
        members = [
            Member(label=p.title, papers=[p.paper_id], summary=p.summary) for p in inputs.papers
        ]
        inputs.groups = summary_tree(members, analysis.theme, resolve, settings, prompts, client)
    agent = SynthesisAgent()
    reply = run_agent(agent, inputs, settings, prompts, client)
    checked = covered(
        reply.text,
        resolve,
        analysis,
        titles,
        "synthesis",
        evidence_fallbacks(analysis.papers, evidence, analysis.theme),
        "no passage of it is among the evidence the writer was given",
    )
    engine = engine_name(settings.route(agent.name))
    return checked_synthesis(analysis, "expert", engine, pattern, reply, checked)


def synthesis_version(settings: Settings, prompts: PromptLibrary) -> str:
    """Hash of the three writers (prompt, schema, code, route), this chain and the pattern
    thresholds."""
    writers = (SynthesisAgent(), PaperSummaryAgent(), ClusterSummaryAgent())
    return digest(
        *(version(writer, settings, prompts) for writer in writers),
        inspect.getsource(sys.modules[__name__]),
        str(settings.synthesis.context_tokens),
        str(settings.synthesis.hierarchical_min_papers),
    )
