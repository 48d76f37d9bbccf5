"""The `synthesis` chain: a collection's expert synthesis written from its relationship analysis,
its answers and its comparative questions, every paper cited.

The pattern is chosen from the tokens of the answers (`choose_pattern`, counted with the
writer's model's tokenizer, or the embedder's): `stuff` gives the writer every paper's
question-and-answer pairs; `map_reduce` first summarizes each paper (the `paper_summary` agent,
all papers concurrently); `hierarchical` then clusters and summarizes those summaries level by
level (`summary_tree`, the `cluster_summary` agent); `refine` (when `synthesis.pattern` names it)
updates one running summary paper by paper (`refined_summary`, the `refine_summary` agent). The
writer `synthesis.method` names (`synthesis`, or `synthesis_flat`) writes from the result, and
its text is checked and fixed (`covered`) as `litpipe/agents/synthesis.py` says.
"""

from __future__ import annotations

import inspect
import logging
import sys
from collections.abc import Callable
from functools import partial

from litpipe import citations
from litpipe.agents.asker import Asker
from litpipe.agents.cluster_summary import ClusterSummaryAgent, cluster
from litpipe.agents.paper_summary import PaperSummaryAgent
from litpipe.agents.refine_summary import RefineSummaryAgent
from litpipe.agents.synthesis import (
    Resolver,
    checked_synthesis,
    choose_pattern,
    cited_relationship_sentences,
    collection_evidence,
    covered,
    evidence_fallbacks,
    part_2_blocks,
    synthesis_writer,
)
from litpipe.extractive.cluster_summary import ClusterSummaryInput, Member
from litpipe.extractive.paper_summary import SummaryReply
from litpipe.extractive.refine_summary import RefineInput
from litpipe.extractive.synthesis import PaperMaterial, SynthesisInput, paper_summary_inputs
from litpipe.hashing import digest
from litpipe.schemas import (
    CrossPaperQuestions,
    PaperAnswers,
    RelationshipAnalysis,
    RetrievedChunk,
    Synthesis,
)
from litpipe.settings import HomePaths, IngestSettings, SynthesisSettings
from litpipe.text import without_markers
from litpipe.workflows.tokens import token_counter, tokens_up_to

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


def paper_summaries(inputs: SynthesisInput, resolve: Resolver, asker: Asker) -> list[str]:
    """The map step: one summary per paper, in order, its invented markers removed."""
    batch = paper_summary_inputs(inputs)
    replies: list[SummaryReply] = asker.ask_each(PaperSummaryAgent(), batch)
    return [
        _without_invented(reply.summary, resolve, f"summary of {paper.paper_id}")
        for paper, reply in zip(inputs.papers, replies, strict=True)
    ]


def summary_tree(
    members: list[Member],
    theme: str,
    resolve: Resolver,
    context_tokens: int,
    asker: Asker,
    count: Callable[[str], int],
) -> list[Member]:
    """The top of the tree: members clustered and summarized, level by level, until the level
    fits the writer's context (`context_tokens`, as `count` counts them), is one cluster, or
    clustering merges nothing more."""
    level = members
    while len(level) > 1:
        groups = cluster(level)
        if len(groups) == len(level):
            break
        batch = [ClusterSummaryInput(theme=theme, members=[level[i] for i in g]) for g in groups]
        replies = asker.ask_each(ClusterSummaryAgent(), batch)
        level = [
            Member(
                label="; ".join(member.label for member in inputs.members),
                papers=inputs.papers,
                summary=_without_invented(reply.summary, resolve, "cluster summary"),
            )
            for inputs, reply in zip(batch, replies, strict=True)
        ]
        summaries = (member.summary for member in level)
        if tokens_up_to(summaries, count, context_tokens) <= context_tokens:
            break
    return level


def refined_summary(inputs: SynthesisInput, resolve: Resolver, asker: Asker) -> Member:
    """The refine pattern: one summary of every paper, updated paper by paper in order, each
    step's invented markers removed before the next reads it."""
    agent = RefineSummaryAgent()
    running = ""
    summarized: list[str] = []
    for paper, summary_input in zip(inputs.papers, paper_summary_inputs(inputs), strict=True):
        step = RefineInput(
            running=running,
            summarized=summarized,
            paper=summary_input,
            answers=paper.answers,
            answer_chars=inputs.answer_chars,
        )
        reply = asker.ask(agent, step)
        running = _without_invented(reply.summary, resolve, f"summary refined by {paper.paper_id}")
        summarized = [*summarized, paper.paper_id]
    return Member(label=inputs.theme or inputs.collection, papers=summarized, summary=running)


def write_synthesis(
    analysis: RelationshipAnalysis,
    answers: dict[str, PaperAnswers],
    comparative: CrossPaperQuestions | None,
    titles: dict[str, str],
    synthesis: SynthesisSettings,
    ingest: IngestSettings,
    paths: HomePaths,
    asker: Asker,
) -> Synthesis:
    """The `synthesis` asset's work: the collection's expert synthesis, every paper cited (its
    material measured in the writer's tokens: `token_counter`, which falls back to the
    embedder's of `ingest`, its models under `paths`)."""
    evidence = collection_evidence(analysis, answers, comparative)
    evidence_of: dict[str, list[RetrievedChunk]] = {}
    for chunk in evidence:
        evidence_of.setdefault(chunk.paper_id, []).append(chunk)
    answers_of = {
        paper: list(answers[paper].answers) for paper in analysis.papers if paper in answers
    }
    for follow_up in analysis.follow_ups:
        answers_of.setdefault(follow_up.paper_id, []).extend(follow_up.answers)
    writer = synthesis_writer(synthesis.method)
    inputs = SynthesisInput(
        collection=analysis.collection,
        # What `stuff` would give the writer is measured first; the chosen pattern replaces it.
        pattern="stuff",
        theme=analysis.theme,
        narrative=analysis.narrative,
        insights=analysis.insights,
        relationships=analysis.relationships,
        type_distribution=analysis.type_distribution,
        papers=[
            PaperMaterial(
                paper_id=paper,
                title=titles.get(paper, paper),
                answers=answers_of.get(paper, []),
                evidence=evidence_of.get(paper, []),
            )
            for paper in analysis.papers
        ],
        comparative=comparative.answers if comparative else [],
        answer_chars=synthesis.answer_chars,
        context_tokens=synthesis.context_tokens,
    )
    count = token_counter(asker.route(writer.name), ingest, paths)
    budget = synthesis.context_tokens
    material_tokens = tokens_up_to(part_2_blocks(inputs), count, budget)
    pattern = choose_pattern(material_tokens, len(analysis.papers), synthesis)
    inputs.pattern = pattern
    resolve = evidence_resolver(evidence)
    if pattern in ("map_reduce", "hierarchical"):
        summaries = paper_summaries(inputs, resolve, asker)
        inputs.papers = [
            paper.model_copy(update={"evidence": [], "summary": summary})
            for paper, summary in zip(inputs.papers, summaries, strict=True)
        ]
    if pattern == "hierarchical":
        members = [
            Member(label=p.title, papers=[p.paper_id], summary=p.summary) for p in inputs.papers
        ]
        inputs.groups = summary_tree(members, analysis.theme, resolve, budget, asker, count)
    if pattern == "refine":
        inputs.groups = [refined_summary(inputs, resolve, asker)]
    reply = asker.ask(writer, inputs)
    # What a citing sentence supports is said from it alone, whatever wrote the rest.
    cited = cited_relationship_sentences(analysis.cited_relationships, titles)
    checked = covered(
        "\n\n".join([reply.text.rstrip(), " ".join(cited)]) if cited else reply.text,
        resolve,
        analysis,
        titles,
        "synthesis",
        evidence_fallbacks(analysis.papers, evidence, analysis.theme),
        "no passage of it is among the evidence the writer was given",
    )
    engine = asker.engine(writer.name)
    return checked_synthesis(analysis, "expert", engine, pattern, reply, checked)


def given_chunks(
    answers: dict[str, PaperAnswers],
    comparative: CrossPaperQuestions,
    analysis: RelationshipAnalysis,
) -> dict[str, RetrievedChunk]:
    """Every passage a writer was given, by chunk id: the answers' evidence, and the passages
    of the analysis' citing sentences."""
    every_answer = [a for paper in answers.values() for a in paper.answers]
    given = {
        chunk.chunk_id: chunk
        for answer in [*every_answer, *comparative.answers]
        for chunk in answer.evidence
    }
    for relation in analysis.cited_relationships:
        if relation.passage is not None:
            given.setdefault(relation.passage.chunk_id, relation.passage)
    return given


def given_passages(
    answers: dict[str, PaperAnswers],
    comparative: CrossPaperQuestions,
    analysis: RelationshipAnalysis,
) -> dict[str, str]:
    """The texts of `given_chunks`, by chunk id: what a written synthesis is graded against."""
    given = given_chunks(answers, comparative, analysis)
    return {chunk_id: chunk.text for chunk_id, chunk in given.items()}


def synthesis_version(synthesis: SynthesisSettings, asker: Asker) -> str:
    """Hash of the writers (prompt, schema, code, route), this chain, the pattern thresholds
    and the settings that shape the writer's prompt."""
    writers = (
        synthesis_writer(synthesis.method),
        PaperSummaryAgent(),
        ClusterSummaryAgent(),
        RefineSummaryAgent(),
    )
    return digest(
        *(asker.version(writer) for writer in writers),
        inspect.getsource(sys.modules[__name__]),
        str(synthesis.context_tokens),
        str(synthesis.hierarchical_min_papers),
        synthesis.method,
        synthesis.pattern,
        str(synthesis.answer_chars),
    )
