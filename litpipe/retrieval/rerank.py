"""Rerankers: one interface that reorders a query's fused candidates, best first.

`NoReranker` keeps the fused (or MMR) order; `CrossEncoderReranker` scores (query, passage) pairs
with a sentence-transformers CrossEncoder. The LLM rerankers (relevance and debate scoring) are
agents and live in `litpipe.agents.question_evidence.rerankers`, which also chooses one from
the settings.

A reranker never fails a query for its model's sake: when the model cannot be loaded or called it
logs a warning naming itself and the reason, and returns the candidates in the order they came.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from litpipe.retrieval.embedder import folder_fingerprint
from litpipe.retrieval.text import tokenize
from litpipe.schemas import RetrievedChunk

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

logger = logging.getLogger(__name__)

_LOADED_CROSS_ENCODERS: dict[tuple[str, str], CrossEncoder] = {}
_LOADED_CROSS_ENCODERS_LOCK = threading.Lock()
_WORD = re.compile(r"\S+")
_PUNCTUATION = "\"'\u201c\u201d\u2018\u2019()[]{}.,;:!?"


class Reranker(Protocol):
    """Reorders candidates for a query: best first, each with its `rerank_score` (and its
    `rerank_reason` when the reranker gives one); equal scores keep the incoming order."""

    name: str

    @property
    def version(self) -> str:
        """What decides its scores (its name, model, prompt): part of a stage's code version."""
        ...

    def rerank(self, query: str, candidates: list[RetrievedChunk]) -> list[RetrievedChunk]: ...


class RerankerError(RuntimeError):
    """A reranker's model cannot be loaded or used; the message says which and why."""


def ranked(
    candidates: Sequence[RetrievedChunk],
    scores: Sequence[float],
    reasons: Sequence[str | None] | None = None,
) -> list[RetrievedChunk]:
    """The candidates sorted by score, best first, stable, each carrying its score and reason."""
    reasons = reasons if reasons is not None else [None] * len(candidates)
    if not len(candidates) == len(scores) == len(reasons):
        raise ValueError(
            f"{len(candidates)} candidates but {len(scores)} scores and {len(reasons)} reasons"
        )
    order = sorted(range(len(candidates)), key=lambda index: -scores[index])
    return [
        candidates[index].model_copy(
            update={"rerank_score": float(scores[index]), "rerank_reason": reasons[index]}
        )
        for index in order
    ]


def fallback(
    reranker: str, candidates: Sequence[RetrievedChunk], reason: str
) -> list[RetrievedChunk]:
    """The candidates in the order they came, unscored, after a warning saying why."""
    logger.warning(
        "reranker %s failed, keeping the fused order of %d candidates: %s",
        reranker,
        len(candidates),
        " ".join(reason.split()),
    )
    return [
        candidate.model_copy(update={"rerank_score": None, "rerank_reason": None})
        for candidate in candidates
    ]


class NoReranker:
    """Keeps the incoming (fused, diversified) order."""

    name = "none"
    version = "none"

    def rerank(self, query: str, candidates: list[RetrievedChunk]) -> list[RetrievedChunk]:
        return list(candidates)


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder (a name in the Hugging Face cache, or a local folder)
    scoring each (query, passage) pair; loaded on first use, once per process and device."""

    name = "cross-encoder"

    def __init__(self, model_name_or_path: str, device: str = "cpu", batch_size: int = 32) -> None:
        self.model_name_or_path = model_name_or_path
        self.device = device
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.model_name_or_path!r}, device={self.device!r})"

    @property
    def version(self) -> str:
        # A local folder is known by its content too: a model retrained in place scores anew.
        folder = Path(self.model_name_or_path).expanduser()
        content = f"-{folder_fingerprint(folder)}" if folder.is_dir() else ""
        return f"{self.name}:{self.model_name_or_path}{content}"

    def load(self) -> CrossEncoder:
        """The model, loaded now if it is not yet; RerankerError when it cannot be."""
        key = (self.model_name_or_path, self.device)
        with _LOADED_CROSS_ENCODERS_LOCK:
            if key not in _LOADED_CROSS_ENCODERS:
                from sentence_transformers import CrossEncoder

                try:
                    _LOADED_CROSS_ENCODERS[key] = CrossEncoder(
                        self.model_name_or_path, device=self.device
                    )
                except (OSError, ValueError, RuntimeError) as error:
                    raise RerankerError(
                        f"cannot load the CrossEncoder {self.model_name_or_path!r} (a local "
                        "folder, or a name in the Hugging Face cache: litpipe runs offline): "
                        f"{error}"
                    ) from error
            return _LOADED_CROSS_ENCODERS[key]

    def scores(self, query: str, passages: list[str]) -> list[float]:
        """The model's score of each (query, passage) pair; RerankerError if it cannot give one."""
        model = self.load()
        try:
            predicted = model.predict(
                [(query, passage) for passage in passages],
                batch_size=self.batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        except (ValueError, RuntimeError) as error:
            raise RerankerError(f"{self.model_name_or_path}: {error}") from error
        if predicted.ndim != 1:
            raise RerankerError(
                f"{self.model_name_or_path} gives {predicted.shape[-1]} scores per pair (a "
                "classifier); a reranker needs a model with one relevance score"
            )
        return [float(score) for score in predicted]

    def rerank(self, query: str, candidates: list[RetrievedChunk]) -> list[RetrievedChunk]:
        if not candidates:
            return []
        try:
            scores = self.scores(query, [candidate.text for candidate in candidates])
        except RerankerError as error:
            return fallback(self.name, candidates, str(error))
        return ranked(candidates, scores)


@dataclass(frozen=True)
class TermCoverage:
    """Which of a query's terms (`tokenize`'s, each counted once) a text contains.

    `matched` and `missing` name the terms as the text and the query write them ("IL-6", not
    `il6`), once each, in the order they appear there.
    """

    share: float
    missing: list[str]
    text: str = field(repr=False)
    found: frozenset[str] = field(repr=False)

    @cached_property
    def matched(self) -> list[str]:
        # Named on demand: finding each term's written form tokenizes the text word by word,
        # and the support score, which grades some 50,000 sentences at 5,000 papers, never asks.
        return _written(self.text, set(self.found))

    def describe(self) -> str:
        """One sentence naming the words the text shares with the query, and those it lacks."""
        if not self.matched:
            return "The passage mentions none of the query's terms."
        if not self.missing:
            return f"The passage mentions every term of the query: {', '.join(self.matched)}."
        return f"The passage mentions {', '.join(self.matched)} but not {', '.join(self.missing)}."


def term_coverage(query: str, text: str) -> TermCoverage:
    """The share of the query's distinct terms found in `text`: the lexical signal of the
    offline rerankers (no IDF, so a passage is judged on its own, whatever the collection)."""
    query_terms = list(dict.fromkeys(tokenize(query)))
    found = set(tokenize(text)).intersection(query_terms)
    missing = [term for term in query_terms if term not in found]
    share = len(found) / len(query_terms) if query_terms else 0.0
    return TermCoverage(
        share=share, missing=_written(query, set(missing)), text=text, found=frozenset(found)
    )


def _written(text: str, terms: set[str]) -> list[str]:
    """For each of `terms`, the first word of `text` holding it, as written there, in order."""
    written: list[str] = []
    remaining = set(terms)
    for match in _WORD.finditer(text):
        if not remaining:
            break
        word = match.group().strip(_PUNCTUATION)
        held = remaining.intersection(tokenize(word))
        if held:
            written.append(word)
            remaining -= held
    return written
