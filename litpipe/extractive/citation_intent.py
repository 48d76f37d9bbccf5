"""The offline engine of citation intent: what a citing sentence says of the work it cites
(`extends`, `compares`, `contrasts`, `uses`, or `background`), read from cue phrases near the
marker and from the section the sentence sits in.

A cue decides only where it bears on the marker:

- it lies within its reach of the marker, counted in words between the two ("we extend ...
  [3]" a clause away says nothing of [3]);
- no clause break (`;`) lies between them;
- a comparison's or an extension's cue before the marker has no comma between them ("X
  compared to Y, making Z [3]": Y is compared, not [3]);
- a cue that must lead its citation ("than [3]", "following [3]", "using X [3]", "as described
  [3]") comes before the marker; the others may come on either side ("[3] was outperformed",
  "X was reported [3], whereas we find");
- `using X [3]` and a tool's noun (`software`, `database`, `pipeline`) name the citing paper's
  own use only in Methods or beside `we`/`our`: elsewhere "studies using genomics [3]" is
  what others did;
- it is not negated ("we did not build on [3]", "not unlike [3]", "not inconsistent with
  [3]"): a negated comparison still compares, but a negated extension, use or contrast is no
  longer one, and the citation falls back to background.

Of the cues that bear on it, the nearest decides; at equal distance a contrast, then a
comparison, an extension, a use (the rarer and more telling first). With no cue, a citation in
a Methods section (its own heading, or a subsection under it: `methods_headings`) is a use of
what it cites, a protocol, tool or data set; anywhere else it is background. In Methods,
"following [3]" is a use of the protocol, not an extension of the work.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from litpipe.schemas import CitationContext, CitationIntent, CitationIntentLabel, PaperDocument
from litpipe.text import counted

# How far a cue bears, in words between it and the marker, where it sets no reach of its own;
# a noun naming a tool (`software`, `database`) bears only on a marker beside it.
_REACH = 8
_NEAR = 3
_NEGATION = re.compile(r"\b(?:not|no|never|without|nor|cannot)\b|n't\b", re.I)
# Words before a cue in which a negation negates it.
_NEGATION_WORDS = 3
_CLAUSE_BREAK = ";"
# A contrast spans a comma ("In contrast, Smith [3]"), and so does a list of tools used ("we used
# A, B and C [3]").
_OBJECT_ENDS_AT_COMMA: tuple[CitationIntentLabel, ...] = ("compares", "extends")
_FIRST_PERSON = re.compile(r"\b(?:we|our|us)\b", re.I)
_WORD = re.compile(r"\S+")
_METHODS_HEADING = re.compile(
    r"\b(?:methods?|methodology|materials|experimental\s+(?:procedures?|section|design))\b", re.I
)
# A Methods part runs from its heading to the next of these.
_MAJOR_HEADING = re.compile(
    r"^\s*(?:\d+\.?\s*)?(?:introduction|background|results?|discussion|conclusions?|summary|"
    r"acknowledge?ments?|references|bibliography|funding|declarations|data\s+availability|"
    r"availability\s+of\s+data|supplement(?:al|ary)|supporting\s+information|author\s+contributions|"
    r"competing\s+interests|conflicts?\s+of\s+interest|related\s+work|abbreviations|"
    r"figures?|figure\s+legends|tables?)\b",
    re.I,
)


@dataclass(frozen=True)
class _Cue:
    label: CitationIntentLabel
    pattern: re.Pattern[str]
    reach: int = _REACH
    leads: bool = False
    """It must come before the marker."""
    in_methods: CitationIntentLabel | None = None
    """Its label in a Methods section, where it differs."""
    own: bool = False
    """It names a use by the citing paper only in Methods or beside `we`/`our`: outside
    them, "studies using genomics [3]" is what others did."""


def _cue(
    label: CitationIntentLabel,
    pattern: str,
    *,
    reach: int = _REACH,
    leads: bool = False,
    in_methods: CitationIntentLabel | None = None,
    own: bool = False,
) -> _Cue:
    return _Cue(label, re.compile(pattern, re.I), reach, leads, in_methods, own)


_CUES: tuple[_Cue, ...] = (
    _cue("contrasts", r"\bunlike\b"),
    _cue("contrasts", r"\bin\s+contrast(?:\s+(?:to|with))?\b"),
    _cue("contrasts", r"\bcontrary\s+to\b"),
    _cue("contrasts", r"\bwhereas\b"),
    # `However, Smith et al. reported`: the full stop of `al.` does not end the span.
    _cue("contrasts", r"\bhowever\b(?:[^.;]|(?<=\bal)\.){0,80}?\breport(?:s|ed)?\b"),
    _cue("contrasts", r"\bdisagree(?:s|d|ment)?\b"),
    _cue("contrasts", r"\bcontradict(?:s|ed|ing|ion|ory)?\b"),
    _cue("contrasts", r"\b(?:inconsistent|at\s+odds|in\s+conflict)\s+with\b"),
    _cue("compares", r"\boutperform(?:s|ed|ing)?\b"),
    _cue("compares", r"\b(?:compared|comparable|comparison)\s+(?:with|to)\b"),
    _cue("compares", r"\bcompared?\b", reach=6, leads=True),
    _cue("compares", r"\b(?:better|worse|superior|inferior)\s+(?:than|to)\b"),
    _cue("compares", r"\bimprove(?:s|d|ment|ments)?\s+(?:on|over|upon)\b"),
    # `than ESM-2 [3]`, never `more than 100 genes [3]`: see `_bears`.
    _cue("compares", r"\bthan\b", reach=2, leads=True),
    _cue("extends", r"\bwe\s+(?:further\s+)?extend(?:s|ed)?\b"),
    # `extends the work of [3]`, not `predictions that extended the interface [3]`.
    _cue(
        "extends",
        r"\bextend(?:s|ed|ing)?\s+(?:the\s+|their\s+)?(?:work|approach|method|model|framework|"
        r"analysis|findings?|results?)\s+(?:of|in|by|from)\b",
    ),
    _cue("extends", r"\bbuil(?:d|ds|ding|t)\s+(?:up)?on\b"),
    _cue("extends", r"\bextension\s+of\b"),
    _cue(
        "extends",
        r"(?<!the\s)\bfollowing(?:\s+the\s+(?:[\w'-]+\s+){0,3}(?:of|in|by|from))?",
        reach=0,
        leads=True,
        in_methods="uses",
    ),
    _cue("uses", r"\bwe\s+(?:used|use|employed|adopted|applied)\b"),
    _cue("uses", r"\b(?:was|were|is|are)\s+(?:used|employed|adopted|applied)\b"),
    _cue("uses", r"\busing\b", reach=6, leads=True, own=True),
    _cue("uses", r"\bas\s+(?:previously\s+)?described\b", reach=_NEAR, leads=True),
    _cue("uses", r"\b(?:was|were)\s+performed\s+as\b", leads=True),
    _cue("uses", r"\b(?:obtained|downloaded|retrieved|adapted|derived)\s+from\b"),
    _cue("uses", r"\bimplemented\s+in\b", reach=_NEAR),
    _cue(
        "uses",
        r"\b(?:software|pipelines?|data\s?sets?|databases?|packages?|toolkits?|tools?|"
        r"protocols?|code)\b",
        reach=_NEAR,
        own=True,
    ),
)
# At equal distance, the earlier of these decides.
_PRECEDENCE: tuple[CitationIntentLabel, ...] = ("contrasts", "compares", "extends", "uses")


@dataclass(frozen=True)
class _Found:
    cue: _Cue
    text: str
    gap: int


def methods_headings(document: PaperDocument) -> set[str]:
    """The headings of the document's Methods part: a heading naming methods, and those after
    it up to the next major heading (a subsection is set as a section of its own)."""
    headings: set[str] = set()
    inside = False
    for section in document.sections:
        # `Availability of data and materials` is not Methods.
        if _MAJOR_HEADING.match(section.heading):
            inside = False
        elif _METHODS_HEADING.search(section.heading):
            inside = True
        if inside:
            headings.add(section.heading)
    return headings


def citation_intents(
    document: PaperDocument, contexts: Iterable[CitationContext]
) -> list[CitationIntent]:
    """Each context's intent, its section's place in the document read once."""
    methods = methods_headings(document)
    return [citation_intent(context, in_methods=context.section in methods) for context in contexts]


def citation_intent(context: CitationContext, *, in_methods: bool | None = None) -> CitationIntent:
    """What the context's sentence says of the work it cites. `in_methods`: whether it sits in
    the paper's Methods part; by default, judged from its own section's heading."""
    if in_methods is None:
        in_methods = bool(_METHODS_HEADING.search(context.section))
    sentence = context.sentence
    start, end = _marker_span(context)
    own_use = in_methods or bool(_FIRST_PERSON.search(sentence))
    found = [
        located
        for cue in _CUES
        if own_use or not cue.own
        for match in cue.pattern.finditer(sentence)
        if (located := _bears(cue, match, sentence, start, end)) is not None
    ]
    if found:
        nearest = min(found, key=lambda item: (item.gap, _PRECEDENCE.index(item.cue.label)))
        label = (nearest.cue.in_methods if in_methods else None) or nearest.cue.label
        words = "next to" if nearest.gap == 0 else f"{counted(nearest.gap, 'word')} from"
        where = " in Methods" if label != nearest.cue.label else ""
        return CitationIntent(
            label=label,
            cue=nearest.text,
            why=f"'{nearest.text}' {words} the marker{where}",
        )
    if in_methods:
        return CitationIntent(
            label="uses", why="cited in Methods with no cue: a method, tool or data it uses"
        )
    place = f" in {context.section}" if context.section else ""
    return CitationIntent(label="background", why=f"no cue near the marker{place}")


def _marker_span(context: CitationContext) -> tuple[int, int]:
    """The marker's place in its sentence; where the offsets do not hold it, where its text is
    found, else the sentence's end."""
    sentence, marker = context.sentence, context.marker
    start = context.marker_start - context.char_start
    if not (0 <= start <= len(sentence) and sentence.startswith(marker, start)):
        found = sentence.find(marker) if marker else -1
        start = found if found >= 0 else len(sentence)
    return start, min(len(sentence), start + len(marker))


def _bears(cue: _Cue, match: re.Match[str], sentence: str, start: int, end: int) -> _Found | None:
    """The cue as found, if it bears on the marker at [start, end)."""
    if match.end() <= start:
        between = sentence[match.end() : start]
    elif match.start() >= end and not cue.leads:
        between = sentence[end : match.start()]
    else:
        return None
    gap = len(_WORD.findall(between))
    if gap > cue.reach or _CLAUSE_BREAK in between:
        return None
    # What is compared with or built on follows its cue and ends at a comma: in "selection
    # compared to evolution, making effects hard to discern [3]", [3] is neither.
    if cue.label in _OBJECT_ENDS_AT_COMMA and match.end() <= start and "," in between:
        return None
    # `more than 100 genes [3]` counts genes; `than ESM-2 [3]` compares.
    if cue.label == "compares" and cue.leads and between.strip()[:1].isdigit():
        return None
    if cue.label != "compares" and _negated(sentence, match.start()):
        return None
    return _Found(cue, match.group(0), gap)


def _negated(sentence: str, cue_start: int) -> bool:
    before = _WORD.findall(sentence[:cue_start])[-_NEGATION_WORDS:]
    return bool(_NEGATION.search(" ".join(before)))
