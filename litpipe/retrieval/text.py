"""Tokenization of scientific text for BM25: lowercased words and numbers, stop words dropped,
a hyphenated compound kept whole (`il6`) as well as by its parts (`il`, `6`), so a query that
writes "IL-6", "IL6" or "IL 6" matches all three spellings; every term reduced by the Porter
stemmer, as Lucene's English analyzer does, so "inhibits" meets "inhibition" (SciFact train BM25
nDCG@10: 0.660 unstemmed, 0.694 stemmed; Snowball's newer English stemmer 0.692). Raised
numbers and signs (`U50¹⁴`, `10⁻⁵`, `Ca²⁺`: the PDF reader writes citation markers and
exponents in superscripts) are left out, so that a marker neither joins the word it follows
(`u50`, not `u50¹⁴`) nor counts as a term, as the reference list's numbers mean nothing to a
query.

`content_terms` keeps the terms of a text's content words only: what the offline engine compares
to say whether two texts are about the same thing."""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import Stemmer

from litpipe.text import GENERIC_WORDS, SUPERSCRIPT_DIGITS, SUPERSCRIPT_MINUS, words

# Letters and digits (any script); a compound is such runs joined by hyphens.
_COMPOUND = re.compile(r"[^\W_]+(?:[-\u2010\u2011\u2013][^\W_]+)*")
_PART = re.compile(r"[^\W_]+")
_RAISED = dict.fromkeys(map(ord, SUPERSCRIPT_DIGITS + SUPERSCRIPT_MINUS + "\u207a"))

# A short English stop-word list (function words only: "not", "no", "without" stay, since a
# claim and its negation are different queries to a reader, and BM25 weighs them lightly anyway).
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "nor",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)


# A PyStemmer stemmer is not thread-safe: each thread gets its own.
_STEMMERS = threading.local()


def tokenize(text: str) -> list[str]:
    """BM25 terms of `text`, in order."""
    return list(_terms(text))


# The graders tokenize a passage once per claim citing it (a paper's every insight against
# the same sentences): remembering the last few thousand texts makes that once per passage.
@lru_cache(maxsize=4096)
def _terms(text: str) -> tuple[str, ...]:
    words: list[str] = []
    for match in _COMPOUND.finditer(text.casefold().translate(_RAISED)):
        parts = _PART.findall(match.group())
        if len(parts) > 1:
            words.append("".join(parts))
        words.extend(part for part in parts if part not in STOP_WORDS)
    return tuple(_stemmer().stemWords(words))


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_STEMMERS, "porter", None)
    if stemmer is None:
        stemmer = _STEMMERS.porter = Stemmer.Stemmer("porter")
    return stemmer


def content_terms(text: str) -> frozenset[str]:
    """The terms of a text's content words: without function words, research verbs ("we
    propose", "using") and words too general to say what it is about ("method", "results")."""
    return frozenset(tokenize(" ".join(word for word in words(text) if word not in GENERIC_WORDS)))
