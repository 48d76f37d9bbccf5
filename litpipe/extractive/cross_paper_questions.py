"""The offline engine of the `cross_paper_questions` agent: comparative questions about a whole
collection, each naming the papers it compares.

It pairs papers by the content words their titles and abstracts share (most shared first,
covering as many distinct papers as it can) and slots each pair's titles and key phrases,
verbatim, into fixed comparative frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from litpipe.extractive.paper_questions import QuestionText
from litpipe.retrieval.neighbours import nearest_neighbours, term_vectors
from litpipe.text import Phrase, overlap, phrases, sentences, word_counts, words


class ComparedPaper(BaseModel):
    paper_id: str
    title: str
    abstract: str


class CrossPaperQuestionsInput(BaseModel):
    collection: str
    papers: list[ComparedPaper]
    count: int = Field(ge=1, le=10)


class ComparativeDraft(QuestionText):
    style: Literal["comparative"] = "comparative"
    papers: list[str] = Field(
        description="The paper ids the question compares (two or more).", min_length=2
    )


class CrossPaperQuestionsReply(BaseModel):
    questions: list[ComparativeDraft]


# Each frame takes the two papers' titles and a key phrase of each.
FRAMES: tuple[str, ...] = (
    'What distinguishes the approach of "{title_a}" from that of "{title_b}"?',
    'How do the findings on {phrase_a} in "{title_a}" relate to those on {phrase_b} in '
    '"{title_b}"?',
    'Do "{title_a}" and "{title_b}" agree about {phrase_a}?',
    'What could the work on {phrase_b} in "{title_b}" add to the study of {phrase_a} in '
    '"{title_a}"?',
)


# Neighbours kept per paper beyond the 2 x count that chosen pairs can cover: the sparse
# products rank in float32, and a near tie at the edge must not lose the best pair.
_SPARE_NEIGHBOURS = 5


@dataclass(frozen=True)
class _Profile:
    paper: ComparedPaper
    words: frozenset[str]

    @property
    def title(self) -> str:
        return " ".join(self.paper.title.split()) or self.paper.paper_id


def _profile(paper: ComparedPaper) -> _Profile:
    return _Profile(paper, frozenset(words(f"{paper.title} {paper.abstract}")))


def _pairs(profiles: list[_Profile], count: int) -> list[tuple[_Profile, _Profile]]:
    """`count` pairs: the pair covering the most papers not yet covered first, then the one
    sharing the most words; the chosen pairs repeat in order when there are fewer pairs."""
    candidates = _candidate_pairs(profiles, count)
    chosen: list[tuple[_Profile, _Profile]] = []
    covered: set[str] = set()
    while candidates and len(chosen) < count:
        best = max(
            candidates,
            key=lambda pair: (
                len({pair[0].paper.paper_id, pair[1].paper.paper_id} - covered),
                overlap(set(pair[0].words), set(pair[1].words)),
            ),
        )
        candidates.remove(best)
        chosen.append(best)
        covered |= {best[0].paper.paper_id, best[1].paper.paper_id}
    return [chosen[index % len(chosen)] for index in range(count)] if chosen else []


def _candidate_pairs(profiles: list[_Profile], count: int) -> list[tuple[_Profile, _Profile]]:
    """The pairs `_pairs` chooses among, in `combinations` order: every pair of a small
    collection; else each paper with its nearest by shared words, enough of them (more than the
    2 x `count` papers that the chosen pairs can cover) that the best pair of two papers not yet
    covered is always among them. 5,000 papers have 12.5 million pairs."""
    if len(profiles) <= 2 * count + _SPARE_NEIGHBOURS:
        return list(combinations(profiles, 2))
    found = nearest_neighbours(
        term_vectors([profile.words for profile in profiles]),
        np.arange(len(profiles)),
        2 * count + _SPARE_NEIGHBOURS,
    )
    pairs = sorted({(min(i, j), max(i, j)) for _, i, j in found})
    return [(profiles[i], profiles[j]) for i, j in pairs]


def _key_phrase(profile: _Profile, other: _Profile) -> str:
    """The abstract's phrase (or the title's) whose words the other paper shares most, then
    one not starting its sentence (its capitals are its own), then whose words recur most."""
    text = profile.paper.abstract or profile.paper.title
    counts = word_counts(profile.paper.title, profile.paper.abstract)
    found: list[Phrase] = [p for s in sentences(text) for p in phrases(text, s)]
    if not found:
        return profile.title

    def score(phrase: Phrase) -> tuple[int, bool, int]:
        shared = sum(word in other.words for word in phrase.words)
        return shared, not phrase.sentence_initial, sum(counts[word] for word in phrase.words)

    return max(found, key=score).text


def offline_cross_paper_questions(inputs: CrossPaperQuestionsInput) -> CrossPaperQuestionsReply:
    profiles = [_profile(paper) for paper in inputs.papers]
    drafts = []
    for index, (first, second) in enumerate(_pairs(profiles, inputs.count)):
        text = FRAMES[index % len(FRAMES)].format(
            title_a=first.title,
            title_b=second.title,
            phrase_a=_key_phrase(first, second),
            phrase_b=_key_phrase(second, first),
        )
        drafts.append(
            ComparativeDraft(text=text, papers=[first.paper.paper_id, second.paper.paper_id])
        )
    return CrossPaperQuestionsReply(questions=drafts)
