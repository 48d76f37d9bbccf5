"""The offline support score of a cited sentence: how much of what it says its passages hold.

Two signals, mixed by a weight calibrated on real data (`benchmarks/support_calibration.py`, on
the labelled pairs in `litpipe_tests/data/support_pairs.jsonl`):

- lexical: the share of the sentence's content terms found in its passages (`term_coverage`).
  It names what is missing, but it fails a faithful paraphrase and passes a passage of the same
  field that shares the vocabulary;
- semantic: the cosine of the sentence's embedding with its closest passage's (a passage
  counting whole and by its sentences). It sees a
  paraphrase, but it is only a similarity, so it is mixed with the lexical share, not trusted
  alone.

Pure Python over any encoder with `encode(texts) -> L2-normalised rows`, so the asset check, a
notebook and the tests (with a fake encoder) share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, Field

from litpipe.retrieval.rerank import term_coverage
from litpipe.retrieval.text import tokenize
from litpipe.text import sentences

# Weight of the lexical share in the combined score (the semantic cosine has the rest), fitted
# with the threshold (`grading.support_threshold`'s default) on the train half of the labelled
# pairs by `benchmarks/support_calibration.py` (figures in docs/methods.md, "Support score"). The
# fit gave the lexical share no weight: once the cosine is taken sentence by sentence, mixing in
# the share lowers the train AUC, so it stays a diagnostic (`missing`) and the fallback when no
# encoder is given.
LEXICAL_WEIGHT = 0.0

# The sentences of a passage whose cosine with a claim is taken: those sharing most terms with
# it. A claim quoting a detail shares its words with the sentence it quotes, and embedding
# every sentence of every cited passage was a fifth of the 5,000-paper pipeline's time.
SENTENCES_PER_PASSAGE = 3


class Encoder(Protocol):
    def encode(self, texts: list[str]) -> NDArray[np.float32]: ...


class SupportScore(BaseModel):
    """One claim against its passages."""

    score: float = Field(description="The combined score (the lexical share without encoder).")
    lexical: float = Field(description="Share of the claim's terms found in its passages.")
    semantic: float | None = Field(
        description="Cosine of the claim with its closest passage (None without an encoder)."
    )
    missing: list[str] = Field(description="The claim's words its passages lack.")


def combined(
    lexical: float, semantic: float | None, lexical_weight: float = LEXICAL_WEIGHT
) -> float:
    """The score a sentence is graded by: the weighted mean of both signals when there is a
    semantic one, else the lexical share alone."""
    if semantic is None:
        return lexical
    return lexical_weight * lexical + (1 - lexical_weight) * semantic


def support_scores(
    claims: Sequence[tuple[str, Sequence[str]]],
    encoder: Encoder | None,
    lexical_weight: float = LEXICAL_WEIGHT,
) -> list[SupportScore]:
    """Scores each (claim, its passages). Every distinct text is embedded once, in one batch.

    Lexically the passages count together (a comparative sentence is supported by its passages
    jointly); semantically the closest one counts, since the mean of several embeddings says
    little and a chunk already fits the model whole. A claim with no passage scores 0.
    """
    semantic: list[float | None] = [None] * len(claims)
    if encoder is not None:
        semantic = list(_closest_cosines(claims, encoder))
    scores: list[SupportScore] = []
    for (claim, passages), cosine in zip(claims, semantic, strict=True):
        found = term_coverage(claim, "\n".join(passages))
        scores.append(
            SupportScore(
                score=round(combined(found.share, cosine, lexical_weight), 3),
                lexical=round(found.share, 3),
                semantic=None if cosine is None else round(cosine, 3),
                missing=found.missing,
            )
        )
    return scores


def _closest_cosines(claims: Sequence[tuple[str, Sequence[str]]], encoder: Encoder) -> list[float]:
    # A passage counts whole and by its sentences: a sentence quoting one detail of a passage is
    # far from the passage's mean meaning but close to the sentence it quotes.
    passage_sentences = {
        passage: [(span.text, set(tokenize(span.text))) for span in sentences(passage)]
        for _, passages in claims
        for passage in passages
    }
    parts = [
        [(passage, *_closest_sentences(claim, passage_sentences[passage])) for passage in passages]
        for claim, passages in claims
    ]
    texts = list(
        dict.fromkeys(
            [claim for claim, _ in claims]
            + [text for of_claim in parts for of_passage in of_claim for text in of_passage]
        )
    )
    vectors = encoder.encode(texts) if texts else np.empty((0, 0), dtype=np.float32)
    rows = dict(zip(texts, vectors, strict=True))
    cosines: list[float] = []
    for (claim, _), of_claim in zip(claims, parts, strict=True):
        if not of_claim:
            cosines.append(0.0)
            continue
        best = max(
            float(np.dot(rows[claim], rows[text])) for of_passage in of_claim for text in of_passage
        )
        # A negative cosine is no more support than an orthogonal one: keep the score in [0, 1].
        cosines.append(min(max(best, 0.0), 1.0))
    return cosines


def _closest_sentences(claim: str, candidates: list[tuple[str, set[str]]]) -> list[str]:
    """The passage sentences sharing most terms with `claim`, at most
    `SENTENCES_PER_PASSAGE`, in the passage's order."""
    if len(candidates) <= SENTENCES_PER_PASSAGE:
        return [text for text, _ in candidates]
    terms = set(tokenize(claim))
    shared = sorted(range(len(candidates)), key=lambda i: (-len(terms & candidates[i][1]), i))[
        :SENTENCES_PER_PASSAGE
    ]
    return [candidates[i][0] for i in sorted(shared)]
