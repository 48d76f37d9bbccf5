"""Replies made from a JSON schema alone, as a model server with structured output makes them.

`reply(schema, choices, vocabulary)` builds one instance of `schema` (the subset pydantic emits:
objects, arrays, strings with lengths and patterns, bounded numbers, enums, consts, `$ref`,
`anyOf`) from a source of choices. Two sources share the one generator:

- `drawn(data)`: hypothesis draws every choice, so a property test explores (and shrinks) the
  replies;
- `SeededChoices(seed)`: a seeded random source, for the schema-driven test server.

Nothing here knows any agent. Strings are what a model might write for any field: empty or
blank, unicode, a real sentence or id from the request (`vocabulary(messages)`), a citation
marker that resolves (one from the request) or one that resolves to nothing, a duplicate of an
item before it, or a very long string.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from functools import cache
from typing import Any, Protocol

from hypothesis import strategies as st

# What a request offers to be quoted back: citation markers, ids (with a digit, a colon or a
# dot), and whole sentences of the prompt.
_MARKER = re.compile(r"\[[^\[\]\s]{1,80}:\d+\]")
_ID = re.compile(r"\b[A-Za-z0-9._-]*[0-9:.][A-Za-z0-9._:-]*\b")
_SENTENCE = re.compile(r"[A-Z][^.?!\n]{10,300}[.?!]")
BOGUS_MARKER = "[no-such-paper:999]"
EXTREME_INTEGERS = (0, -1, 2**31, -(2**31), 2**53)
EXTREME_NUMBERS = (0.0, -1.0, 1e-300, 1e300, -1e300)
_LONG = 20_000
_MOST_ITEMS = 6
_PATTERN_TRIES = 200


class Choices(Protocol):
    """A source of the generator's choices."""

    def integer(self, low: int, high: int) -> int: ...

    def number(self, low: float, high: float) -> float: ...

    def unicode(self, most: int) -> str: ...

    def matching(self, pattern: str, fallback: str, low: int, high: int) -> str:
        """A string of `low` to `high` characters that `re.search(pattern, ...)` accepts;
        `fallback` is a first guess."""
        ...


def vocabulary(messages: Sequence[dict[str, str]]) -> list[str]:
    """Markers, ids and sentences of a request's messages, in order of first appearance."""
    text = "\n".join(str(message.get("content", "")) for message in messages)
    found = _MARKER.findall(text) + _ID.findall(text) + _SENTENCE.findall(text)
    return list(dict.fromkeys(found))[:400]


def reply(schema: dict[str, Any], choices: Choices, words: Sequence[str] = ()) -> Any:
    """One instance of `schema`, every choice taken from `choices`."""
    return _Generator(schema, choices, list(words)).value(schema, [])


class _Generator:
    def __init__(self, root: dict[str, Any], choices: Choices, words: list[str]) -> None:
        self.root = root
        self.choices = choices
        self.words = words

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.choices.integer(0, len(options) - 1)]

    def value(self, schema: dict[str, Any], earlier: list[Any]) -> Any:
        if "$ref" in schema:
            target: Any = self.root
            for part in schema["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            siblings = {key: value for key, value in schema.items() if key != "$ref"}
            return self.value({**target, **siblings}, earlier)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.pick(schema["enum"])
        for combinator in ("anyOf", "oneOf"):
            if combinator in schema:
                return self.value(self.pick(schema[combinator]), earlier)
        kind = schema.get("type", "object" if "properties" in schema else "string")
        if isinstance(kind, list):
            kind = self.pick(kind)
        if kind == "object":
            return self.object(schema)
        if kind == "array":
            return self.array(schema)
        if kind == "integer":
            return self.integer(schema)
        if kind == "number":
            return self.number(schema)
        if kind == "boolean":
            return bool(self.choices.integer(0, 1))
        if kind == "null":
            return None
        return self.string(schema, earlier)

    def object(self, schema: dict[str, Any]) -> dict[str, Any]:
        required = set(schema.get("required", []))
        return {
            name: self.value(part, [])
            for name, part in schema.get("properties", {}).items()
            if name in required or self.choices.integer(0, 1)
        }

    def array(self, schema: dict[str, Any]) -> list[Any]:
        low = schema.get("minItems", 0)
        high = min(schema.get("maxItems", low + _MOST_ITEMS), low + _MOST_ITEMS)
        items: list[Any] = []
        for _ in range(self.choices.integer(low, high)):
            repeat = items and not schema.get("uniqueItems") and self.choices.integer(0, 4) == 0
            items.append(self.pick(items) if repeat else self.value(schema.get("items", {}), items))
        if schema.get("uniqueItems"):
            items = list({json.dumps(item, sort_keys=True): item for item in items}.values())
        return items

    def integer(self, schema: dict[str, Any]) -> int:
        low = schema.get("minimum", schema.get("exclusiveMinimum", -(2**53) - 1) + 1)
        high = schema.get("maximum", schema.get("exclusiveMaximum", 2**53 + 1) - 1)
        extremes = [value for value in EXTREME_INTEGERS if low <= value <= high]
        if extremes and self.choices.integer(0, 3) == 0:
            return int(self.pick(extremes))
        return self.choices.integer(int(low), int(high))

    def number(self, schema: dict[str, Any]) -> float:
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1e300))
        high = schema.get("maximum", schema.get("exclusiveMaximum", 1e300))
        extremes = [value for value in EXTREME_NUMBERS if low <= value <= high]
        if extremes and self.choices.integer(0, 3) == 0:
            return float(self.pick(extremes))
        return self.choices.number(float(low), float(high))

    def string(self, schema: dict[str, Any], earlier: list[Any]) -> str:
        low, high = schema.get("minLength", 0), schema.get("maxLength", _LONG)
        text = self.free_text(earlier)
        if len(text) < low:
            text += "x" * (low - len(text))
        text = text[:high]
        pattern = schema.get("pattern")
        return text if pattern is None else self.choices.matching(pattern, text, low, high)

    def free_text(self, earlier: list[Any]) -> str:
        """Up to four pieces, each of a kind a model may write anywhere."""
        pieces = []
        for _ in range(self.choices.integer(0, 4)):
            kind = self.choices.integer(0, 8)
            if kind == 0:
                pieces.append(self.choices.unicode(40))
            elif kind in (1, 2) and self.words:
                pieces.append(self.pick(self.words))
            elif kind == 3:
                pieces.append(BOGUS_MARKER)
            elif kind == 4 and earlier and all(isinstance(item, str) for item in earlier):
                pieces.append(self.pick(earlier))
            elif kind == 5:
                pieces.append("?")
            elif kind == 6:
                pieces.append("\n\n")
            elif kind == 7 and self.choices.integer(0, 9) == 0:
                pieces.append("long " * (_LONG // 5))
            else:
                pieces.append("A plain sentence.")
        return " ".join(pieces)


class drawn:
    """Choices drawn by hypothesis (`st.data()`), so that failures shrink."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def integer(self, low: int, high: int) -> int:
        return self.data.draw(st.integers(low, high))

    def number(self, low: float, high: float) -> float:
        return self.data.draw(st.floats(low, high, allow_nan=False, allow_infinity=False))

    def unicode(self, most: int) -> str:
        return self.data.draw(st.text(max_size=most))

    def matching(self, pattern: str, fallback: str, low: int, high: int) -> str:
        if re.search(pattern, fallback):
            return fallback
        return self.data.draw(_strings_matching(pattern, low, high))


@cache
def _strings_matching(pattern: str, low: int, high: int) -> st.SearchStrategy[str]:
    # Built once a pattern: a regex strategy costs milliseconds to build, a draw microseconds.
    return st.from_regex(pattern).filter(lambda text: low <= len(text) <= high)


class SeededChoices:
    """Choices from a seeded random generator: the same seed, the same reply."""

    def __init__(self, seed: int | str) -> None:
        self.random = random.Random(seed)

    def integer(self, low: int, high: int) -> int:
        return self.random.randint(low, high)

    def number(self, low: float, high: float) -> float:
        return self.random.uniform(low, high)

    def unicode(self, most: int) -> str:
        # Letters of several scripts, combining marks, emoji, controls and quotes.
        alphabet = "aZ0 \t\"'\\é中ß́😀\u200b\u2028ΩЖ"
        return "".join(self.random.choice(alphabet) for _ in range(self.random.randint(0, most)))

    def matching(self, pattern: str, fallback: str, low: int, high: int) -> str:
        """`fallback` if it matches, else a form of it that the common patterns take (a
        non-blank string, a question), else random strings tried in turn."""
        stem = " ".join(fallback.split())[: max(high - 1, 0)]
        candidates = [fallback, f"{stem or 'Why'}?", stem or "x"]
        candidates += [f"Why {self.unicode(20)}?" for _ in range(_PATTERN_TRIES)]
        for candidate in candidates:
            if low <= len(candidate) <= high and re.search(pattern, candidate):
                return candidate
        raise ValueError(f"the test server cannot make a string matching {pattern!r}")
