"""A paragraph's lines joined into text: line-end hyphens mended or kept, and words a font's
spacing split rejoined, judged by the words the document itself uses."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from litpipe.ingest.pdf.columns import _Column
from litpipe.ingest.pdf.reading import _Line

_SOFT_HYPHEN = "\u00ad"
_HYPHENS = ("-", "\u2010", "\u2011")
# A line ending inside a URL or DOI: its hyphen is part of the address.
_URL_TAIL = re.compile(r"(?:https?:|www\.|doi\.org|/)\S*$")
# The punctuation around a word split by a font's spacing ("(dif ferent)," -> "(", "),").
_LEADING_NON_WORD = re.compile(r"\W*")
_TRAILING_NON_LETTERS = re.compile(r"[^A-Za-z]*(?:-.*)?$")
_MENDED_MIN_LETTERS = 5
_HYPHENATED = re.compile(r"[a-z]+(?:-[a-z]+)+")
_WORD = re.compile(r"[a-z]+")
_LINE_END_HYPHEN = re.compile(r"([a-z]+)[-\u00ad]\n([a-z]+)")


@dataclass(slots=True)
class _Vocabulary:
    """Words seen in the document, to tell "regu-lation" from "high-throughput" at a line end."""

    words: Counter[str]
    hyphenated: set[str]

    @classmethod
    def of(cls, columns: list[_Column]) -> _Vocabulary:
        text = "\n".join(line.text for column in columns for line in column.lines).lower()
        words = Counter(_WORD.findall(text))
        # Words hyphenated at a line end count whole too ("sev-" + "eral").
        words.update(head + tail for head, tail in _LINE_END_HYPHEN.findall(text))
        return cls(words, set(_HYPHENATED.findall(text)))

    def keeps_hyphen(self, left: str, right: str) -> bool:
        head = re.search(r"[a-z]+$", left.lower())
        tail = re.match(r"[a-z]+", right.lower())
        if not head or not tail:
            return True
        whole = head.group(0) + tail.group(0)
        return f"{head.group(0)}-{tail.group(0)}" in self.hyphenated and whole not in self.words

    def mend_split_words(self, text: str) -> str:
        """Rejoins words a font's spacing split ("dif ferent", "h ypometh ylation").

        Pieces are joined when the whole word is more common in the document than one of them.
        """
        tokens = text.split(" ")
        mended: list[str] = []
        index = 0
        while index < len(tokens):
            for width in (3, 2):
                joined = self._joined(tokens[index : index + width])
                if joined is not None:
                    mended.append(joined)
                    index += width
                    break
            else:
                mended.append(tokens[index])
                index += 1
        return " ".join(mended)

    def _joined(self, pieces: list[str]) -> str | None:
        if len(pieces) < 2:
            return None
        leading = _LEADING_NON_WORD.match(pieces[0])
        trailing = _TRAILING_NON_LETTERS.search(pieces[-1])
        # Both patterns match every string, if only with the empty string.
        assert leading is not None and trailing is not None
        opening, closing = leading.group(0), trailing.group(0)
        letters = [pieces[0][len(opening) :], *pieces[1:-1], pieces[-1][: -len(closing) or None]]
        if not all(piece.isalpha() for piece in letters):
            return None
        whole = self.words["".join(letters).lower()]
        # A lone lower-case letter is rarely a word of its own ("se v eral"; "C or N" is); other
        # pieces must be rarer than the whole word, so that "in to" stays apart.
        stray_letter = sum(map(len, letters)) >= _MENDED_MIN_LETTERS and any(
            len(piece) == 1 and piece.islower() and piece != "a" for piece in letters
        )
        rarer = whole >= 2 and min(self.words[piece.lower()] for piece in letters) <= whole
        return opening + "".join(letters) + closing if whole and (stray_letter or rarer) else None


def _join_lines(
    lines: Iterable[_Line], vocabulary: _Vocabulary
) -> tuple[str, list[tuple[int, int]]]:
    parts: list[str] = []
    length = 0
    marks: list[tuple[int, int]] = []
    previous = ""
    for line in lines:
        text = line.text
        if parts:
            glue, previous_part = _glue(previous, text, vocabulary)
            parts[-1] = previous_part
            length = length - len(previous) + len(previous_part) + len(glue)
            parts.append(glue)
        if not marks or marks[-1][1] != line.page:
            marks.append((length, line.page))
        parts.append(text)
        length += len(text)
        previous = text
    joined = "".join(parts)
    return _strip_soft_hyphens(joined, marks)


def _glue(previous: str, text: str, vocabulary: _Vocabulary) -> tuple[str, str]:
    """What goes between two lines, and the previous line's text once its break is mended."""
    if previous.endswith(_SOFT_HYPHEN):
        return "", previous[:-1]
    if text.startswith(_SOFT_HYPHEN):
        return "", previous
    if previous.endswith(_HYPHENS) and len(previous) > 1 and previous[-2].isalnum():
        if _URL_TAIL.search(previous):
            return "", previous
        if text[0].islower() and not vocabulary.keeps_hyphen(previous[:-1], text):
            return "", previous[:-1]
        return "", previous
    if previous.endswith(("/", "\u2014", "\u2013")) and not previous.endswith(" /"):
        return "", previous
    if text[0] in "./" and _URL_TAIL.search(previous):
        return "", previous
    return " ", previous


def _strip_soft_hyphens(
    text: str, marks: list[tuple[int, int]]
) -> tuple[str, list[tuple[int, int]]]:
    if _SOFT_HYPHEN not in text:
        return text, marks
    removed_before = [0] * (len(text) + 1)
    count = 0
    for index, char in enumerate(text):
        removed_before[index] = count
        count += char == _SOFT_HYPHEN
    removed_before[len(text)] = count
    return (
        text.replace(_SOFT_HYPHEN, ""),
        [(offset - removed_before[offset], page) for offset, page in marks],
    )
