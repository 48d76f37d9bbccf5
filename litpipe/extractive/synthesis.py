"""The offline engine of the synthesis writers (`synthesis`, `synthesis_flat`): a collection's
expert synthesis from its relationship analysis and its answers, or its papers' or clusters'
summaries; and the central-finding selection the plain writer shares (`central_findings`,
`most_central`, `cited_units`).

The offline engine opens with one theme sentence, the collection's most central finding, then
writes a paragraph per paper (its insights and the evidence sentences MMR picks, or its summary,
or a cluster's summary), each opening with its most central finding, then a relationship with an
earlier paper in fixed words ("\\"B\\" extends \\"A\\": <explanation>"), then the comparative
insights and the relationships by type. Every sentence is the analysis' or the passages' own
(each citing its own paper), or fixed template words naming two papers at most: no sentence
lists the collection's papers (`central_findings`, `most_central`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import NamedTuple

from pydantic import BaseModel, Field

from litpipe.extractive.cluster_summary import Member
from litpipe.extractive.paper_summary import (
    MIN_SENTENCE_TERMS,
    PaperSummaryInput,
    cited_insight,
    offline_paper_summary,
)
from litpipe.retrieval.centrality import (
    CENTRAL_SAMPLE,
    closest_to_centroid,
    query_focused_lexrank,
)
from litpipe.retrieval.text import tokenize
from litpipe.schemas import (
    RELATIONSHIP_TYPES,
    Answer,
    Insight,
    Relationship,
    RelationshipType,
    RetrievedChunk,
    SynthesisPattern,
)
from litpipe.text import (
    cited_sentences,
    cites_other_work,
    markers_in,
    overlap,
    strip_markers,
    whole_sentence,
)

# The fixed words of a transition: "<source's paper> <verb> <target's paper>: <explanation>".
RELATION_VERBS: dict[RelationshipType, str] = {
    "extension": "extends",
    "contradiction": "contradicts",
    "complementary": "complements",
    "improvement": "improves on",
    "parallel": "parallels",
}


# Relationships the offline text lists per type.
LISTED_PER_TYPE = 5


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


def insight_paper(insight: Insight) -> str:
    return insight.paper_id or (insight.papers[0] if insight.papers else "")


def quoted_title(title: str) -> str:
    return f'"{" ".join(title.split())}"'


def _relation_sentence(
    relationship: Relationship, paper_of: dict[str, str], titles: dict[str, str]
) -> str:
    source_paper, target_paper = paper_of[relationship.source], paper_of[relationship.target]
    source = quoted_title(titles.get(source_paper, source_paper))
    target = quoted_title(titles.get(target_paper, target_paper))
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
    paper_of = {insight.insight_id: insight_paper(insight) for insight in inputs.insights}
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
    paper_of = {insight.insight_id: insight_paper(insight) for insight in inputs.insights}
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


def citing_insights(insights: list[Insight]) -> defaultdict[str, list[Insight]]:
    """Each paper's insights that cite a passage, in order, grouped in one pass: a writer
    looking them up paper by paper in the whole list was quadratic at thousands of papers."""
    citing: defaultdict[str, list[Insight]] = defaultdict(list)
    for insight in insights:
        if insight.citations:
            citing[insight.paper_id].append(insight)
    return citing
