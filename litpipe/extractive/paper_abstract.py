"""The offline engine of the `paper_abstract` agent: an abstract for a paper whose PDF has none,
from its opening sections (introduction, background) and its closing ones (conclusions,
discussion).

It picks whole sentences of them: 150 to 250 words, the most central (sharing words with many
others), title-like and saying what the paper does, leaving room for the conclusions, in
document order. `paper_regions` and `region_sentences` also say what a model is shown of the
paper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, Field, field_validator

from litpipe.extractive.fields import NON_BLANK
from litpipe.schemas import PaperDocument, Section
from litpipe.text import Span, overlap, sentences, words

MIN_WORDS = 150
MAX_WORDS = 250
# While there are closing sentences to pick from, the opening ones may fill this much.
OPENING_MAX_WORDS = 170
OPENING_MIN_WORDS = 100

# Headings compared with everything but letters removed ("1. Introduction" → "introduction",
# "A c kno wledg ements" → "acknowledgements").
_SKIPPED_HEADING = re.compile(
    r"frontmatter|acknowledg|funding|contribution|availability|competing|conflict|declaration|"
    r"supplement|abbreviation|publisher|figure|legend|reference|bibliograph|^notes?$|method|"
    r"material|appendix|ethic|consent"
)
_OPENING_HEADING = re.compile(r"introduction|background|abstract|summary|significance|overview")
_CLOSING_HEADING = re.compile(r"conclu|discussion|outlook|perspective")
_CONCLUSION_HEADING = re.compile(r"conclu")
_MIN_SENTENCE_WORDS = 8
_MAX_SENTENCE_WORDS = 60
_MIN_LETTER_SHARE = 0.7
_SENTENCE_SHAPE = re.compile(r"^[\"'(\[]?[A-Z0-9].*[.!?][\"')\]\u201d\u2019]*$", re.S)
_NOT_PROSE = re.compile(r"^(fig(ure)?s?|tables?|supplementary)\b|https?:|www\.|@|\bdoi\b", re.I)
# A figure panel's legend that strayed into the text: "C Relative HDR ...", "(F and G) PARP1 ...".
_PANEL_LABEL = re.compile(r"^\(?[A-Z](\s*(and|,|-|\u2013)\s*[A-Z])*\)?\s+[A-Z]")
# Sentences that state what the paper does or found: an abstract's own kind of sentence.
_SUMMARY_CUES = re.compile(
    r"\b(here,? we|in this (study|work|paper|article)|we (show|demonstrate|propose|present|"
    r"report|find|found|developed?|describe|identif\w+)|our (results|findings|study|data|work)|"
    r"in (conclusion|summary)|taken together|together,)\b",
    re.I,
)
_CENTRALITY_WEIGHT = 1.0
_TITLE_WEIGHT = 0.5
_CUE_WEIGHT = 0.5
_LEAD_WEIGHT = 0.3
_LEAD_SENTENCES = 2
# Sentences as alike as this to one already chosen would repeat it.
_REDUNDANT = 0.5


class AbstractInput(BaseModel):
    paper_id: str
    title: str
    text: str = Field(description="The paper's body text (`PaperDocument.text`).")
    sections: list[Section] = Field(
        default_factory=list, description="Its sections, as offsets into `text`."
    )

    @classmethod
    def of(cls, document: PaperDocument) -> AbstractInput:
        return cls(
            paper_id=document.paper_id,
            title=document.title,
            text=document.text,
            sections=document.sections,
        )


class AbstractReply(BaseModel):
    abstract: str = Field(
        description="The abstract: one paragraph of plain prose.", pattern=NON_BLANK
    )

    @field_validator("abstract")
    @classmethod
    def _stripped(cls, abstract: str) -> str:
        return abstract.strip()


@dataclass(frozen=True)
class Regions:
    """Where the paper opens (introduction) and closes (conclusions), as (start, end) offsets;
    the closing regions with the conclusions first."""

    opening: list[tuple[int, int]]
    closing: list[tuple[int, int]]


def _heading_key(heading: str) -> str:
    return re.sub(r"[^a-z]", "", heading.lower())


def paper_regions(inputs: AbstractInput) -> Regions:
    body = [s for s in inputs.sections if not _SKIPPED_HEADING.search(_heading_key(s.heading))]
    if not body:
        # No usable sections: the text's start is its opening, its end its closing.
        whole = [(0, len(inputs.text))]
        return Regions(opening=whole, closing=whole)
    opening = [s for s in body if _OPENING_HEADING.search(_heading_key(s.heading))] or body[:1]
    closing = [
        s for s in body if _CLOSING_HEADING.search(_heading_key(s.heading)) and s not in opening
    ]
    if not closing and body[-1] not in opening:
        closing = body[-1:]
    # Conclusions first: short and to the point, they must not be crowded out of an excerpt by
    # a long discussion before them.
    closing.sort(key=lambda s: not _CONCLUSION_HEADING.search(_heading_key(s.heading)))
    return Regions(
        opening=[(s.char_start, s.char_end) for s in opening],
        closing=[(s.char_start, s.char_end) for s in closing],
    )


def region_sentences(text: str, regions: list[tuple[int, int]]) -> list[Span]:
    return [span for start, end in regions for span in sentences(text, start, end)]


def _prose(sentence: Span) -> bool:
    """A whole sentence of running prose: no heading, caption, link or table row."""
    text = sentence.text
    count = len(text.split())
    non_space = [char for char in text if not char.isspace()]
    letters = sum(char.isalpha() for char in non_space)
    return (
        _MIN_SENTENCE_WORDS <= count <= _MAX_SENTENCE_WORDS
        and _SENTENCE_SHAPE.match(text) is not None
        and _NOT_PROSE.search(text) is None
        and _PANEL_LABEL.match(text) is None
        and letters >= _MIN_LETTER_SHARE * len(non_space)
    )


@dataclass(frozen=True)
class _Candidate:
    sentence: Span
    words: frozenset[str]
    score: float
    length: int


def _centrality(bags: list[frozenset[str]]) -> list[float]:
    """Each sentence's mean word overlap (cosine of word sets) with every other sentence.

    Linear rather than pairwise: the sum over sentences j of |A∩Bj| / sqrt(|A||Bj|) is the sum,
    over the words of A, of each word's weight sum_j [w in Bj] / sqrt(|Bj|), over sqrt(|A|);
    the sentence's overlap with itself (1) is taken out.
    """
    weight: dict[str, float] = {}
    for bag in bags:
        for word in bag:
            weight[word] = weight.get(word, 0.0) + 1 / len(bag) ** 0.5
    others = max(len(bags) - 1, 1)
    return [
        (sum(weight[word] for word in bag) / len(bag) ** 0.5 - 1) / others if bag else 0.0
        for bag in bags
    ]


def _scored(sentences_: list[Span], title: str, lead: set[int]) -> list[_Candidate]:
    """Central sentences (sharing words with many others), title-like ones and those that say
    what the paper does score high; the introduction's opening sentences get a little more."""
    bags = [frozenset(words(s.text)) for s in sentences_]
    title_words = set(words(title))
    centrality = _centrality(bags)
    most_central = max(centrality, default=0.0) or 1.0
    return [
        _Candidate(
            sentence=s,
            words=bag,
            length=len(s.text.split()),
            score=_CENTRALITY_WEIGHT * central / most_central
            + _TITLE_WEIGHT * overlap(bag, title_words)
            + _CUE_WEIGHT * (_SUMMARY_CUES.search(s.text) is not None)
            + _LEAD_WEIGHT * (s.start in lead),
        )
        for s, bag, central in zip(sentences_, bags, centrality, strict=True)
    ]


def _fill(ranked: list[_Candidate], chosen: list[_Candidate], at_least: int, at_most: int) -> None:
    """Adds the best-ranked sentences that fit and repeat nothing until `at_least` words."""
    for candidate in ranked:
        total = sum(c.length for c in chosen)
        if total >= at_least:
            return
        if candidate in chosen or total + candidate.length > at_most:
            continue
        if any(overlap(candidate.words, c.words) >= _REDUNDANT for c in chosen):
            continue
        chosen.append(candidate)


def _opening_words(text: str, limit: int) -> str:
    """The text's first `limit` words, verbatim: for a paper without a single usable sentence."""
    ends = [match.end() for match in re.finditer(r"\S+", text)][:limit]
    return text[: ends[-1]].strip() if ends else ""


def offline_abstract(inputs: AbstractInput) -> AbstractReply:
    """An extractive abstract: whole sentences of the opening and closing sections, in order."""
    regions = paper_regions(inputs)
    opening = [s for s in region_sentences(inputs.text, regions.opening) if _prose(s)]
    opening_starts = {s.start for s in opening}
    closing = [
        s
        for s in region_sentences(inputs.text, regions.closing)
        if _prose(s) and s.start not in opening_starts
    ]
    lead = {s.start for s in opening[:_LEAD_SENTENCES]}
    candidates = _scored(opening + closing, inputs.title, lead)
    by_score = sorted(candidates, key=lambda c: (-c.score, c.sentence.start))
    opening_ranked = [c for c in by_score if c.sentence.start in opening_starts]
    closing_ranked = [c for c in by_score if c.sentence.start not in opening_starts]
    chosen: list[_Candidate] = []
    if closing_ranked:
        # Leave room for the conclusions: an abstract ends with what the paper found.
        _fill(opening_ranked, chosen, OPENING_MIN_WORDS, OPENING_MAX_WORDS)
        _fill(closing_ranked, chosen, MIN_WORDS, MAX_WORDS)
    _fill(by_score, chosen, MIN_WORDS, MAX_WORDS)
    if chosen:
        ordered = sorted(chosen, key=lambda c: c.sentence.start)
        return AbstractReply(abstract=" ".join(c.sentence.text for c in ordered))
    return AbstractReply(abstract=_opening_words(inputs.text, MAX_WORDS) or inputs.title)
