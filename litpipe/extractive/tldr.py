"""The offline engine of the `tldr` agent: a one-sentence summary (a TL;DR) of one paper from its
title and abstract.

It picks the abstract's sentence that best stands for the whole abstract and its title:

    score(s) = centrality(s) + TITLE_WEIGHT * overlap(s, title)

where centrality(s) is the mean cosine overlap of s's content words with every other sentence
of the abstract (the sentence sharing most with the rest says what the abstract is about, as in
LexRank's degree centrality) and overlap(s, title) the cosine overlap with the title's content
words (the title names the contribution). Ties go to the earlier sentence. TITLE_WEIGHT was
chosen on SciTLDR-A's dev split only (`benchmarks/eval_tldr.py --tune`), never on test.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field, field_validator

from litpipe import text as text_helpers
from litpipe.extractive.fields import NON_BLANK

# Chosen on SciTLDR-A dev (619 papers) by mean ROUGE-1/2/L against the best gold TL;DR; see the
# module docstring.
TITLE_WEIGHT = 1.0


class TldrInput(BaseModel):
    title: str
    abstract: str


class TldrReply(BaseModel):
    tldr: str = Field(
        description="One sentence: the paper's main contribution or finding.", pattern=NON_BLANK
    )

    @field_validator("tldr")
    @classmethod
    def _one_line(cls, text: str) -> str:
        return " ".join(text.split())


def sentence_scores(
    title: str, candidates: Sequence[str], title_weight: float = TITLE_WEIGHT
) -> list[float]:
    """Each candidate sentence's score: centrality among the candidates plus the weighted
    overlap with the title."""
    terms = [set(text_helpers.words(sentence)) for sentence in candidates]
    title_terms = set(text_helpers.words(title))
    scores = []
    for index, own in enumerate(terms):
        others = [text_helpers.overlap(own, other) for j, other in enumerate(terms) if j != index]
        centrality = sum(others) / len(others) if others else 0.0
        scores.append(centrality + title_weight * text_helpers.overlap(own, title_terms))
    return scores


def offline_tldr(inputs: TldrInput, title_weight: float = TITLE_WEIGHT) -> TldrReply:
    """The abstract's best sentence by `sentence_scores` (the title itself when the abstract has
    no sentence)."""
    candidates = [" ".join(span.text.split()) for span in text_helpers.sentences(inputs.abstract)]
    if not candidates:
        return TldrReply(tldr=inputs.title)
    scores = sentence_scores(inputs.title, candidates, title_weight)
    best = max(range(len(candidates)), key=lambda index: (scores[index], -index))
    return TldrReply(tldr=candidates[best])
