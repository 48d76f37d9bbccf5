"""The offline engine of the `relationships` agent: the relationship analysis of a collection
from all its insights at once (typed relationships between insights of different papers, each
with a short explanation; an overall theme; a narrative naming every paper), and the insight
pairs it weighs (`neighbour_pairs`).

The offline engine relates two insights of different papers when their stemmed terms overlap
enough (weighted Jaccard), keeps the strongest few per pair of papers, and types each with a
heuristic that reads words, not meaning:

- contradiction, only when the two make opposite claims about the same terms: a clause of each
  with the same predicate at opposite polarity (one denies what the other states, "did not
  correct" against "corrected", or they stand at opposite poles of one direction: increases /
  decreases, improves / worsens, outperforms / underperforms, necessary / unnecessary, ...), the
  same word next to the predicate on either side (its subject and object, one of them rare in the
  collection) and mostly the same words around it. The explanation quotes both sentences with
  their papers' titles. "However", "unlike", "not only" or a failure a sentence reports make no
  contradiction;
- improvement or extension, only when a cue ("outperforms", "extends", ...) is followed in its
  clause by a name from the other paper's title ("outperforms RotatE"): a sentence comparing a
  paper with its own baselines says nothing about another paper;
- otherwise parallel (much shared) or complementary: the two share rare terms, nothing more.

It cannot parse, so it misses opposite claims worded differently (a paraphrase, swapped subject
and object, "X beats Y" against "Y beats X", numbers that disagree) and cannot tell whether two
claims were made under the same conditions; parallel and complementary do not mean the findings
agree. It explains each relationship in a fixed frame naming both papers and the words they
share, takes as the theme the sentence most central to what the papers share (`offline_theme`),
and builds the narrative from each paper's best insight, verbatim, in fixed frames.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, Field

from litpipe.extractive.paper_summary import MIN_SENTENCE_TERMS
from litpipe.retrieval.centrality import (
    CENTRAL_SAMPLE,
    closest_to_centroid,
    lexrank_similarity,
    pagerank,
)
from litpipe.retrieval.neighbours import nearest_pairs
from litpipe.retrieval.rerank import term_coverage
from litpipe.retrieval.text import content_terms, tokenize
from litpipe.schemas import CitedRelationship, Insight, Relationship, RelationshipType
from litpipe.text import (
    looks_named,
    points_back,
    reports_evaluation,
    sentences,
    strip_markers,
    whole_sentence,
    words,
)

if TYPE_CHECKING:
    from litpipe.retrieval.store import TextEncoder

# Jaccard similarity of two insights' stemmed terms from which they relate, and from which two
# insights without a cue word say the same kind of thing about the same object (parallel).
RELATED_SIMILARITY = 0.08
PARALLEL_SIMILARITY = 0.15
# The strongest relationships kept per pair of papers: more would drown the map in near-repeats.
MAX_PER_PAPER_PAIR = 2
SHARED_WORDS_SHOWN = 3
MAX_NARRATIVE_SENTENCES = 5
MIN_NARRATIVE_SENTENCES = 3
# An improvement or extension cue types a pair only when the rest of its clause names the other
# paper's work (`_named_work`): "outperforms Hyperband" is about the paper titled "Hyperband: ...",
# whereas "improves its accuracy" compares a paper with its own baseline, not with any paper of
# the collection.
_IMPROVEMENT = re.compile(
    r"\b(outperform\w*|improv\w*|better|faster|more accurate|reduc\w* (the )?errors?|"
    r"superior|surpass\w*|boost\w*)\b",
    re.I,
)
_EXTENSION = re.compile(
    r"\b(extend\w*|extension|build\w* (up)?on|built (up)?on|generali[sz]\w*|expand\w*|"
    r"broaden\w*)\b",
    re.I,
)
# Tried in this order: an improvement is the stronger claim.
_CUED_KINDS: tuple[tuple[RelationshipType, re.Pattern[str]], ...] = (
    ("improvement", _IMPROVEMENT),
    ("extension", _EXTENSION),
)
# A name in the other paper's title (`_title_names`) names its work only when at most this many
# papers' insights use it (the two of the pair): "VAE" in one title names no particular paper
# among ICLR abstracts, "RotatE" does.
NAMING_PAPERS = 2
_TITLE_WORD = re.compile(r"[^\W_]+")
# A term is rare in a collection (`_TermWeights.rare`) when at most two papers, or a third of
# them, use it.
RARE_PAPERS = 2
RARE_SHARE = 1 / 3
# Where a clause ends: past it, words are no longer the object of a cue or predicate before it.
# Decimal points and thousands separators do not end one.
_CLAUSE_BREAK = re.compile(
    r"[;:!?]|[.,](?!\d)|\b(?:but|whereas|while|although|though|however|yet)\b", re.I
)
# The two poles (positive, negative) of each direction a claim can take. Two claims oppose each
# other only at opposite poles of one axis: poles of different axes are never compared, since
# "reduces the error" and "improves the accuracy" say the same thing.
_AXES: dict[str, tuple[str, str]] = {
    "amount": (
        r"increas(e|es|ed|ing)|rais(e|es|ed|ing)|higher|more|greater|larger|elevat\w*|"
        r"up-?regulat\w*|boost\w*|enhanc\w*|amplif\w*",
        r"decreas(e|es|ed|ing)|reduc(e|es|ed|ing)|lower(s|ed|ing)?|less|fewer|smaller|"
        r"diminish\w*|down-?regulat\w*|attenuat\w*",
    ),
    "activity": (r"activat\w*|promot\w*|stimulat\w*", r"inhibit\w*|suppress\w*|repress\w*"),
    "quality": (
        r"improv\w*|better|benefit\w*",
        r"worsen\w*|worse|degrad\w*|hurt\w*|harm\w*|impair\w*|deteriorat\w*",
    ),
    "rank": (r"outperform\w*|surpass\w*|superior", r"underperform\w*|inferior"),
    "speed": (r"faster|accelerat\w*", r"slower|decelerat\w*"),
    "necessity": (
        r"necessary|needed|required|essential|indispensable",
        r"unnecessary|dispensable|superfluous",
    ),
    "efficacy": (
        r"effective|efficient|successful",
        r"ineffective|inefficient|unsuccessful",
    ),
    "association": (r"associated|correlated|linked", r"unassociated|uncorrelated|unrelated"),
}
_POLES: list[tuple[str, int, re.Pattern[str]]] = [
    (axis, polarity, re.compile(pattern))
    for axis, poles in _AXES.items()
    for polarity, pattern in zip((1, -1), poles, strict=True)
]
# "lower bound", "higher order": names, not directions.
_NAME_AFTER_DIRECTION = frozenset(
    ["bound", "bounds", "order", "level", "levels", "dimension", "dimensions", "dimensional"]
)
# "more than 5%", "less than half": a quantity, not a direction.
_QUANTITY_BEFORE_THAN = frozenset(["more", "less", "fewer"])
# "not", "never" and "cannot" deny the verb or adjective after them ("did not correct"); "no",
# "without" and the words for next to nothing deny the whole phrase after them ("without careful
# hyperparameter tuning", "negligible accuracy loss": "little loss" denies as much as "no loss").
_WORD_NEGATORS = frozenset(["not", "never", "cannot"])
_PHRASE_NEGATORS = frozenset(["no", "without", "little", "negligible", "minimal"])
# "fails to improve", "unable to reach": a negator of two words.
_NEGATING_WITH_TO = re.compile(r"fail(s|ed|ing)?|unable")
# "not only X but also Y" asserts X.
_NOT_NEGATING_BEFORE = frozenset(["only", "just", "merely", "simply", "solely"])
# Words between a negator and what it negates that are not the predicate: "no longer improves",
# "no significant difference".
_NEGATION_QUALIFIERS = frozenset(
    ["longer", "significant", "statistically", "necessarily", "clear", "consistent", "obvious"]
)
# What may stand between "no" or "without" and the phrase it denies, with adverbs: "without any",
# "no statistically significant".
_BEFORE_DENIED_PHRASE = frozenset(["a", "an", "the", "any", "such", *_NEGATION_QUALIFIERS])
# How many words after a negator what it denies may reach: "did not lead to higher", "does not
# significantly improve".
NEGATION_REACH = 4
# A claim's subject and object: the terms of the word nearest its predicate, before and after
# it. Two claims oppose only when both are the same: two words either side already found, among
# the 618 ICLR abstracts, "X enhances the model-parameter space" against "higher accuracy with
# fewer parameters".
NEAREST_WORDS = 1
# The words either side of a predicate that say what the claim is about: further off, a long
# clause's words are about something else.
CLAIM_REACH = 4
# The least share of what the lesser of two claims is about that the other must be about too.
SAME_TERMS = 0.5
_WORD_TOKEN = re.compile(r"[^\W\d_][\w'\u2019-]*")
_TYPE_PHRASES: dict[RelationshipType, str] = {
    "extension": "extends what {source} reports",
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
    candidates: list[tuple[str, str]] | None = Field(
        default=None,
        description="The pairs of insight ids the offline engine weighs (`neighbour_pairs`); "
        "None: every pair, which only a small set affords.",
    )
    citations: list[CitedRelationship] = Field(
        default_factory=list,
        description="How papers of the collection relate to those they cite, as their citing "
        "sentences say: a model's evidence for the types (offline, they are kept apart).",
    )


class RelationsReply(BaseModel):
    relationships: list[Relationship]
    theme: str = Field(description="One sentence.")
    narrative: str = Field(description="3-5 sentences naming every paper, citing each.")


def _subjects(insight: Insight) -> frozenset[str]:
    return frozenset([insight.paper_id] if insight.paper_id else insight.papers)


def different_papers(first: Insight, second: Insight) -> bool:
    """Insights of disjoint, known papers (a comparative insight concerns all it names)."""
    a, b = _subjects(first), _subjects(second)
    return bool(a) and bool(b) and not a & b


def _quoted_title(paper_id: str, titles: dict[str, str]) -> str:
    return f'"{" ".join(titles.get(paper_id, "").split()) or paper_id}"'


def _paper_of(insight: Insight) -> str:
    return insight.paper_id or ", ".join(insight.papers)


@dataclass(frozen=True)
class _TermWeights:
    """Each term's weight, log((papers + 1) / papers using it): a term most papers of the
    collection use ("neural", "networks" among ICLR abstracts) relates little. The + 1 keeps a
    term two papers of a two-paper collection share from weighing nothing."""

    papers: int
    papers_with: Counter[str]

    def of(self, term: str) -> float:
        return math.log((self.papers + 1) / max(self.papers_with[term], 1))

    def rare(self, term: str) -> bool:
        """Whether at most a third of the papers (or two) use the term: one that more use is the
        collection's vocabulary ("network" among ICLR abstracts), which says too little of what
        a claim is about to set two claims against each other."""
        return self.papers_with[term] <= max(RARE_PAPERS, self.papers * RARE_SHARE)

    def of_word(self, word: str) -> float:
        return max((self.of(term) for term in tokenize(word)), default=0.0)

    def similarity(self, first: frozenset[str], second: frozenset[str]) -> float:
        """Weighted Jaccard: the weight of the shared terms over that of all their terms."""
        union = sum(self.of(term) for term in first | second)
        return sum(self.of(term) for term in first & second) / union if union else 0.0


def _weights(insights: list[Insight], terms: dict[str, frozenset[str]]) -> _TermWeights:
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
        key = (_paper_of(insight), " ".join(strip_markers(insight.text).split()))
        if key not in seen:
            seen.add(key)
            kept.append(insight)
    return kept


@dataclass(frozen=True)
class _Claim:
    """What one clause of a sentence states: a predicate (an axis of `_AXES`, or the stem of any
    other word), its polarity (-1 at an axis' negative pole or when denied, else 1), its subject
    and object (the content terms of the `NEAREST_WORDS` words before and after it) and what it
    is about (those of the `CLAIM_REACH` words either side)."""

    sentence: str
    predicate: str
    polarity: int
    subject: frozenset[str]
    object: frozenset[str]
    about: frozenset[str]


@dataclass(frozen=True)
class _Opposition:
    """Two claims of opposite polarity about the same terms, one from each insight."""

    first: _Claim
    second: _Claim
    terms: frozenset[str]


@dataclass(frozen=True)
class _Pair:
    source: Insight
    target: Insight
    type: RelationshipType
    similarity: float
    cue: str | None = None
    opposition: _Opposition | None = None


def _direction(tokens: list[str], index: int) -> tuple[str, int] | None:
    """(axis, pole) of the word at `index` when it states a direction of `_AXES`."""
    token, following = tokens[index], tokens[index + 1 : index + 2]
    if following and (
        following[0] in _NAME_AFTER_DIRECTION
        or (token in _QUANTITY_BEFORE_THAN and following[0] == "than")
    ):
        return None
    return next(((axis, pole) for axis, pole, pattern in _POLES if pattern.fullmatch(token)), None)


def _predicate(tokens: list[str], index: int) -> tuple[str, int] | None:
    """(predicate, polarity) of the word at `index`: its axis and pole, else its stem when it
    carries content (research verbs such as "requires" do not: "requires labels" is a claim
    about labels, which "requires no labels" denies)."""
    direction = _direction(tokens, index)
    if direction is not None:
        return direction
    token = tokens[index]
    stems = tokenize(token) if token not in _NEGATION_QUALIFIERS and words(token) else []
    return (stems[0], 1) if stems else None


def _denied(tokens: list[str], index: int) -> list[int]:
    """The words the word at `index` denies: none unless it is a negator."""
    token, reach = tokens[index], index + 1
    if _NEGATING_WITH_TO.fullmatch(token) and tokens[reach : reach + 1] == ["to"]:
        reach += 1
    elif not (
        token in _WORD_NEGATORS or token in _PHRASE_NEGATORS or token.endswith(("n't", "n\u2019t"))
    ):
        return []
    if tokens[reach : reach + 1] and tokens[reach] in _NOT_NEGATING_BEFORE:
        return []
    if token not in _PHRASE_NEGATORS:
        scope = range(reach, min(reach + NEGATION_REACH, len(tokens)))
        return next(([p] for p in scope if _predicate(tokens, p) is not None), [])
    # The phrase right after: "minimal and involve reconstruction losses" denies nothing.
    while reach < len(tokens) and (
        tokens[reach] in _BEFORE_DENIED_PHRASE or tokens[reach].endswith("ly")
    ):
        reach += 1
    phrase = []
    for position in range(reach, min(reach + NEGATION_REACH, len(tokens))):
        if _predicate(tokens, position) is None:
            break
        phrase.append(position)
    return phrase


def _clause_claims(sentence: str, clause: str) -> list[_Claim]:
    tokens = [match.group().rstrip("'\u2019").lower() for match in _WORD_TOKEN.finditer(clause)]
    # A direction word is what a claim says, never what it is about: "larger step sizes" and
    # "fewer training steps" share no subject.
    terms = [
        frozenset() if _direction(tokens, index) else content_terms(token)
        for index, token in enumerate(tokens)
    ]
    denied = {position for index in range(len(tokens)) for position in _denied(tokens, index)}
    # The nearest words, whatever they are: a generic or direction word nearest the predicate
    # ("methods with more parameters") leaves it without a subject rather than lending it one
    # from further off.
    nearest = [index for index, token in enumerate(tokens) if words(token)]

    def held(positions: list[int]) -> frozenset[str]:
        return frozenset().union(*(terms[position] for position in positions))

    claims = []
    for index in range(len(tokens)):
        stated = _predicate(tokens, index)
        if stated is None:
            continue
        before = [position for position in nearest if position < index][::-1]
        after = [position for position in nearest if position > index]
        claims.append(
            _Claim(
                sentence,
                stated[0],
                -stated[1] if index in denied else stated[1],
                held(before[:NEAREST_WORDS]),
                held(after[:NEAREST_WORDS]),
                held(before[:CLAIM_REACH] + after[:CLAIM_REACH]),
            )
        )
    return claims


def _claims(text: str) -> list[_Claim]:
    """Every claim of every clause of `text`, each with its sentence as written."""
    found = []
    for sentence in sentences(text):
        written = " ".join(sentence.text.split())
        for clause in _CLAUSE_BREAK.split(sentence.text):
            found += _clause_claims(written, clause)
    return found


def _same_terms(one: _Claim, other: _Claim, weights: _TermWeights) -> frozenset[str]:
    """The terms of the subject and object two claims share, when they share both, one of those
    terms is rare, and most of what each is about is the other's too; else none. A shared
    subject or object alone is not enough: "X increases training time" and "our method does not
    increase training time" are about different things. A swapped subject and object ("X raises
    Y", "Y is lower with X") is missed: without a parse, a swap is as often a claim about other
    things."""
    if len(one.about & other.about) < SAME_TERMS * min(len(one.about), len(other.about)):
        return frozenset()
    subject, thing = one.subject & other.subject, one.object & other.object
    shared = subject | thing
    return shared if subject and thing and any(map(weights.rare, shared)) else frozenset()


def _opposition(
    first: list[_Claim], second: list[_Claim], weights: _TermWeights
) -> _Opposition | None:
    """The first claim of `first` that a claim of `second` opposes: same predicate, opposite
    polarity, same subject and object."""
    by_predicate: dict[str, list[_Claim]] = {}
    for claim in second:
        by_predicate.setdefault(claim.predicate, []).append(claim)
    for one in first:
        for other in by_predicate.get(one.predicate, []):
            if one.polarity != other.polarity and (terms := _same_terms(one, other, weights)):
                return _Opposition(one, other, terms)
    return None


def _named_work(text: str, cue: re.Pattern[str], named: set[str]) -> str | None:
    """The cue in `text` with the rest of its clause, when that rest holds one of the `named`
    terms (what the cue improves on or extends is the other paper's work)."""
    if not named:
        return None
    for match in cue.finditer(text):
        stop = _CLAUSE_BREAK.search(text, match.end())
        end = stop.start() if stop else len(text)
        if content_terms(text[match.end() : end]) & named:
            return " ".join(text[match.start() : end].split())
    return None


@dataclass(frozen=True)
class _Grounds:
    """What the offline typing reads: each insight's claims, the names in each paper's title,
    and how many papers use each term."""

    claims: dict[str, list[_Claim]]
    title_names: dict[str, set[str]]
    weights: _TermWeights

    def work_of(self, paper: str, other: str) -> set[str]:
        """The terms naming `paper`'s work when `other` speaks of it: names in its title that
        `other`'s title lacks and that only the pair's papers use."""
        own = self.title_names.get(paper, set()) - self.title_names.get(other, set())
        return {term for term in own if self.weights.papers_with[term] <= NAMING_PAPERS}


def _title_names(title: str) -> set[str]:
    """The terms of the names in a title ("RotatE", "CycleGAN", "VAE"): a common word of it
    ("convolutional") names a subject, not that paper's work. A title in capitals shows no
    names this way."""
    if title.upper() == title:
        return set()
    return {
        term for word in _TITLE_WORD.findall(title) if looks_named(word) for term in tokenize(word)
    }


def _typed(first: Insight, second: Insight, similarity: float, grounds: _Grounds) -> _Pair:
    """A contradiction when the two make opposite claims about the same terms; else an
    improvement or extension when one's cue names the other's work (that one is the target);
    else parallel or complementary by how much they share."""
    claims = grounds.claims
    opposition = _opposition(claims[first.insight_id], claims[second.insight_id], grounds.weights)
    if opposition is not None:
        return _Pair(first, second, "contradiction", similarity, opposition=opposition)
    for cued_kind, pattern in _CUED_KINDS:
        for holder, other in ((second, first), (first, second)):
            named = grounds.work_of(_paper_of(other), _paper_of(holder))
            cue = _named_work(strip_markers(holder.text), pattern, named)
            if cue is not None:
                return _Pair(other, holder, cued_kind, similarity, cue=cue)
    kind: RelationshipType = "parallel" if similarity >= PARALLEL_SIMILARITY else "complementary"
    return _Pair(first, second, kind, similarity)


def _without_full_stop(sentence: str) -> str:
    return sentence.rstrip(".!? ")


def _explanation(
    pair: _Pair, titles: dict[str, str], weights: _TermWeights, shared_terms: frozenset[str]
) -> str:
    source = _quoted_title(_paper_of(pair.source), titles)
    target = _quoted_title(_paper_of(pair.target), titles)
    opposition = pair.opposition
    if opposition is not None:
        shared_terms = opposition.terms
    source_text, target_text = strip_markers(pair.source.text), strip_markers(pair.target.text)
    written = term_coverage(source_text, target_text).matched
    shared = [word for word in written if shared_terms.intersection(tokenize(word))]
    # The rarest shared words first: they say what the two insights are about.
    ranked = sorted(shared, key=lambda word: -weights.of_word(word))
    listed = _listed(ranked[:SHARED_WORDS_SHOWN])
    if opposition is not None:
        # The two claims quoted whole, so a reader judges the contradiction from the papers'
        # own words rather than from the engine's word.
        return (
            f'Both concern {listed}, in opposite claims: {source} says "'
            f'{_without_full_stop(opposition.first.sentence)}", and {target} says "'
            f'{_without_full_stop(opposition.second.sentence)}".'
        )
    relation = _TYPE_PHRASES[pair.type].format(source=source)
    cue = f' (its insight says "{pair.cue}")' if pair.cue else ""
    return f"Both concern {listed}; {target} {relation}{cue}."


def _relatable(insights: list[Insight]) -> list[Insight]:
    """The insights that may relate: distinct ones citing something (one that cites nothing,
    "the retrieved passages do not answer this question", states nothing of its paper's)."""
    return [insight for insight in _distinct(insights) if insight.citations]


def neighbour_pairs(
    insights: list[Insight], encoder: TextEncoder, neighbours: int
) -> list[tuple[str, str]]:
    """The relationship candidates: each relatable insight with its `neighbours` nearest
    insights of other papers by cosine of their embeddings (one encode call for all), each pair
    once, the earlier insight first. At most insights x `neighbours` pairs, where every pair
    would be insights squared over two."""
    relatable = _relatable(insights)
    if len(relatable) < 2:
        return []
    encoded = np.asarray(
        encoder.encode([strip_markers(insight.text) for insight in relatable]), dtype=np.float32
    )
    norms = np.linalg.norm(encoded, axis=1, keepdims=True)
    vectors = (encoded / np.where(norms > 0, norms, 1)).astype(np.float32)
    paper_code = {
        paper: code for code, paper in enumerate(dict.fromkeys(map(_paper_of, relatable)))
    }
    groups = np.array([paper_code[_paper_of(insight)] for insight in relatable], dtype=np.int64)
    return [
        (relatable[i].insight_id, relatable[j].insight_id)
        for i, j in nearest_pairs(vectors, groups, neighbours)
    ]


def offline_relationships(
    insights: list[Insight],
    titles: dict[str, str],
    candidates: list[tuple[str, str]] | None = None,
) -> list[Relationship]:
    """Pairs of insights of different papers similar enough, the strongest few per paper pair,
    each typed by `_typed`; only the `candidates` pairs (`neighbour_pairs`) when given, else
    every pair."""
    insights = _relatable(insights)
    terms = {insight.insight_id: content_terms(strip_markers(insight.text)) for insight in insights}
    weights = _weights(insights, terms)
    order = {insight.insight_id: index for index, insight in enumerate(insights)}
    pairs_weighed: Iterable[tuple[Insight, Insight]] = combinations(insights, 2)
    if candidates is not None:
        ordered = {
            tuple(sorted((a, b), key=order.__getitem__))
            for a, b in candidates
            if a in order and b in order and a != b
        }
        pairs_weighed = [
            (insights[order[a]], insights[order[b]])
            for a, b in sorted(ordered, key=lambda pair: (order[pair[0]], order[pair[1]]))
        ]
    by_papers: dict[tuple[str, str], list[tuple[float, Insight, Insight]]] = {}
    for first, second in pairs_weighed:
        if not different_papers(first, second):
            continue
        similarity = weights.similarity(terms[first.insight_id], terms[second.insight_id])
        if similarity >= RELATED_SIMILARITY:
            key = (_paper_of(first), _paper_of(second))
            by_papers.setdefault(key, []).append((similarity, first, second))
    kept = [
        related
        for pairs in by_papers.values()
        for related in sorted(pairs, key=lambda pair: -pair[0])[:MAX_PER_PAPER_PAIR]
    ]
    typed = {insight.insight_id: insight for _, *pair in kept for insight in pair}
    grounds = _Grounds(
        claims={insight_id: _claims(strip_markers(one.text)) for insight_id, one in typed.items()},
        title_names={paper: _title_names(title) for paper, title in titles.items()},
        weights=weights,
    )
    pairs = [_typed(first, second, similarity, grounds) for similarity, first, second in kept]
    pairs.sort(key=lambda p: (order[p.source.insight_id], order[p.target.insight_id]))
    return [
        Relationship(
            source=pair.source.insight_id,
            target=pair.target.insight_id,
            type=pair.type,
            explanation=_explanation(
                pair, titles, weights, terms[pair.source.insight_id] & terms[pair.target.insight_id]
            ),
        )
        for pair in pairs
    ]


def _listed(items: list[str]) -> str:
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)


_WORD = re.compile(r"[^\W\d_]+")


def _reads_as_prose(sentence: str) -> bool:
    """A theme sentence is a whole sentence ("... we show that X."), not the tail of one a
    passage cut, nor a heading an insight quoted (most of its words in capitals)."""
    found = _WORD.findall(sentence)
    in_lower_case = sum(any(char.islower() for char in word) for word in found)
    return whole_sentence(sentence) and 2 * in_lower_case >= len(found)


def offline_theme(insights: list[Insight]) -> str:
    """The collection's most central sentence, what its papers share: of the insights' whole
    sentences in prose (markers removed, at least MIN_SENTENCE_TERMS terms), the one LexRank
    ranks first on the graph of their TF-IDF cosines with the edges between sentences of one
    paper dropped, so that a paper repeating itself makes no theme; ranked over the
    CENTRAL_SAMPLE closest to their TF-IDF centroid, so that the work stays linear in the
    insights. A sentence reporting an evaluation, or opening by pointing back ("They ..."), is
    taken only when no other is left. For one
    paper, its most central sentence; empty when no insight has a whole sentence."""
    candidates = [
        (_paper_of(insight), text)
        for insight in insights
        for span in sentences(strip_markers(insight.text))
        if _reads_as_prose(text := " ".join(span.text.split()))
    ]
    terms = [tokenize(text) for _, text in candidates]
    whole = [i for i, found in enumerate(terms) if len(found) >= MIN_SENTENCE_TERMS]
    # What the papers are about, not how they scored ("Experiments show that X outperforms Y"),
    # where any sentence says more. A figure counts as a report, so a sentence citing other work
    # by year or number ("(Smith et al. 2008)", "[12]") is passed over too.
    kept = [i for i in whole if not reports_evaluation(candidates[i][1])] or whole
    # A theme stands alone: "They accumulate in stem cells" names nothing without its antecedent.
    kept = [i for i in kept if not points_back(candidates[i][1])] or kept
    if not kept:
        return ""
    sample = [kept[i] for i in closest_to_centroid([terms[i] for i in kept], CENTRAL_SAMPLE)]
    weights = lexrank_similarity([terms[i] for i in sample])
    papers = np.array([candidates[i][0] for i in sample])
    across = np.where(papers[:, None] != papers[None, :], weights, 0.0)
    scores = pagerank(across if across.any() else weights)
    return candidates[sample[int(np.argmax(scores))]][1]


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _ranked_insights(
    papers: list[str], insights: list[Insight], relationships: list[Relationship]
) -> dict[str, list[Insight]]:
    """Each paper's cited insights, the most related first, then the longest."""
    degree = Counter(r.source for r in relationships) + Counter(r.target for r in relationships)
    ranked: dict[str, list[Insight]] = {paper: [] for paper in papers}
    for insight in insights:
        if insight.citations and insight.paper_id in ranked:
            ranked[insight.paper_id].append(insight)
    for own in ranked.values():
        own.sort(key=lambda i: (-degree[i.insight_id], -len(set(words(strip_markers(i.text))))))
    return ranked


def _relations_of(insights: list[Insight], relationships: list[Relationship]) -> Counter[str]:
    """How many relationships touch an insight of each paper."""
    paper_of = {insight.insight_id: insight.paper_id for insight in insights}
    return Counter(
        paper
        for r in relationships
        for paper in {paper_of.get(r.source), paper_of.get(r.target)}
        if paper is not None
    )


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
    ranked = _ranked_insights(papers, insights, relationships)
    cited = [paper for paper in papers if ranked[paper]]
    opening = [theme] if theme else []
    room = MAX_NARRATIVE_SENTENCES - len(opening) - (len(cited) < len(papers))
    featured = cited
    if len(cited) > room:
        relations = _relations_of(insights, relationships)
        position = {paper: index for index, paper in reversed(list(enumerate(papers)))}
        most_related = sorted(cited, key=lambda p: (-relations[p], position[p]))[: max(room - 1, 0)]
        featured = [paper for paper in cited if paper in most_related]
    shown = set(featured)
    others = [paper for paper in papers if paper not in shown]
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


def offline_analysis(inputs: RelationsInput) -> RelationsReply:
    titles = {paper.paper_id: paper.title for paper in inputs.papers}
    relationships = offline_relationships(inputs.insights, titles, inputs.candidates)
    theme = offline_theme(inputs.insights)
    papers = [paper.paper_id for paper in inputs.papers]
    narrative = offline_narrative(papers, inputs.insights, relationships, titles, theme)
    return RelationsReply(relationships=relationships, theme=theme, narrative=narrative)
