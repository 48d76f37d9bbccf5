"""The names of an `author` or `editor` field: split at `and`, each as `Family, Given` (`von
Last, First`, `First von Last`, `{Organisation}`)."""

from __future__ import annotations

import re

from litpipe.ingest.bibtex.latex import latex_to_text


def names(raw: str) -> list[str]:
    """The names of an `author` (or `editor`) field, split at `and` outside braces, each as
    `Family, Given` (a name in one brace group, an organisation, as it is); `others` dropped."""
    found = []
    for name in _split_top_level(raw, re.compile(r"\s+and\s+", re.I)):
        if name.strip().lower() in ("", "others"):
            continue
        found.append(_name(name.strip()))
    return [name for name in found if name]


def _name(raw: str) -> str:
    parts = [part.strip() for part in _split_top_level(raw, re.compile(r","))]
    if len(parts) >= 2:
        family = latex_to_text(parts[0])
        junior = latex_to_text(parts[1]) if len(parts) >= 3 else ""
        given = latex_to_text(parts[-1])
        family = f"{family} {junior}".strip()
        return f"{family}, {given}" if given else family
    words = _split_top_level(raw, re.compile(r"\s+"))
    if len(words) == 1:
        return latex_to_text(words[0])
    # First von Last: the family name from the first lowercase word (not the first word) on,
    # else the last word.
    start = next((i for i in range(1, len(words) - 1) if _lowercase_word(words[i])), len(words) - 1)
    family = latex_to_text(" ".join(words[start:]))
    given = latex_to_text(" ".join(words[:start]))
    return f"{family}, {given}" if given else family


def _lowercase_word(word: str) -> bool:
    """Whether a name's word starts lowercase, as BibTeX reads it: a word opening with a brace
    group that is not a command (`{van Gogh}`) has no case."""
    if word.startswith("{") and not word.startswith("{\\"):
        return False
    letters = [char for char in latex_to_text(word) if char.isalpha()]
    return bool(letters) and letters[0].islower()


def _split_top_level(text: str, separator: re.Pattern[str]) -> list[str]:
    """`text` split where `separator` matches outside braces."""
    parts: list[str] = []
    depth, start, index = 0, 0, 0
    while index < len(text):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth = max(0, depth - 1)
        elif depth == 0 and (found := separator.match(text, index)) and found.end() > index:
            parts.append(text[start:index])
            start = index = found.end()
            continue
        index += 1
    parts.append(text[start:])
    return parts
