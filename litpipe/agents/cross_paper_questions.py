"""The `cross_paper_questions` agent: comparative questions about a whole collection, from all its
abstracts at once ("What distinguishes X's approach from Y's?"), each naming the papers it
compares.

The offline engine pairs papers by the content words their titles and abstracts share (most
shared first, covering as many distinct papers as it can) and slots each pair's titles and key
phrases, verbatim, into fixed comparative frames.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from litpipe.agents.base import Agent, StructuredClient, run_agent
from litpipe.agents.paper_questions import QuestionText
from litpipe.llm.prompts import PromptLibrary, fence
from litpipe.retrieval.neighbours import nearest_neighbours, term_vectors
from litpipe.schemas import PaperAbstract, Question
from litpipe.settings import Settings
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


class CrossPaperQuestionsAgent(Agent[CrossPaperQuestionsInput, CrossPaperQuestionsReply]):
    name = "cross_paper_questions"
    reply_tokens = 384
    offline = staticmethod(offline_cross_paper_questions)

    def prompt_values(self, inputs: CrossPaperQuestionsInput) -> dict[str, str]:
        listed = "\n\n".join(
            f"Paper id: {paper.paper_id}\nTitle:\n{fence(paper.title)}\n"
            f"Abstract:\n{fence(paper.abstract)}"
            for paper in inputs.papers
        )
        return dict(count=str(inputs.count), papers=listed)


def questions_from(
    collection: str, reply: CrossPaperQuestionsReply, paper_ids: Sequence[str], count: int
) -> list[Question]:
    """The reply as comparative questions: unknown paper ids dropped, a question left comparing
    fewer than two papers dropped, repeats dropped, at most `count` kept."""
    known = set(paper_ids)
    seen: set[str] = set()
    kept: list[tuple[str, list[str]]] = []
    for draft in reply.questions:
        papers = list(dict.fromkeys(p for p in draft.papers if p in known))
        if len(papers) < 2 or draft.text.casefold() in seen or len(kept) >= count:
            continue
        seen.add(draft.text.casefold())
        kept.append((draft.text, papers))
    return [
        Question(
            question_id=f"{collection}:x{index:02d}",
            paper_id="",
            style="comparative",
            text=text,
            papers=papers,
        )
        for index, (text, papers) in enumerate(kept)
    ]


def comparative_questions(
    collection: str,
    abstracts: list[PaperAbstract],
    settings: Settings,
    prompts: PromptLibrary,
    client: StructuredClient | None,
) -> list[Question]:
    """The collection's comparative questions (settings.synthesis.cross_paper_questions of
    them); none, and no call, when that is 0 (the default) or for a collection of one paper,
    which has nothing to compare."""
    if settings.synthesis.cross_paper_questions == 0 or len(abstracts) < 2:
        return []
    inputs = CrossPaperQuestionsInput(
        collection=collection,
        papers=[
            ComparedPaper(paper_id=a.paper_id, title=a.title, abstract=a.abstract)
            for a in abstracts
        ],
        count=settings.synthesis.cross_paper_questions,
    )
    reply = run_agent(CrossPaperQuestionsAgent(), inputs, settings, prompts, client)
    return questions_from(
        collection, reply, [a.paper_id for a in abstracts], settings.synthesis.cross_paper_questions
    )
