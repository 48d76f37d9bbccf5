"""The `relationships` agent: the relationship analysis of a collection, before any prose.

From all the insights at once: typed relationships between insights of different papers
(extension, contradiction, complementary, improvement, parallel), each with a short explanation;
an overall theme; and a 3-5 sentence narrative naming every paper. The prompt labels the papers
`P1`, `P2`, ... with their titles; the narrative names a paper by citing it with a marker taken
from that paper's insights (its title may be shortened), which is what `papers_named` checks.

The offline engine relates two insights of different papers when their stemmed terms overlap
enough (Jaccard), types the relationship from cue words ("outperforms", "extends", "however",
opposite directions of change), explains it in a fixed frame naming both papers and the words
they share, takes the theme from the key phrases most papers share, and builds the narrative
from each paper's best insight, verbatim, in fixed frames.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from itertools import combinations

from pydantic import BaseModel, Field

from litpipe.agents.base import Agent, StructuredClient, run_agent
from litpipe.agents.extractive import GENERIC_WORDS, Phrase, phrases, sentences, words
from litpipe.agents.insights import plain
from litpipe.citations import marker, markers_in, without_markers
from litpipe.llm.prompts import PromptLibrary, fence
from litpipe.retrieval.rerank import term_coverage
from litpipe.retrieval.text import tokenize
from litpipe.schemas import RELATIONSHIP_TYPES, Citation, Insight, Relationship, RelationshipType
from litpipe.settings import Settings

# Jaccard similarity of two insights' stemmed terms from which they relate, and from which two
# insights without a cue word say the same kind of thing about the same object (parallel).
RELATED_SIMILARITY = 0.08
PARALLEL_SIMILARITY = 0.15
# The strongest relationships kept per pair of papers: more would drown the map in near-repeats.
MAX_PER_PAPER_PAIR = 2
SHARED_WORDS_SHOWN = 3
MAX_NARRATIVE_SENTENCES = 5
MIN_NARRATIVE_SENTENCES = 3

_CONTRAST = re.compile(
    r"\b(however|in contrast|by contrast|contrary to|unlike|not|fail\w*|contradict\w*|"
    r"whereas|inconsistent with)\b",
    re.I,
)
_IMPROVEMENT = re.compile(
    r"\b(outperform\w*|improv\w*|better|faster|more accurate\w*|reduc\w* (the )?errors?|"
    r"superior|surpass\w*|boost\w*)\b",
    re.I,
)
_EXTENSION = re.compile(
    r"\b(extend\w*|extension|build\w* on|built on|generali[sz]\w*|further|additionally|"
    r"expand\w*|broaden\w*)\b",
    re.I,
)
_UP = re.compile(
    r"\b(increas\w*|higher|elevat\w*|enhanc\w*|promot\w*|activat\w*|up-?regulat\w*)\b", re.I
)
_DOWN = re.compile(
    r"\b(decreas\w*|lower|reduc\w*|inhibit\w*|suppress\w*|down-?regulat\w*|impair\w*)\b", re.I
)
_TYPE_PHRASES: dict[RelationshipType, str] = {
    "extension": "extends what {source} reports",
    "contradiction": "reports a finding at odds with that of {source}",
    "improvement": "reports an improvement on the work of {source}",
    "parallel": "reports a parallel finding to that of {source}",
    "complementary": "adds a complementary view to that of {source}",
}


class PaperLabel(BaseModel):
    label: str = Field(description="`P1`, `P2`, ... as the prompt names the paper.")
    paper_id: str
    title: str


class RelationsInput(BaseModel):
    collection: str
    papers: list[PaperLabel]
    insights: list[Insight]


class RelationsReply(BaseModel):
    relationships: list[Relationship]
    theme: str = Field(description="One sentence.")
    narrative: str = Field(description="3-5 sentences naming every paper, citing each.")


class RelationshipDraft(BaseModel):
    """The relationship analysis as written: checked relationships, theme and narrative."""

    relationships: list[Relationship]
    theme: str
    narrative: str
    citations: list[Citation] = Field(description="The narrative's, from the insights' own.")


def _subjects(insight: Insight) -> frozenset[str]:
    return frozenset([insight.paper_id] if insight.paper_id else insight.papers)


def _different_papers(first: Insight, second: Insight) -> bool:
    """Insights of disjoint, known papers (a comparative insight concerns all it names)."""
    a, b = _subjects(first), _subjects(second)
    return bool(a) and bool(b) and not a & b


def _quoted_title(paper_id: str, titles: dict[str, str]) -> str:
    return f'"{" ".join(titles.get(paper_id, "").split()) or paper_id}"'


def _paper_of(insight: Insight) -> str:
    return insight.paper_id or ", ".join(insight.papers)


@dataclass(frozen=True)
class _Pair:
    source: Insight
    target: Insight
    type: RelationshipType
    similarity: float
    cue: str | None


def _cue(pattern: re.Pattern[str], text: str) -> str | None:
    found = pattern.search(text)
    return found.group(0) if found else None


def _direction(text: str) -> str | None:
    up, down = _UP.search(text) is not None, _DOWN.search(text) is not None
    return "up" if up and not down else "down" if down and not up else None


def _typed(first: Insight, second: Insight, similarity: float) -> _Pair:
    """The pair's type from cue words, the insight holding the cue as the target."""
    texts = plain(first.text), plain(second.text)
    contrasts = [_cue(_CONTRAST, text) for text in texts]
    if (contrasts[0] is None) != (contrasts[1] is None):
        holder = 0 if contrasts[0] else 1
        ordered = (second, first) if holder == 0 else (first, second)
        return _Pair(*ordered, "contradiction", similarity, contrasts[holder])
    for kind, pattern in (("improvement", _IMPROVEMENT), ("extension", _EXTENSION)):
        cues = [_cue(pattern, text) for text in texts]
        if cues[1] is not None:
            return _Pair(first, second, kind, similarity, cues[1])
        if cues[0] is not None:
            return _Pair(second, first, kind, similarity, cues[0])
    directions = {_direction(text) for text in texts}
    if directions == {"up", "down"}:
        return _Pair(first, second, "contradiction", similarity, None)
    kind: RelationshipType = "parallel" if similarity >= PARALLEL_SIMILARITY else "complementary"
    return _Pair(first, second, kind, similarity, None)


def _explanation(
    pair: _Pair, titles: dict[str, str], weights: _TermWeights, shared_terms: set[str]
) -> str:
    written = term_coverage(plain(pair.source.text), plain(pair.target.text)).matched
    shared = [word for word in written if shared_terms.intersection(tokenize(word))]
    # The rarest shared words first: they say what the two insights are about.
    ranked = sorted(shared, key=lambda word: -weights.of_word(word))
    listed = _listed(ranked[:SHARED_WORDS_SHOWN])
    source = _quoted_title(_paper_of(pair.source), titles)
    target = _quoted_title(_paper_of(pair.target), titles)
    relation = _TYPE_PHRASES[pair.type].format(source=source)
    cue = f' (its insight says "{pair.cue}")' if pair.cue else ""
    return f"Both concern {listed}; {target} {relation}{cue}."


def content_terms(text: str) -> set[str]:
    """The stemmed terms of a text's content words: without function words, research verbs
    ("we propose", "using") and words too general to relate two papers ("method", "results")."""
    kept = [word for word in words(plain(text)) if word not in GENERIC_WORDS]
    return set(tokenize(" ".join(kept)))


@dataclass(frozen=True)
class _TermWeights:
    """Each term's weight, log((papers + 1) / papers using it): a term most papers of the
    collection use ("neural", "networks" among ICLR abstracts) relates little. The + 1 keeps a
    term two papers of a two-paper collection share from weighing nothing."""

    papers: int
    papers_with: Counter[str]

    def of(self, term: str) -> float:
        return math.log((self.papers + 1) / max(self.papers_with[term], 1))

    def of_word(self, word: str) -> float:
        return max((self.of(term) for term in tokenize(word)), default=0.0)

    def similarity(self, first: set[str], second: set[str]) -> float:
        """Weighted Jaccard: the weight of the shared terms over that of all their terms."""
        union = sum(self.of(term) for term in first | second)
        return sum(self.of(term) for term in first & second) / union if union else 0.0


def _weights(insights: list[Insight], terms: dict[str, set[str]]) -> _TermWeights:
    by_paper: dict[str, set[str]] = {}
    for insight in insights:
        by_paper.setdefault(_paper_of(insight), set()).update(terms[insight.insight_id])
    return _TermWeights(len(by_paper), Counter(t for held in by_paper.values() for t in held))


def _distinct(insights: list[Insight]) -> list[Insight]:
    """The insights without repeats of an earlier one of the same paper: several questions
    answered from one sentence give the same insight, which would relate twice to the same."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for insight in insights:
        key = (_paper_of(insight), " ".join(plain(insight.text).split()))
        if key not in seen:
            seen.add(key)
            kept.append(insight)
    return kept


def offline_relationships(insights: list[Insight], titles: dict[str, str]) -> list[Relationship]:
    """Pairs of insights of different papers similar enough, the strongest few per paper pair."""
    insights = _distinct(insights)
    terms = {insight.insight_id: content_terms(insight.text) for insight in insights}
    weights = _weights(insights, terms)
    by_papers: dict[tuple[str, str], list[_Pair]] = {}
    for first, second in combinations(insights, 2):
        if not _different_papers(first, second):
            continue
        similarity = weights.similarity(terms[first.insight_id], terms[second.insight_id])
        if similarity >= RELATED_SIMILARITY:
            key = (_paper_of(first), _paper_of(second))
            by_papers.setdefault(key, []).append(_typed(first, second, similarity))
    order = {insight.insight_id: index for index, insight in enumerate(insights)}
    kept = [
        pair
        for pairs in by_papers.values()
        for pair in sorted(pairs, key=lambda p: -p.similarity)[:MAX_PER_PAPER_PAIR]
    ]
    kept.sort(key=lambda p: (order[p.source.insight_id], order[p.target.insight_id]))
    return [
        Relationship(
            source=pair.source.insight_id,
            target=pair.target.insight_id,
            type=pair.type,
            explanation=_explanation(
                pair, titles, weights, terms[pair.source.insight_id] & terms[pair.target.insight_id]
            ),
        )
        for pair in kept
    ]


def _listed(items: list[str]) -> str:
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)


def _key_phrases(insights: list[Insight]) -> list[tuple[str, Phrase]]:
    """(paper, phrase) for every key phrase of the insights, in order."""
    found = []
    for insight in insights:
        text = plain(insight.text)
        found += [(_paper_of(insight), p) for s in sentences(text) for p in phrases(text, s)]
    return found


def offline_theme(insights: list[Insight]) -> str:
    """The key phrases whose words the most papers share, in a fixed frame."""
    candidates = _key_phrases(insights)
    if not candidates:
        return ""
    papers_with: Counter[str] = Counter()
    for paper in {paper for paper, _ in candidates}:
        papers_with.update(
            {word for p, phrase in candidates if p == paper for word in phrase.words}
        )
    papers = len({paper for paper, _ in candidates})

    def shared(phrase: Phrase) -> int:
        return sum(papers_with[word] for word in phrase.words if papers_with[word] > 1)

    ranked = sorted(range(len(candidates)), key=lambda i: (-shared(candidates[i][1]), i))
    chosen: list[Phrase] = []
    for index in ranked:
        phrase = candidates[index][1]
        if len(chosen) == SHARED_WORDS_SHOWN or (papers > 1 and not shared(phrase)):
            break
        if not any(
            set(phrase.words) <= set(c.words) or set(c.words) <= set(phrase.words) for c in chosen
        ):
            chosen.append(phrase)
    if papers == 1:
        return f"The paper centres on {_listed([p.text for p in chosen])}."
    if not chosen:
        firsts = list({paper: phrase.text for paper, phrase in reversed(candidates)}.values())
        return (
            f"The papers address separate subjects: {_listed(firsts[::-1][:SHARED_WORDS_SHOWN])}."
        )
    return f"The papers converge on {_listed([p.text for p in chosen])}."


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _ranked_insights(
    paper: str, insights: list[Insight], relationships: list[Relationship]
) -> list[Insight]:
    """The paper's cited insights, the most related first, then the longest."""
    degree = Counter(r.source for r in relationships) + Counter(r.target for r in relationships)
    own = [i for i in insights if i.paper_id == paper and i.citations]
    return sorted(own, key=lambda i: (-degree[i.insight_id], -len(set(words(plain(i.text))))))


def _relations_of(paper: str, insights: list[Insight], relationships: list[Relationship]) -> int:
    own = {i.insight_id for i in insights if i.paper_id == paper}
    return sum(r.source in own or r.target in own for r in relationships)


def offline_narrative(
    papers: list[str],
    insights: list[Insight],
    relationships: list[Relationship],
    titles: dict[str, str],
    theme: str,
) -> str:
    """The theme, then each paper's best insight verbatim after its title; when that would make
    more than five sentences, the most related papers so and the others listed in one sentence,
    each with a marker of its best insight."""
    ranked = {paper: _ranked_insights(paper, insights, relationships) for paper in papers}
    cited = [paper for paper in papers if ranked[paper]]
    opening = [theme] if theme else []
    room = MAX_NARRATIVE_SENTENCES - len(opening) - (len(cited) < len(papers))
    featured = cited
    if len(cited) > room:
        most_related = sorted(
            cited, key=lambda p: (-_relations_of(p, insights, relationships), papers.index(p))
        )[: max(room - 1, 0)]
        featured = [paper for paper in cited if paper in most_related]
    others = [paper for paper in papers if paper not in featured]
    body = [f"In {_quoted_title(p, titles)}: {_sentence(ranked[p][0].text)}" for p in featured]
    further = [
        f"Also in {_quoted_title(paper, titles)}: {_sentence(insight.text)}"
        for paper in featured
        for insight in ranked[paper][1:]
    ]
    body += further[: max(MIN_NARRATIVE_SENTENCES - len(opening) - len(body) - bool(others), 0)]
    if others:
        named = [
            f"{_quoted_title(p, titles)} {ranked[p][0].citations[0].marker}"
            if ranked[p]
            else _quoted_title(p, titles)
            for p in others
        ]
        body.append(f"The collection also includes {_listed(named)}.")
    return " ".join([*opening, *body])


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
        if source is None or target is None or not _different_papers(source, target):
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


def offline_analysis(inputs: RelationsInput) -> RelationsReply:
    titles = {paper.paper_id: paper.title for paper in inputs.papers}
    relationships = offline_relationships(inputs.insights, titles)
    theme = offline_theme(inputs.insights)
    papers = [paper.paper_id for paper in inputs.papers]
    narrative = offline_narrative(papers, inputs.insights, relationships, titles, theme)
    return RelationsReply(relationships=relationships, theme=theme, narrative=narrative)


class RelationshipsAgent(Agent[RelationsInput, RelationsReply]):
    name = "relationships"
    reply_schema = RelationsReply

    def messages(self, inputs: RelationsInput, prompts: PromptLibrary) -> list[dict[str, str]]:
        label = {paper.paper_id: paper.label for paper in inputs.papers}
        papers = "\n".join(
            f"{paper.label} = paper id {paper.paper_id}, title:\n{fence(paper.title)}"
            for paper in inputs.papers
        )
        insights = "\n".join(
            f"{insight.insight_id} ({_insight_papers(insight, label)}):\n{fence(insight.text)}"
            for insight in inputs.insights
        )
        return prompts.render(self.name, papers=papers, insights=insights)

    def offline(self, inputs: RelationsInput) -> RelationsReply:
        return offline_analysis(inputs)


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
    settings: Settings,
    prompts: PromptLibrary,
    client: StructuredClient | None,
) -> RelationshipDraft:
    """The relationship analysis of the collection whose papers `titles` lists (id -> title)."""
    inputs = RelationsInput(
        collection=collection, papers=_labels(insights, titles), insights=insights
    )
    reply = run_agent(RelationshipsAgent(), inputs, settings, prompts, client)
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
