"""Structured abstracts: the labels that open their parts, told apart from their prose.

Journals in medicine and the life sciences ask for structured abstracts ("BACKGROUND ...
METHODS ... RESULTS ... CONCLUSIONS ..."): a fifth of SciFact's 5,183 abstracts are. Others
bracket the labels ("[Purpose] ... [Subjects] ...") or end them with a colon ("Methods: ...").
Left in the text, a label opens the sentence after it, so a quote carries "RESULTS The risk
fell" into a synthesis, and a bracketed label reads as a citation in text that cites in square
brackets. `without_part_labels` drops the labels and keeps each part a paragraph of its own.

A label is recognised only where a part can start (the start of the text, or after a sentence
or a line ends) and only when its words are those of structured-abstract labels (the label
categories of the US National Library of Medicine's list, and their common variants):
"BERT Models ..." or "Background subtraction is ..." stay as written.
"""

from __future__ import annotations

import re

_LABEL_WORDS = frozenset(
    {
        "abstract",
        "aim",
        "aims",
        "analyses",
        "analysis",
        "answer",
        "applications",
        "approach",
        "availability",
        "background",
        "case",
        "clinical",
        "collection",
        "conclusion",
        "conclusions",
        "context",
        "contribution",
        "contributions",
        "criteria",
        "data",
        "description",
        "design",
        "discussion",
        "eligibility",
        "evidence",
        "experimental",
        "exposure",
        "exposures",
        "extraction",
        "findings",
        "funding",
        "goal",
        "goals",
        "hypothesis",
        "implementation",
        "implications",
        "importance",
        "intervention",
        "interventions",
        "introduction",
        "key",
        "limitations",
        "main",
        "materials",
        "measure",
        "measurements",
        "measures",
        "method",
        "methodology",
        "methods",
        "motivation",
        "objective",
        "objectives",
        "outcome",
        "outcomes",
        "overview",
        "participants",
        "patients",
        "population",
        "presentation",
        "primary",
        "principal",
        "problem",
        "procedures",
        "purpose",
        "question",
        "questions",
        "rationale",
        "recent",
        "registration",
        "relevance",
        "report",
        "research",
        "results",
        "review",
        "sample",
        "search",
        "secondary",
        "selection",
        "setting",
        "settings",
        "significance",
        "sources",
        "statement",
        "strategy",
        "study",
        "subjects",
        "summary",
        "synthesis",
        "trial",
        "unlabelled",
        "unstructured",
    }
)
# Words that join label words ("MATERIALS AND METHODS", "PURPOSE OF REVIEW").
_JOINING_WORDS = frozenset({"and", "of", "or", "the"})
_WORD_SEPARATOR = re.compile(r"[\s/&-]+")

# The three ways a label is written: bracketed, before a colon, or in capitals (a colon or a
# dash may follow).
_BRACKETED = re.compile(r"\[\s*([A-Za-z][A-Za-z\s/&-]{0,60}?)\s*\]\s*")
_BEFORE_COLON = re.compile(r"([A-Z][A-Za-z]*(?:[ /&-]+[A-Za-z]+){0,5})\s*:\s+")
_IN_CAPITALS = re.compile(r"([A-Z]{2,}(?:[ /&-]+[A-Z]{2,}){0,5})(?:\s*[:\u2013\u2014-])?\s+(?=\S)")
# What ends the text before a part: a sentence's end (its closing quote or bracket too).
_PART_BOUNDARY = re.compile(r"(?:^|[.!?][\"'\u201d\u2019)\]]*|\n)\s*$")


def _is_label(candidate: str) -> bool:
    words = [word.lower() for word in _WORD_SEPARATOR.split(candidate.strip()) if word]
    return (
        bool(words)
        and words[0] in _LABEL_WORDS
        and all(word in _LABEL_WORDS or word in _JOINING_WORDS for word in words)
    )


def _label_spans(abstract: str) -> list[tuple[int, int]]:
    """(start, end) of each label in `abstract`, in order, the space after it included."""
    spans: list[tuple[int, int]] = []
    for pattern in (_BRACKETED, _BEFORE_COLON, _IN_CAPITALS):
        for match in pattern.finditer(abstract):
            if not _is_label(match.group(1)):
                continue
            if not _PART_BOUNDARY.search(abstract, 0, match.start()):
                continue
            if any(start < match.end() and match.start() < end for start, end in spans):
                continue
            spans.append((match.start(), match.end()))
    return sorted(spans)


def without_part_labels(abstract: str) -> str:
    """`abstract` without the labels of a structured abstract's parts, each part a paragraph
    (parts separated by a blank line); as it is when it has no label."""
    spans = _label_spans(abstract)
    if not spans:
        return abstract
    starts = [0, *(end for _, end in spans)]
    ends = [*(start for start, _ in spans), len(abstract)]
    parts = [abstract[start:end].strip() for start, end in zip(starts, ends, strict=True)]
    return "\n\n".join(part for part in parts if part)
