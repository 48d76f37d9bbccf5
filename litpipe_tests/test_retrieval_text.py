"""BM25 tokenization of scientific text."""

from __future__ import annotations

from litpipe.retrieval.text import STOP_WORDS, tokenize


def test_lowercases_and_drops_stop_words_but_keeps_negations() -> None:
    assert tokenize("The Effect of Aspirin is NOT significant") == [
        "effect",
        "aspirin",
        "not",
        "signific",
    ]
    assert "the" in STOP_WORDS and "not" not in STOP_WORDS


def test_hyphenated_compound_is_kept_whole_and_by_its_parts() -> None:
    assert tokenize("IL-6 and anti-inflammatory") == [
        "il6",
        "il",
        "6",
        "antiinflammatori",
        "anti",
        "inflammatori",
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
        "cell",
    ]
    assert tokenize("") == [] and tokenize("--- , ;") == []


def test_inflections_of_a_word_share_its_term() -> None:
    # A claim that "X inhibits tumours" must match a passage on "inhibition of tumours".
    assert tokenize("inhibits tumors") == tokenize("inhibition of tumor") == ["inhibit", "tumor"]
    assert tokenize("Proteins binding") == tokenize("protein binds") == ["protein", "bind"]


def test_tokenizes_from_several_threads_alike() -> None:
    from concurrent.futures import ThreadPoolExecutor

    text = "Mutations of p53 inhibited apoptosis in IL-6 knockout mice " * 50
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(tokenize, [text] * 64))
    assert all(result == results[0] for result in results) and "inhibit" in results[0]


def test_raised_numbers_are_neither_joined_to_their_word_nor_terms() -> None:
    # The PDF reader writes citation markers and exponents in superscripts (`U50¹⁴`, `10⁵`).
    assert tokenize("ProtT5-XL-U50\u00b9\u2074 predicts") == tokenize("ProtT5-XL-U50 predicts")
    assert "u50" in tokenize("ProtT5-XL-U50\u00b9\u2074")
    assert tokenize(
        "contact formation\u00b9\u2070,\u00b2\u2070 and models\u2077\u207b\u00b9\u00b3."
    ) == [
        "contact",
        "format",
        "model",
    ]
    assert tokenize("2 x 10\u2075 cells in Ca\u00b2\u207a on 500 cm\u00b2") == [
        "2",
        "x",
        "10",
        "cell",
        "ca",
        "500",
        "cm",
    ]
    # A name that ends in a digit keeps it: `PARP1` is no citation.
    assert tokenize("PARP1 binds") == ["parp1", "bind"]
