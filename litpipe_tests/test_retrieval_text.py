"""BM25 tokenization of scientific text."""

from __future__ import annotations

from litpipe.retrieval.text import STOP_WORDS, tokenize


def test_lowercases_and_drops_stop_words_but_keeps_negations() -> None:
    assert tokenize("The Effect of Aspirin is NOT significant") == [
        "effect",
        "aspirin",
        "not",
        "significant",
    ]
    assert "the" in STOP_WORDS and "not" not in STOP_WORDS


def test_hyphenated_compound_is_kept_whole_and_by_its_parts() -> None:
    assert tokenize("IL-6 and anti-inflammatory") == [
        "il6",
        "il",
        "6",
        "antiinflammatory",
        "anti",
        "inflammatory",
    ]
    # Every spelling of a compound shares a term with the others.
    assert set(tokenize("IL6")) & set(tokenize("IL-6")) & {"il6"}
    assert set(tokenize("IL 6")) & set(tokenize("IL-6")) == {"il", "6"}


def test_numbers_and_unicode_letters_are_terms() -> None:
    assert tokenize("p53 rose 2.5-fold in TNF\u2010\u03b1 cells") == [
        "p53",
        "rose",
        "2",
        "5fold",
        "5",
        "fold",
        "tnf\u03b1",
        "tnf",
        "\u03b1",
        "cells",
    ]
    assert tokenize("") == [] and tokenize("--- , ;") == []
