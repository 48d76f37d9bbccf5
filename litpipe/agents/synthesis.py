"""The `synthesis` agent: a collection's expert synthesis, in three parts, every paper cited.

The writer (`synthesis.method = "relational"`, X-Sum's pipeline 2) is given (1) the spine: the
theme, the narrative and every insight; (2) each paper's question-and-answer pairs, every answer
with its markers and cut to `synthesis.answer_chars` characters; (3) every relationship in
words: its type, its two papers (id and title) and its explanation. It expands the narrative
into the full text, keeping its argument, grounds each insight in its paper's answers, uses the
relationships for transitions and cites every paper. The flat writer (`synthesis.method =
"flat"`, X-Sum's pipeline 1: `FlatSynthesisAgent`, its own prompt `synthesis_flat`) is given
part 2 alone and writes prose from the answers, with no relationship analysis.

When the answers do not fit `synthesis.context_tokens`, part 2 changes (`choose_pattern`):
map-reduce writes one summary per paper (the `paper_summary` agent, all papers concurrently) and
gives those instead of the answers; for collections of `synthesis.hierarchical_min_papers` or
more, the paper summaries are clustered and summarized (the `cluster_summary` agent) level by
level until the top level fits, and part 2 holds the top clusters' summaries. Refine (chosen by
`synthesis.pattern = "refine"` only) writes one running summary, updated paper by paper (the
`refine_summary` agent, one call after another), and part 2 holds it. That chain is
`litpipe.workflows.synthesis.write_synthesis`; this module is the writers and their checks.

Whatever wrote it, the text is checked the same way: markers that resolve to no evidence passage
are removed, and a paper left uncited gets an "Also in this collection" sentence from its best
insight (verbatim, cited), so that every paper is cited and the fix shows. The papers cited only
that way are recorded (`Synthesis.appended`): the coverage check counts them apart from those
the writer cited, and warns. A paper with nothing to cite (no insight of it cites a passage and
no passage of it was given) is left out with that reason (`Synthesis.left_out`), beside the
collection's papers without answers: the coverage check names them, and warns.

The offline engine (`litpipe.extractive.synthesis.offline_synthesis`, for both writers) opens
with the collection's most central finding, then writes a paragraph per paper (or cluster), each
opening with its most central finding, then the comparative insights and the relationships by
type: every sentence the analysis' or the passages' own, or fixed template words naming two
papers at most.
"""

from __future__ import annotations

import inspect
import logging
import math
import sys
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, NamedTuple

from litpipe import citations
from litpipe.agents.base import Agent
from litpipe.extractive import synthesis as engine
from litpipe.extractive.answering import best_sentences
from litpipe.extractive.paper_summary import cited_insight
from litpipe.extractive.synthesis import (
    RELATION_VERBS,
    PaperMaterial,
    SynthesisInput,
    WrittenReply,
    citing_insights,
    insight_paper,
    offline_synthesis,
    quoted_title,
)
from litpipe.llm.prompts import fence
from litpipe.retrieval.text import tokenize
from litpipe.schemas import (
    Answer,
    Citation,
    CitedRelationship,
    CrossPaperQuestions,
    Insight,
    LeftOutPaper,
    PaperAnswers,
    Relationship,
    RelationshipAnalysis,
    RetrievedChunk,
    Synthesis,
    SynthesisPattern,
)
from litpipe.settings import SynthesisMethod, SynthesisSettings
from litpipe.text import (
    cite,
    estimate_tokens,
    marker,
    markers_in,
    overlap,
    sentences,
    without_markers,
)

log = logging.getLogger(__name__)

# A text's citations that resolve, and the markers that do not.
Resolver = Callable[[str], tuple[list[Citation], list[str]]]

ALSO_IN_COLLECTION = "Also in this collection"


def choose_pattern(
    material_tokens: int, papers: int, synthesis: SynthesisSettings
) -> SynthesisPattern:
    """`synthesis.pattern` when it names one; else (`auto`) `stuff` when the material of part 2
    (the answers) fits the writer's context, else `hierarchical` for collections of
    `synthesis.hierarchical_min_papers` or more, else `map_reduce`. Auto never picks `refine`:
    its calls run one after another and rewrite the first papers' summary once per later
    paper, where map-reduce's run at once and summarize each paper once."""
    if synthesis.pattern != "auto":
        return synthesis.pattern
    if material_tokens <= synthesis.context_tokens:
        return "stuff"
    return "hierarchical" if papers >= synthesis.hierarchical_min_papers else "map_reduce"


_PART_2_KINDS: dict[SynthesisPattern, str] = {
    "stuff": "the questions asked of each paper and their answers, each answer citing the "
    "passages it was written from",
    "map_reduce": "a summary of each paper, written from its evidence passages and citing them",
    "hierarchical": "summaries of groups of related papers (the top of a tree of summaries), "
    "each citing its papers",
    "refine": "one summary of all the papers, refined paper by paper, citing them",
}


# The shares of `SynthesisInput.context_tokens` the prompt's parts that grow with the collection
# take besides part 2 (the evidence, which `choose_pattern` keeps within it, or the summaries:
# the top of the tree within it too): the insights and the relationship map the most, the paper
# list and the narrative (which names every paper) the rest.
_INSIGHTS_SHARE = 0.2
_RELATIONSHIPS_SHARE = 0.15
_PAPERS_SHARE = 0.05
_NARRATIVE_SHARE = 0.1


def within(items: list[str], tokens: float, what: str, separator: str = "\n") -> list[str]:
    """The first `items` whose estimated tokens fit `tokens` in all, then, when some do not, a
    line saying how many `what` were left out: a collection of thousands of papers keeps its
    prompt in the writer's context, the rest of its material reaching the writer through its
    summaries, and every paper still cited by `covered`."""
    used = 0
    for index, item in enumerate(items):
        used += estimate_tokens(item + separator)
        if used > tokens:
            return [*items[:index], f"(... and {len(items) - index} more {what}: too many to show)"]
    return items


def spine_insights(insights: list[Insight], tokens: float = math.inf) -> str:
    """Every insight (that fits `tokens`), one per line, with its id, its paper(s) and its
    markers."""
    lines = [
        f"- {insight.insight_id} (paper {insight.paper_id or ', '.join(insight.papers)}): "
        f"{cited_insight(insight)}"
        for insight in insights
    ]
    return fence("\n".join(within(lines, tokens, "insights")) if lines else "(no insights)")


def relationship_map(
    insights: list[Insight], relationships: list[Relationship], tokens: float = math.inf
) -> str:
    """Every relationship (that fits `tokens`), one per line, between insight ids and their
    papers."""
    paper_of = {insight.insight_id: insight_paper(insight) for insight in insights}
    lines = [
        f"- {r.source} (paper {paper_of.get(r.source, '?')}) {r.type} {r.target} "
        f"(paper {paper_of.get(r.target, '?')}): {r.explanation}"
        for r in relationships
    ]
    shown = within(lines, tokens, "relationships")
    return fence("\n".join(shown) if lines else "(no relationships)")


def relationships_in_words(
    insights: list[Insight],
    relationships: list[Relationship],
    titles: Mapping[str, str],
    tokens: float = math.inf,
) -> str:
    """Every relationship (that fits `tokens`), one per line, in words: its type, its two
    papers by id and title, and its explanation."""
    paper_of = {insight.insight_id: insight_paper(insight) for insight in insights}

    def named(insight_id: str) -> str:
        paper = paper_of.get(insight_id, "?")
        return f"{paper} {quoted_title(titles.get(paper, paper))}"

    lines = [
        f"- {r.type}: {named(r.source)} {RELATION_VERBS[r.type]} {named(r.target)}: {r.explanation}"
        for r in relationships
    ]
    shown = within(lines, tokens, "relationships")
    return fence("\n".join(shown) if lines else "(no relationships)")


def clipped(text: str, chars: int) -> str:
    """`text` on one line, cut to `chars` characters (X-Sum's cut of an answer) at a word and
    never inside a marker, "…" marking the cut, then the markers of what was cut that the kept
    part does not hold: the sentence the cut ends in is cited by the marker after it, and the
    writer may still cite every passage the answer rests on."""
    flat = " ".join(text.split())
    if len(flat) <= chars:
        return flat
    cut = flat[:chars]
    if cut.rfind("[") > cut.rfind("]"):  # a marker the cut would split goes whole
        cut = cut[: cut.rfind("[")]
    elif flat[chars] != " " and " " in cut:  # so does a word
        cut = cut[: cut.rfind(" ")]
    kept = set(markers_in(cut))
    dropped = [found for found in markers_in(flat[len(cut) :]) if found not in kept]
    return " ".join([cut.rstrip(), "…", *(marker(*found) for found in dict.fromkeys(dropped))])


def question_answer_pairs(answers: list[Answer], chars: int) -> str:
    """Each answer after its question, cut to `chars`."""
    return "\n\n".join(f"Q: {a.question.text}\nA: {clipped(a.text, chars)}" for a in answers)


def part_2_blocks(inputs: SynthesisInput) -> list[str]:
    """Part 2 of the `stuff` pattern, a block per paper (its title and its question-and-answer
    pairs): the material whose size decides the pattern."""
    return [_paper_block(paper, "stuff", inputs.answer_chars) for paper in inputs.papers]


def _part_2(inputs: SynthesisInput) -> str:
    """The answers by paper, or the papers' summaries, or (`hierarchical`) the top clusters'
    summaries as fit the context: offline, a cluster's summary cites every paper it holds, so
    the top of a tree over thousands of papers does not fit whole, or (`refine`) the running
    summary."""
    if inputs.pattern == "refine":
        blocks = [
            f"### All papers, refined paper by paper\n{fence(g.summary)}" for g in inputs.groups
        ]
    elif inputs.pattern == "hierarchical":
        groups = [
            f"### Group {number}: papers {', '.join(group.papers)}\n"
            + fence(f"{group.label}\n\n{group.summary}")
            for number, group in enumerate(inputs.groups, start=1)
        ]
        blocks = within(groups, inputs.context_tokens, "groups", separator="\n\n")
    else:
        blocks = [_paper_block(p, inputs.pattern, inputs.answer_chars) for p in inputs.papers]
    if inputs.comparative:
        answers = question_answer_pairs(inputs.comparative, inputs.answer_chars)
        blocks.append(f"### Across papers: the comparative questions\n{fence(answers)}")
    return "\n\n".join(blocks)


def _paper_block(paper: PaperMaterial, pattern: SynthesisPattern, answer_chars: int) -> str:
    if pattern == "stuff":
        pairs = question_answer_pairs(paper.answers, answer_chars)
        body = f"Questions and answers:\n{fence(pairs or '(no answers)')}"
    else:
        body = f"Summary of its evidence:\n{fence(paper.summary)}"
    return f"### Paper {paper.paper_id}\nTitle:\n{fence(paper.title)}\n{body}"


# The agents a synthesis may call (the map and tree steps too): a step writing one needs a
# client if any of them is routed to a model.
SYNTHESIS_AGENTS = (
    "synthesis",
    "synthesis_flat",
    "paper_summary",
    "cluster_summary",
    "refine_summary",
)


def _paper_list(inputs: SynthesisInput) -> str:
    papers = [paper.paper_id for paper in inputs.papers]
    return ", ".join(within(papers, inputs.context_tokens * _PAPERS_SHARE, "papers", ", "))


class SynthesisAgent(Agent[SynthesisInput, WrittenReply]):
    """X-Sum's pipeline 2: the relationship analysis and the answers, in three parts."""

    name = "synthesis"
    offline = staticmethod(offline_synthesis)

    def prompt_values(self, inputs: SynthesisInput) -> dict[str, str]:
        distribution = ", ".join(f"{kind} {n}" for kind, n in inputs.type_distribution.items())
        budget = inputs.context_tokens
        narrative = [span.text for span in sentences(inputs.narrative)] or [inputs.narrative]
        return dict(
            papers=_paper_list(inputs),
            theme=fence(inputs.theme),
            narrative=fence(
                " ".join(within(narrative, budget * _NARRATIVE_SHARE, "sentences", " "))
            ),
            insights=spine_insights(inputs.insights, budget * _INSIGHTS_SHARE),
            part_2_kind=_PART_2_KINDS[inputs.pattern],
            part_2=_part_2(inputs),
            relationships=relationships_in_words(
                inputs.insights,
                inputs.relationships,
                inputs.titles(),
                budget * _RELATIONSHIPS_SHARE,
            ),
            type_distribution=distribution or "(none)",
        )


class FlatSynthesisAgent(Agent[SynthesisInput, WrittenReply]):
    """X-Sum's pipeline 1: every paper's answers in one prompt, prose, no relationship
    analysis. Offline there is no model to compare, so it writes as the relational writer."""

    name = "synthesis_flat"
    offline = staticmethod(offline_synthesis)

    def prompt_values(self, inputs: SynthesisInput) -> dict[str, str]:
        return dict(
            papers=_paper_list(inputs),
            part_2_kind=_PART_2_KINDS[inputs.pattern],
            part_2=_part_2(inputs),
        )


def synthesis_writer(method: SynthesisMethod) -> SynthesisAgent | FlatSynthesisAgent:
    """The writer `method` (`synthesis.method`) names."""
    return FlatSynthesisAgent() if method == "flat" else SynthesisAgent()


def best_insight(insights: list[Insight], theme: str) -> Insight | None:
    """The insight closest to the theme (by shared terms), the first one on a tie."""
    theme_terms = set(tokenize(theme))
    ranked = sorted(
        enumerate(insights),
        key=lambda item: (-overlap(set(tokenize(item[1].text)), theme_terms), item[0]),
    )
    return ranked[0][1] if ranked else None


class CoveredText(NamedTuple):
    """A writer's text as checked: the text, its citations, the papers the writer left uncited
    that it cites only through the sentences appended for them, and those it could not cite at
    all, with why."""

    text: str
    citations: list[Citation]
    appended: list[str]
    left_out: list[LeftOutPaper]


def also_in_collection(paper: str, titles: dict[str, str]) -> str:
    """What opens the sentence appended for a paper the writer left uncited."""
    return f"{ALSO_IN_COLLECTION}, {quoted_title(titles.get(paper, paper))}: "


# How a synthesis says what a citing sentence supports; `complementary` is said of none.
CITED_VERBS: dict[str, str] = {
    "extension": "extends",
    "improvement": "compares itself with",
    "contrast": "sets itself apart from",
}


def cited_relationship_sentences(
    cited: Sequence[CitedRelationship], titles: Mapping[str, str]
) -> list[str]:
    """A sentence for each relationship a citing sentence types (extension, improvement,
    contrast) and a passage of the citing paper holds: the two papers, the citing sentence
    quoted, and its citation `[citing:page]`. Nothing else may say that one paper extends
    another."""
    said = []
    for relation in cited:
        verb = CITED_VERBS.get(relation.type)
        if verb is None or relation.passage is None:
            continue
        citing = quoted_title(titles.get(relation.citing, relation.citing))
        target = quoted_title(titles.get(relation.cited, relation.cited))
        sentence = " ".join(relation.context.sentence.split())
        said.append(
            f"{citing} {verb} {target}, in its words: \u201c{sentence}\u201d "
            f"{marker(relation.citing, relation.context.page)}"
        )
    return said


def covered(
    text: str,
    resolver: Resolver,
    analysis: RelationshipAnalysis,
    titles: dict[str, str],
    writer: str,
    fallbacks: Mapping[str, str],
    without_fallback: str,
) -> CoveredText:
    """The text with an "Also in this collection" sentence for each paper it leaves uncited,
    then its unresolvable markers removed; its citations, the papers cited only by what was
    appended (the coverage check reports them apart: the writer did not cite them), and the
    papers still uncited, each with why (the coverage check names them: one paper with nothing
    to cite must not cost the collection its synthesis).

    A paper's sentence is its insight closest to the theme among those citing a passage, or,
    where none cites (a model's insights that cited nothing), its cited sentence in
    `fallbacks`; `without_fallback` says why a paper has none there."""
    found, _ = resolver(text)
    cited = {citation.paper_id for citation in found}
    missing = [paper for paper in analysis.papers if paper not in cited]
    additions: list[str] = []
    left_out: list[LeftOutPaper] = []
    citing = citing_insights(analysis.insights)
    for paper in missing:
        insight = best_insight(citing[paper], analysis.theme)
        sentence = cited_insight(insight) if insight is not None else fallbacks.get(paper)
        if sentence is None:
            reason = (
                f"nothing of it can be cited: no insight of it cites a passage, and "
                f"{without_fallback}"
            )
            log.warning("%s: paper %s is uncited: %s", writer, paper, reason)
            left_out.append(LeftOutPaper(paper_id=paper, reason=reason))
            continue
        additions.append(also_in_collection(paper, titles) + sentence)
    if additions:
        log.warning(
            "%s: papers %s were uncited; added an %r sentence for each",
            writer,
            ", ".join(missing),
            ALSO_IN_COLLECTION,
        )
        text = "\n\n".join([text.rstrip(), *additions])
    found, unresolved = resolver(text)
    if unresolved:
        log.warning(
            "%s: removed markers citing no passage it was given: %s", writer, ", ".join(unresolved)
        )
        text = without_markers(text, unresolved)
    now_cited = {citation.paper_id for citation in found}
    explained = {paper.paper_id for paper in left_out}
    left_out += [
        LeftOutPaper(
            paper_id=paper,
            reason=f"the sentence appended for it cites no passage the {writer} writer was given",
        )
        for paper in missing
        if paper not in now_cited and paper not in explained
    ]
    return CoveredText(text, found, [paper for paper in missing if paper in now_cited], left_out)


def checked_synthesis(
    analysis: RelationshipAnalysis,
    audience: Literal["expert", "plain"],
    engine: str,
    pattern: SynthesisPattern,
    reply: WrittenReply,
    checked: CoveredText,
) -> Synthesis:
    """A writer's reply as the collection's synthesis: its title on one line, its text as
    `covered` checked it, and the papers left out by the analysis and by the writer."""
    return Synthesis(
        collection=analysis.collection,
        audience=audience,
        engine=engine,
        pattern=pattern,
        title=" ".join(reply.title.split()),
        text=checked.text,
        citations=checked.citations,
        papers=analysis.papers,
        appended=checked.appended,
        left_out=[*analysis.left_out, *checked.left_out],
    )


def evidence_fallbacks(
    papers: list[str], evidence: list[RetrievedChunk], theme: str
) -> dict[str, str]:
    """Each paper's evidence sentence closest to the theme, verbatim and cited (its first
    passage's first sentence when none shares a term with it): what an uncited paper's appended
    sentence says when none of its insights cites a passage."""
    by_paper: dict[str, list[RetrievedChunk]] = defaultdict(list)
    for chunk in evidence:
        by_paper[chunk.paper_id].append(chunk)
    found = {}
    for paper in papers:
        own = by_paper[paper]
        best = best_sentences(theme, own, most=1)
        if best:
            found[paper] = best[0].cited
        elif own and (first := sentences(own[0].text)):
            found[paper] = cite(" ".join(first[0].text.split()), citations.chunk_marker(own[0]))
    return found


def collection_evidence(
    analysis: RelationshipAnalysis,
    answers: dict[str, PaperAnswers],
    comparative: CrossPaperQuestions | None,
) -> list[RetrievedChunk]:
    """Every passage an answer of the collection was written from, then those holding the
    citing sentences of its cited relationships, each once, in order."""
    every_answer = [
        a for paper in analysis.papers if paper in answers for a in answers[paper].answers
    ]
    every_answer += comparative.answers if comparative else []
    every_answer += [a for follow_up in analysis.follow_ups for a in follow_up.answers]
    chunks = {chunk.chunk_id: chunk for answer in every_answer for chunk in answer.evidence}
    for relation in analysis.cited_relationships:
        if relation.passage is not None:
            chunks.setdefault(relation.passage.chunk_id, relation.passage)
    return list(chunks.values())


def module_source() -> str:
    """This module's code, which the plain writer's checks share, and the engine's module they
    call (`citing_insights`): part of its version."""
    return inspect.getsource(sys.modules[__name__]) + inspect.getsource(engine)
