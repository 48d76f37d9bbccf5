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

The offline engine opens with one theme sentence, the collection's most central finding, then
writes a paragraph per paper (its insights and the evidence sentences MMR picks, or its summary,
or a cluster's summary), each opening with its most central finding, then a relationship with an
earlier paper in fixed words ("\\"B\\" extends \\"A\\": <explanation>"), then the comparative
insights and the relationships by type. Every sentence is the analysis' or the passages' own
(each citing its own paper), or fixed template words naming two papers at most: no sentence
lists the collection's papers (`central_findings`, `most_central`).
"""

from __future__ import annotations

import inspect
import logging
import math
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

from litpipe import citations
from litpipe.agents.answering import best_sentences
from litpipe.agents.base import Agent
from litpipe.agents.cluster_summary import (
    Member,
)
from litpipe.agents.paper_summary import (
    MIN_SENTENCE_TERMS,
    PaperSummaryInput,
    cite,
    cited_insight,
    offline_paper_summary,
)
from litpipe.llm.prompts import fence
from litpipe.retrieval.centrality import (
    CENTRAL_SAMPLE,
    closest_to_centroid,
    query_focused_lexrank,
)
from litpipe.retrieval.text import tokenize
from litpipe.schemas import (
    RELATIONSHIP_TYPES,
    Answer,
    Citation,
    CrossPaperQuestions,
    Insight,
    LeftOutPaper,
    PaperAnswers,
    Relationship,
    RelationshipAnalysis,
    RelationshipType,
    RetrievedChunk,
    Synthesis,
    SynthesisPattern,
)
from litpipe.settings import Settings
from litpipe.text import (
    cited_sentences,
    cites_other_work,
    estimate_tokens,
    marker,
    markers_in,
    overlap,
    sentences,
    strip_markers,
    whole_sentence,
    without_markers,
)

log = logging.getLogger(__name__)

# A text's citations that resolve, and the markers that do not.
Resolver = Callable[[str], tuple[list[Citation], list[str]]]

# The fixed words of a transition: "<source's paper> <verb> <target's paper>: <explanation>".
RELATION_VERBS: dict[RelationshipType, str] = {
    "extension": "extends",
    "contradiction": "contradicts",
    "complementary": "complements",
    "improvement": "improves on",
    "parallel": "parallels",
}
ALSO_IN_COLLECTION = "Also in this collection"
# Relationships the offline text lists per type.
LISTED_PER_TYPE = 5


def choose_pattern(material_tokens: int, papers: int, settings: Settings) -> SynthesisPattern:
    """`synthesis.pattern` when it names one; else (`auto`) `stuff` when the material of part 2
    (the answers) fits the writer's context, else `hierarchical` for collections of
    `synthesis.hierarchical_min_papers` or more, else `map_reduce`. Auto never picks `refine`:
    its calls run one after another and rewrite the first papers' summary once per later
    paper, where map-reduce's run at once and summarize each paper once."""
    if settings.synthesis.pattern != "auto":
        return settings.synthesis.pattern
    if material_tokens <= settings.synthesis.context_tokens:
        return "stuff"
    return "hierarchical" if papers >= settings.synthesis.hierarchical_min_papers else "map_reduce"


class PaperMaterial(BaseModel):
    """What part 2 holds of one paper: its question-and-answer pairs (`stuff`) or its summary
    (`map_reduce`); its passages are what the map step and the offline engine write from."""

    paper_id: str
    title: str
    answers: list[Answer] = Field(default_factory=list)
    evidence: list[RetrievedChunk] = Field(default_factory=list)
    summary: str = ""


class SynthesisInput(BaseModel):
    collection: str
    pattern: SynthesisPattern
    theme: str
    narrative: str
    insights: list[Insight]
    relationships: list[Relationship]
    type_distribution: dict[str, int]
    papers: list[PaperMaterial] = Field(description="In the analysis' order.")
    groups: list[Member] = Field(
        default_factory=list,
        description="`hierarchical`: the top clusters' summaries; `refine`: one, the running "
        "summary of every paper.",
    )
    comparative: list[Answer] = Field(default_factory=list)
    answer_chars: int = Field(
        default=500, description="`synthesis.answer_chars`: where each answer of part 2 is cut."
    )
    context_tokens: int = Field(
        description="`synthesis.context_tokens`: what the prompt's parts that grow with the "
        "collection (paper list, narrative, insights, part 2, relationships) may take in all."
    )

    def titles(self) -> dict[str, str]:
        return {paper.paper_id: paper.title for paper in self.papers}


class WrittenReply(BaseModel):
    title: str = Field(description="A short title for the whole text.")
    text: str = Field(description="Markdown, citing as [paper_id:page].")


_PART_2_KINDS: dict[SynthesisPattern, str] = {
    "stuff": "the questions asked of each paper and their answers, each answer citing the "
    "passages it was written from",
    "map_reduce": "a summary of each paper, written from its evidence passages and citing them",
    "hierarchical": "summaries of groups of related papers (the top of a tree of summaries), "
    "each citing its papers",
    "refine": "one summary of all the papers, refined paper by paper, citing them",
}


def _insight_paper(insight: Insight) -> str:
    return insight.paper_id or (insight.papers[0] if insight.papers else "")


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
    paper_of = {insight.insight_id: _insight_paper(insight) for insight in insights}
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
    paper_of = {insight.insight_id: _insight_paper(insight) for insight in insights}

    def named(insight_id: str) -> str:
        paper = paper_of.get(insight_id, "?")
        return f"{paper} {_quoted(titles.get(paper, paper))}"

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


def _quoted(title: str) -> str:
    return f'"{" ".join(title.split())}"'


def _relation_sentence(
    relationship: Relationship, paper_of: dict[str, str], titles: dict[str, str]
) -> str:
    source_paper, target_paper = paper_of[relationship.source], paper_of[relationship.target]
    source = _quoted(titles.get(source_paper, source_paper))
    target = _quoted(titles.get(target_paper, target_paper))
    return f"{source} {RELATION_VERBS[relationship.type]} {target}: {relationship.explanation}"


def _transition(
    current: set[str],
    earlier: set[str],
    paper_of: dict[str, str],
    relationships_of: dict[str, list[tuple[int, Relationship]]],
    titles: dict[str, str],
) -> str | None:
    """The first relationship between a paper of this section and one written before it
    (`relationships_of`: each paper's relationships with their places in the analysis)."""
    touching = sorted(
        {index: r for p in current for index, r in relationships_of.get(p, [])}.items()
    )
    for _, relationship in touching:
        ends = {paper_of.get(relationship.source), paper_of.get(relationship.target)}
        if ends & current and ends & earlier and not ends - current - earlier:
            return _relation_sentence(relationship, paper_of, titles)
    return None


def _sections(inputs: SynthesisInput) -> list[tuple[set[str], str, str]]:
    """(papers, heading, paragraph) of the offline text's sections, in order."""
    if inputs.pattern in ("hierarchical", "refine"):
        return [(set(g.papers), g.label, g.summary) for g in inputs.groups]
    if inputs.pattern == "map_reduce":
        return [({p.paper_id}, p.title, p.summary) for p in inputs.papers]
    return [
        ({p.paper_id}, p.title, offline_paper_summary(summary_input).summary)
        for p, summary_input in zip(inputs.papers, paper_summary_inputs(inputs), strict=True)
    ]


def paper_summary_inputs(inputs: SynthesisInput) -> list[PaperSummaryInput]:
    """What the map step summarizes of each paper, in order: its evidence and insights."""
    insights_of: dict[str, list[str]] = {}
    for insight in inputs.insights:
        insights_of.setdefault(insight.paper_id, []).append(cited_insight(insight))
    return [
        PaperSummaryInput(
            paper_id=paper.paper_id,
            title=paper.title,
            theme=inputs.theme,
            insights=insights_of.get(paper.paper_id, []),
            evidence=paper.evidence,
        )
        for paper in inputs.papers
    ]


def _relationships_by_type(inputs: SynthesisInput, titles: dict[str, str]) -> list[str]:
    """Per type, one relationship per pair of papers, the first `LISTED_PER_TYPE` of them: a
    large collection has hundreds, which the analysis and the HTML page's map hold in full."""
    paper_of = {insight.insight_id: _insight_paper(insight) for insight in inputs.insights}
    known = [r for r in inputs.relationships if r.source in paper_of and r.target in paper_of]
    lines: list[str] = []
    for kind in RELATIONSHIP_TYPES:
        first_of_pair: dict[tuple[str, str], Relationship] = {}
        for r in known:
            if r.type == kind:
                first_of_pair.setdefault((paper_of[r.source], paper_of[r.target]), r)
        of_kind = list(first_of_pair.values())
        if not of_kind:
            continue
        lines.append(f"### {kind.capitalize()}")
        lines += [f"- {_relation_sentence(r, paper_of, titles)}" for r in of_kind[:LISTED_PER_TYPE]]
        if len(of_kind) > LISTED_PER_TYPE:
            lines.append(f"- … and {len(of_kind) - LISTED_PER_TYPE} more pairs of papers ({kind}).")
    return ["## Relationships", *lines] if lines else []


# A sentence sharing this much of its terms with a paper's title (cosine of the term sets) says
# what the title says (an answer that found the title page): it is not the paper's finding.
TITLE_OVERLAP = 0.5


class _Sentence(NamedTuple):
    """A sentence as the offline writers weigh it: as written, without its markers, its terms."""

    text: str
    plain: str
    terms: list[str]

    @classmethod
    def of(cls, text: str) -> _Sentence:
        plain = " ".join(strip_markers(text).split())
        return cls(text, plain, tokenize(plain))


def _restates_title(sentence: _Sentence, titles: list[tuple[str, set[str]]]) -> bool:
    """Whether the sentence is one of the titles (each as text and terms), or mostly one's
    words."""
    flat = sentence.plain.casefold()
    return any(
        title_terms
        and (flat.startswith(text) or overlap(set(sentence.terms), title_terms) >= TITLE_OVERLAP)
        for text, title_terms in titles
    )


# A bracket closing a cited unit and a capital opening the next: the offline texts join their
# cited sentences with a space, and one without a full stop (a heading an answer quoted) runs
# into the next when split as prose.
_NEXT_UNIT = re.compile(r"(?<=\])\s+(?=[A-Z])")
_LAST_BRACKET = re.compile(r"\[[^\[\]\n]*\][.!?]?$")


def cited_units(text: str) -> list[str]:
    """The sentences of `text`, each cited one ended at its marker: "Heading [a:2] Here, we
    found X [a:6]." is two."""
    units: list[str] = []
    for sentence in cited_sentences(text):
        pieces = _NEXT_UNIT.split(sentence)
        units.append(pieces[0])
        for piece in pieces[1:]:
            ending = _LAST_BRACKET.search(units[-1])
            if ending and markers_in(ending.group()):
                units.append(piece)
            else:
                units[-1] += f" {piece}"
    return units


def _is_finding(sentence: _Sentence) -> bool:
    """A cited, whole sentence (not a heading an answer quoted, nor the tail of one a passage
    cut: "showed that ..."), long enough to say something, and the paper's own: one citing
    other work ("X has been used (Smith et al. 2008)") reports that work's finding."""
    return (
        bool(markers_in(sentence.text))
        and whole_sentence(sentence.plain)
        and len(sentence.terms) >= MIN_SENTENCE_TERMS
        and not cites_other_work(sentence.plain)
    )


def central_findings(candidates: list[str], theme: str, titles: list[str]) -> list[str]:
    """A paper's (or a cluster's) sentences, each once, its most central finding first
    (LexRank over its findings, `_is_finding`, biased towards the theme; over its cited
    sentences when none is one), then the rest in their order; those restating a title left
    out, unless nothing else is left."""
    distinct = [
        _Sentence.of(text)
        for text in dict.fromkeys(" ".join(c.split()) for c in candidates if c.strip())
    ]
    title_forms = [
        (" ".join(title.split()).casefold().rstrip("."), set(tokenize(title))) for title in titles
    ]
    kept = [s for s in distinct if not _restates_title(s, title_forms)] or distinct
    cited = [i for i, s in enumerate(kept) if _is_finding(s)] or [
        i for i, s in enumerate(kept) if markers_in(s.text)
    ]
    if not cited:
        return [s.text for s in kept]
    lead = cited[_most_central([kept[i].terms for i in cited], theme)]
    return [kept[lead].text, *(s.text for i, s in enumerate(kept) if i != lead)]


def _most_central(terms: list[list[str]], theme: str) -> int:
    """The index of the most central sentence (given by its terms, not none): LexRank biased
    towards the theme over the `CENTRAL_SAMPLE` sentences closest to their centroid (all of
    them, when fewer), so that a cluster or collection of thousands costs linear time."""
    sample = closest_to_centroid(terms, CENTRAL_SAMPLE)
    scores = query_focused_lexrank([terms[i] for i in sample], tokenize(theme))
    return sample[max(range(len(sample)), key=lambda i: (scores[i], -i))]


def most_central(findings: list[str], theme: str) -> str | None:
    """The most central of the findings (each paper's own), `_most_central`."""
    if not findings:
        return None
    return findings[_most_central([tokenize(strip_markers(f)) for f in findings], theme)]


def _section_titles(papers: set[str], titles: dict[str, str]) -> list[str]:
    return [titles[paper] for paper in sorted(papers) if paper in titles]


def offline_synthesis(inputs: SynthesisInput) -> WrittenReply:
    """The collection's most central finding, a section per paper (or cluster) opening with
    its most central finding and then its transition, the comparative insights, and the
    relationships by type."""
    titles = inputs.titles()
    sections = [
        (
            papers,
            heading,
            central_findings(cited_units(paragraph), inputs.theme, _section_titles(papers, titles)),
        )
        for papers, heading, paragraph in _sections(inputs)
    ]
    leads = [found[0] for _, _, found in sections if found and _is_finding(_Sentence.of(found[0]))]
    opening = most_central(leads, inputs.theme)
    parts = [opening] if opening else []
    paper_of = {insight.insight_id: _insight_paper(insight) for insight in inputs.insights}
    relationships_of: dict[str, list[tuple[int, Relationship]]] = {}
    for index, relationship in enumerate(inputs.relationships):
        for paper in {paper_of.get(relationship.source), paper_of.get(relationship.target)}:
            if paper is not None:
                relationships_of.setdefault(paper, []).append((index, relationship))
    earlier: set[str] = set()
    for papers, heading, found in sections:
        if opening is not None and found[:1] == [opening]:
            # Said once: the opening introduced this section's papers by that finding.
            found, opening = found[1:], None
        parts.append(f"## {' '.join(heading.split())}")
        transition = _transition(papers, earlier, paper_of, relationships_of, titles)
        # The section opens with its finding; the transition, naming two papers, follows it.
        paragraph = " ".join([*found[:1], *([transition] if transition else []), *found[1:]])
        parts += [paragraph] if paragraph else []
        earlier |= papers
    # Two comparative questions can be answered by one passage: its sentence is said once.
    across = list(dict.fromkeys(f"- {cited_insight(i)}" for i in inputs.insights if not i.paper_id))
    if across:
        parts += ["## Across the papers", "\n".join(across)]
    relationships = _relationships_by_type(inputs, titles)
    if relationships:
        parts.append("\n".join(relationships))
    return WrittenReply(
        title=offline_title(inputs.collection, len(inputs.papers)), text="\n\n".join(parts)
    )


def offline_title(collection: str, papers: int) -> str:
    """The offline engine's title: what the text is of, in a fixed frame. Not the theme, which
    is one paper's sentence and opens the text: as a title it would claim that paper's finding
    for the collection."""
    if papers == 1:
        return f"What the paper of {collection} reports"
    return f"What the {papers} papers of {collection} report"


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


def synthesis_writer(settings: Settings) -> SynthesisAgent | FlatSynthesisAgent:
    """The writer `synthesis.method` names."""
    return FlatSynthesisAgent() if settings.synthesis.method == "flat" else SynthesisAgent()


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


def citing_insights(insights: list[Insight]) -> defaultdict[str, list[Insight]]:
    """Each paper's insights that cite a passage, in order, grouped in one pass: a writer
    looking them up paper by paper in the whole list was quadratic at thousands of papers."""
    citing: defaultdict[str, list[Insight]] = defaultdict(list)
    for insight in insights:
        if insight.citations:
            citing[insight.paper_id].append(insight)
    return citing


def also_in_collection(paper: str, titles: dict[str, str]) -> str:
    """What opens the sentence appended for a paper the writer left uncited."""
    return f"{ALSO_IN_COLLECTION}, {_quoted(titles.get(paper, paper))}: "


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
    """Every passage an answer of the collection was written from, each once, in order."""
    every_answer = [
        a for paper in analysis.papers if paper in answers for a in answers[paper].answers
    ]
    every_answer += comparative.answers if comparative else []
    every_answer += [a for follow_up in analysis.follow_ups for a in follow_up.answers]
    chunks = {chunk.chunk_id: chunk for answer in every_answer for chunk in answer.evidence}
    return list(chunks.values())


def module_source() -> str:
    """This module's code, which the plain writer's checks share: part of its version."""
    return inspect.getsource(sys.modules[__name__])
