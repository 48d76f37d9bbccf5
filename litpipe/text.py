"""Shared text helpers, below everything that uses them: sentences and key phrases (each with
its offsets), citation markers and their removal, Markdown blocks, token estimates, counts
with their noun (`counted`).

Everything here returns spans of the text it was given, never rewritten text, so whatever the
offline engine writes from them is the paper's own wording and can be traced back to it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Words after which a full stop does not end a sentence ("et al. found", "Fig. 2", "e.g. X").
_ABBREVIATIONS = _word_set(
    "al approx ca cf dr e.g eq eqs etc fig figs i.e incl mr ms no nos pp prof ref refs resp sec "
    "sect st suppl tab vol vs"
)
# A raised number as the PDF reader writes it (`U50¹⁴`, `10⁻⁵`, `models⁷⁻¹³`): the superscript
# digits 0 to 9, in order, and the superscript minus, which stands for any raised dash.
SUPERSCRIPT_DIGITS = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
SUPERSCRIPT_MINUS = "\u207b"
# Raised citation markers as a sentence's end may carry them: `¹²`, `¹²,¹³`, `⁷⁻¹³`.
_RAISED_MARKERS = (
    rf"[{SUPERSCRIPT_DIGITS}](?:[{SUPERSCRIPT_DIGITS}{SUPERSCRIPT_MINUS},]*[{SUPERSCRIPT_DIGITS}])?"
)
_OPENING_MARKS = "\"'\u201c\u2018([{"
_CLOSING_MARKS = "\"'\u201d\u2019)]}.,;:!?"
# A full stop, ! or ? (and any closing quotes or brackets) followed by space and a capital or digit.
# Bracketed references written after the full stop ("... sites. [12]", "... sites. [a:3]") end
# the sentence they follow rather than open the next one, as do raised ones ("... sites.¹²,¹³",
# in superscripts as the PDF reader writes them). One written before it ("... sites
# [a:3].") ends its sentence whatever follows: a quoted sentence may open in lower case, where a
# passage began mid-sentence.
_SENTENCE_END = re.compile(
    r"[.!?][\"'\u201d\u2019)\]]*(?:[ \t]*\[[^\[\]\n]{1,120}\])*"
    rf"(?:{_RAISED_MARKERS})?"
    r"(?=\s+[\"'\u201c\u2018(\[]?[A-Z0-9])"
    r"|(?<=\])[.!?](?=\s)"
)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_LAST_WORD = re.compile(r"([A-Za-z][A-Za-z.]*)$")
_LOOK_BACK = 24

# Function words, and verbs that research prose uses to talk about itself ("we propose X",
# "using Y"): both end a key phrase rather than belong to one.
_FUNCTION_WORDS = _word_set(
    """
a about above across after against all almost along also although among an and another any are
as at be because been before being below between both but by can could did do does done down
during each either else even ever every few for from further had has have having he her here
hers him his how however i if in into is it its itself just least less many may might more most
much must neither no nor not now of off often on once one only onto or other others our ours out
over own per rather same several she should since so some such than that the their theirs them
then there therefore these they this those though through thus to too toward towards under
until up upon us very via was we were what whatever when where whereas whether which while who
whom whose why will with within without would yet you your first second third new novel
various different similar specific certain particular overall respectively always never still
already again well vivo vitro silico situ two three four five six seven eight nine ten
recent effective efficient simple
"""
)
_RESEARCH_VERBS = """
achieve activate address affect aim allow analyse analyze appear apply become build call cause
characterise characterize classify compare conclude consider contain contribute coordinate
decrease demonstrate depend describe detect determine develop drive enable encode encourage
enhance ensure evaluate examine exhibit exist explain exploit explore facilitate focus follow help
highlight identify illustrate improve include increase indicate inhibit introduce investigate
involve lead make measure mediate modulate need observe obtain occur outperform participate
perform play predict present prevent promise promote propose provide reduce refer regulate rely
remain report represent require result reveal seek serve show suggest take tend term tolerate try
underlie use yield
"""
_IRREGULAR_VERB_FORMS = """found shown made led known given taken sought became based due able
occurred occurring referred referring driven underlying"""


def _inflections(verb: str) -> set[str]:
    stem = verb[:-1] if verb.endswith("e") else verb
    third = verb[:-1] + "ies" if verb.endswith("y") and verb[-2] not in "aeiou" else verb + "s"
    past = verb[:-1] + "ied" if verb.endswith("y") and verb[-2] not in "aeiou" else stem + "ed"
    if verb.endswith(("ch", "sh", "s", "x")):
        third = verb + "es"
    return {verb, third, past, stem + "ing"}


STOPWORDS = (
    _FUNCTION_WORDS
    | {form for verb in _RESEARCH_VERBS.split() for form in _inflections(verb)}
    | _word_set(_IRREGULAR_VERB_FORMS)
)
# Words too general to make a key phrase on their own ("the results", "our model").
GENERIC_WORDS = _word_set(
    """analyses analysis approach approaches case cases change changes data difference
    differences effect effects fold function functions information level levels method methods
    model models number paper part performance problem problems process processes result
    results role set study studies system systems task tasks type types way ways work"""
)
# After these, a word in -ed or -ing is a verb ("we investigated X", "has been shaping Y").
_VERB_CONTEXT = _word_set(
    """we they it which that who has have had is are was were be been being can could may might
    will would should must also not"""
)
# After "to", a lower-case word without these endings is taken for an infinitive ("to tolerate
# damage"); with them, for the start of a noun phrase ("to alkylation damage", "to cells").
_NOUN_OR_ADJECTIVE_ENDINGS = tuple(
    _word_set(
        """al ic ive ous ed ing ar ent ant ful less able ible ary ory ion ment ness ity ance ence
        er or ism ist ogy age ure cy in ome ase ide ine ene on ia ics"""
    )
)
_SINGULARS_IN_S = _word_set("species series means news")
_QUANTITY = re.compile(r"\d[\d.,]*[kKmMbB%x\u00d7]?")
_INITIAL = re.compile(r"[A-Z]\.")
_ADVERB_EXCEPTIONS = _word_set("anomaly assembly butterfly family italy monopoly supply")
MAX_PHRASE_WORDS = 4
_MAX_PHRASE_CHARS = 60


@dataclass(frozen=True)
class Span:
    """`text` is exactly `source[start:end]` of the text it was taken from."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Phrase(Span):
    words: tuple[str, ...]
    """The phrase's words, normalised (lower case, plural s dropped) for counting and comparing."""
    sentence_initial: bool
    """Starts its sentence, so its first capital may be the sentence's rather than the word's."""


def normalise(word: str) -> str:
    word = word.lower()
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Normalised words of `text` that carry content (no stop words, no numbers)."""
    return [word for token in text.split() if (word := _content_form(token)) is not None]


# A collection's texts share one vocabulary: the offline engine and the digest meet the same
# tokens in thousands of insights, so each is judged once.
@lru_cache(maxsize=1 << 16)
def _content_form(token: str) -> str | None:
    """A token's normalised word, None when it carries no content."""
    core = token.strip(_OPENING_MARKS + _CLOSING_MARKS)
    return normalise(core) if _content_word(core) else None


def _trimmed(span: Span) -> Span | None:
    leading = len(span.text) - len(span.text.lstrip())
    text = span.text.strip()
    if not text:
        return None
    return Span(text, span.start + leading, span.start + leading + len(text))


def _ends_sentence(text: str, end: int) -> bool:
    """Whether the full stop (or ! or ?) at text[end - 1] ends a sentence."""
    if text[end - 1] != ".":
        return True
    # A short look back is enough for any abbreviation, and keeps the search off long texts.
    before = _LAST_WORD.search(text[max(end - 1 - _LOOK_BACK, 0) : end - 1])
    if before is None:
        return True
    word = before.group(1)
    # "E. coli", "S. cerevisiae": a lone capital before a full stop is an initial.
    return not (word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper()))


def sentences(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """The sentences of text[start:end], offsets into `text`; paragraph breaks end one too."""
    end = len(text) if end is None else end
    found: list[Span] = []
    paragraph_start = start
    for paragraph_end in [*(m.start() for m in _PARAGRAPH_BREAK.finditer(text, start, end)), end]:
        sentence_start = paragraph_start
        for match in _SENTENCE_END.finditer(text, paragraph_start, paragraph_end):
            stop = match.start() + 1
            if _ends_sentence(text, stop):
                found.append(Span(text[sentence_start : match.end()], sentence_start, match.end()))
                sentence_start = match.end()
        found.append(Span(text[sentence_start:paragraph_end], sentence_start, paragraph_end))
        paragraph_start = paragraph_end
    return [span for span in map(_trimmed, found) if span is not None]


# What a sentence reports of an evaluation rather than of an approach: a figure, results,
# experiments, accuracy, a benchmark, the state of the art.
_REPORTS_EVALUATION = re.compile(
    r"\d|\b(?:results?|experiment\w*|outperform\w*|accuracy|evaluat\w*|benchmark\w*"
    r"|state[- ]of[- ]the[- ]art)\b",
    re.I,
)


def reports_evaluation(sentence: str) -> bool:
    """Whether the sentence reports how a work scored (not what it does or is about): what a
    related-work section does not pad its words with, and no theme of a collection."""
    return bool(_REPORTS_EVALUATION.search(sentence))


# An opening word that points back at the sentence before ("This method", "It", "These
# results"), the work itself ("This paper") aside.
_POINTS_BACK = re.compile(
    r"^(?:this|these|those|it|its|they|their|such|both)\b(?!\s+(?:paper|work|article|study"
    r"|letter|note|report|thesis|dissertation|chapter)\b)",
    re.I,
)


def points_back(sentence: str) -> bool:
    """Whether the sentence opens by pointing back at the one before it: alone, it names
    nothing."""
    return bool(_POINTS_BACK.match(sentence))


# A citation of other work in a paper's own text: author and year ("(Diss and Lehner 2018;",
# "Faure et al. 2022", "(Smith, 2010)") or a numbered reference ("[12]", "[3, 4]", "[5-7]").
_CITES_OTHER_WORK = re.compile(
    r"\bet al\.?,? \(?\d{4}"
    r"|\([A-Z][\w'\u2019-]+(?: (?:and|&) [A-Z][\w'\u2019-]+)?,? \d{4}[a-z]?[;,)]"
    r"|\[\d+(?:\s*[,\u2013-]\s*\d+)*\]"
)


def cites_other_work(sentence: str) -> bool:
    """Whether the sentence cites other work as its paper wrote it: what it says is that work's
    finding (background), not the paper's own."""
    return bool(_CITES_OTHER_WORK.search(sentence))


def _content_word(core: str) -> bool:
    if len(core) < 2 or not any(char.isalpha() for char in core):
        return False
    lower = core.lower()
    if lower in STOPWORDS or "http" in lower or "www." in lower or "@" in core:
        return False
    # Adverbs ("significantly", "highly") qualify phrases but never name a thing.
    return not (core.islower() and lower.endswith("ly") and lower not in _ADVERB_EXCEPTIONS)


@dataclass
class _Token:
    core: str
    start: int
    end: int
    opens: bool
    closes: bool
    content: bool


def _tokens(text: str, start: int, end: int) -> list[_Token]:
    tokens: list[_Token] = []
    raws = list(re.finditer(r"\S+", text[start:end]))
    for index, match in enumerate(raws):
        raw = match.group()
        following = raws[index + 1].group() if index + 1 < len(raws) else ""
        if _INITIAL.fullmatch(raw) and following[:1].islower():
            # A genus initial ("E. coli"): the initial, full stop included, starts a phrase.
            token_start = start + match.start()
            tokens.append(_Token(raw, token_start, token_start + 2, False, False, True))
            continue
        core = raw.lstrip(_OPENING_MARKS)
        lead = len(raw) - len(core)
        core = core.rstrip(_CLOSING_MARKS)
        token_start = start + match.start() + lead
        tokens.append(
            _Token(
                core=core,
                start=token_start,
                end=token_start + len(core),
                opens=lead > 0,
                closes=lead + len(core) < len(raw),
                content=_content_word(core),
            )
        )
    return tokens


def _runs(text: str, tokens: list[_Token]) -> list[list[int]]:
    """Maximal runs of content tokens joined by single spaces, with no punctuation between."""
    runs: list[list[int]] = []
    current: list[int] = []
    for index, token in enumerate(tokens):
        joined = (
            bool(current)
            and not token.opens
            and not tokens[current[-1]].closes
            and text[tokens[current[-1]].end : token.start] == " "
        )
        if token.content and joined:
            current.append(index)
            continue
        if current:
            runs.append(current)
        current = [index] if token.content else []
    if current:
        runs.append(current)
    return runs


def _infinitive(word: str) -> bool:
    return word.islower() and not (
        word.endswith(_NOUN_OR_ADJECTIVE_ENDINGS) or (word.endswith("s") and word[-2:] != "ss")
    )


def _plural(word: str) -> bool:
    return (
        word.islower()
        and word.endswith("s")
        and not word.endswith(("ss", "us", "is", "ics"))
        and word not in _SINGULARS_IN_S
    )


def _split_at_verbs(run: list[int], tokens: list[_Token]) -> list[list[int]]:
    """A plural inside a run ends a noun phrase, and a lower-case word after it is taken for the
    verb ("protein language models | boosts | predictions"): noun compounds take singular
    modifiers ("protein language models", not "proteins language models")."""
    parts: list[list[int]] = []
    current: list[int] = []
    skip_next = False
    for position, index in enumerate(run):
        core = tokens[index].core
        if skip_next and core.islower():
            skip_next = False
            continue
        skip_next = False
        current.append(index)
        if _plural(core) and position < len(run) - 1:
            parts.append(current)
            current = []
            skip_next = True
    if current:
        parts.append(current)
    return parts


def _noun_like(run: list[int], tokens: list[_Token]) -> list[int]:
    """Drops the verb or the number a run of content words may start with, the verb it may end
    with, and words beyond the last few."""
    first = tokens[run[0]].core
    before = tokens[run[0] - 1].core.lower() if run[0] > 0 else ""
    if (
        (before in _VERB_CONTEXT and first.lower().endswith(("ed", "ing")))
        or (before == "to" and _infinitive(first))
        or (len(run) > 1 and _QUANTITY.fullmatch(first))
    ):
        run = run[1:]
    # A run ending in -ed ends in a verb ("the observed differences occurred").
    while len(run) > 1 and tokens[run[-1]].core.islower() and tokens[run[-1]].core.endswith("ed"):
        run = run[:-1]
    # English noun phrases end in their head: keep the last words of a long run.
    return run[-MAX_PHRASE_WORDS:]


def looks_named(word: str) -> bool:
    """Looks like a name (FearNet, Cas9, REV1, GCK) rather than a common word."""
    return any(char.isupper() or char.isdigit() for char in word[1:])


def phrases(text: str, sentence: Span) -> list[Phrase]:
    """Candidate key phrases of one sentence: noun-phrase-like runs of content words."""
    tokens = _tokens(text, sentence.start, sentence.end)
    found: list[Phrase] = []
    for whole_run in _runs(text, tokens):
        for part in _split_at_verbs(whole_run, tokens):
            run = _noun_like(part, tokens)
            # A single common word ("networks", "microcins") is too vague to ask about.
            if not run or (len(run) == 1 and not looks_named(tokens[run[0]].core)):
                continue
            start, end = tokens[run[0]].start, tokens[run[-1]].end
            normalised = tuple(normalise(tokens[index].core) for index in run)
            if end - start > _MAX_PHRASE_CHARS or all(w in GENERIC_WORDS for w in normalised):
                continue
            found.append(
                Phrase(
                    text=text[start:end],
                    start=start,
                    end=end,
                    words=normalised,
                    sentence_initial=run[0] == 0,
                )
            )
    return found


def word_counts(*texts: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(words(text))
    return counts


def overlap(first: AbstractSet[str], second: AbstractSet[str]) -> float:
    """Cosine similarity of two sets of words (0 when either is empty)."""
    if not first or not second:
        return 0.0
    return len(first & second) / (len(first) * len(second)) ** 0.5


# Citation markers: `[paper_id:page]`, several to a bracket (`[a:3; b:7]`, `[a:3, b:7]`).
# Any bracketed span: `markers_in` (or a related-work id reader) decides whether it cites.
BRACKETED = re.compile(r"\[[^\[\]\n]*\]")
# Paper ids are URL-safe (letters, digits, `.`, `_`, `-`): no colon, no bracket, no space.
_ONE_MARKER = r"[A-Za-z0-9._-]+:\d+"
_BRACKET = re.compile(rf"\[\s*({_ONE_MARKER}(?:\s*[;,]\s*{_ONE_MARKER})*)\s*\]")
_PARTS = re.compile(r"([A-Za-z0-9._-]+):(\d+)")
_RUN_OF_SPACES = re.compile(r"[ \t]{2,}")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"[ \t]+([.,;:])")


def marker(paper_id: str, page: int) -> str:
    return f"[{paper_id}:{page}]"


_TERMINAL = re.compile(r"([.!?])$")
# A whole sentence opens with a capital, a digit or an opening mark and ends with its stop.
_WHOLE = re.compile(r"[\"'\u201c\u2018(\[]*[A-Z0-9].*[.!?][\"'\u201d\u2019)\]]*", re.S)


# A bracket closed before any is opened: the sentence opens inside one ("2016), traced ...").
_CLOSED_UNOPENED = re.compile(r"[^(\[]*?[)\]]")


def whole_sentence(sentence: str) -> bool:
    """Whether the sentence (markers removed) is whole, not one cut by a passage's boundary."""
    return bool(_WHOLE.fullmatch(sentence)) and not _CLOSED_UNOPENED.match(sentence)


def cite(sentence: str, written_marker: str) -> str:
    """The sentence with its marker before its closing full stop ("... [p1:3].").

    Inside the sentence, so that the marker never opens the next one when sentences are split.
    """
    sentence = " ".join(sentence.split())
    if _TERMINAL.search(sentence):
        return f"{sentence[:-1]} {written_marker}{sentence[-1]}"
    return f"{sentence} {written_marker}"


def markers_in(text: str) -> list[tuple[str, int]]:
    """Every (paper id, page) cited in `text`, in order, repeats included."""
    return [
        (paper_id, int(page))
        for bracket in _BRACKET.finditer(text)
        for paper_id, page in _PARTS.findall(bracket.group(1))
    ]


def replace_markers(text: str, render: Callable[[list[tuple[str, int]]], str]) -> str:
    """`text` with each bracket of markers (`[a:3]`, `[a:3; b:1]`) replaced by what `render`
    makes of its (paper id, page) pairs, in order."""
    return _BRACKET.sub(
        lambda bracket: render(
            [(paper_id, int(page)) for paper_id, page in _PARTS.findall(bracket.group(1))]
        ),
        text,
    )


def without_markers(text: str, dropped: Iterable[str]) -> str:
    """`text` with the `dropped` markers removed (an emptied bracket goes too)."""
    drop = set(dropped)
    if not drop:
        return text

    def kept(bracket: re.Match[str]) -> str:
        parts = [
            f"{paper_id}:{page}"
            for paper_id, page in _PARTS.findall(bracket.group(1))
            if marker(paper_id, int(page)) not in drop
        ]
        return f"[{'; '.join(parts)}]" if parts else ""

    return _tidied(_BRACKET.sub(kept, text))


def _tidied(cleaned: str) -> str:
    """Text whose markers were cut out, without the spaces they leave."""
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", _RUN_OF_SPACES.sub(" ", cleaned)).strip()


def strip_markers(text: str) -> str:
    """`text` with every citation marker removed: `without_markers` dropping all of them, in
    one pass (the history's diff strips every sentence and insight of two versions), and again
    while the removal joins what is left into a new marker ("[x:3[a:1]]")."""
    cleaned = text
    while (again := _BRACKET.sub("", cleaned)) != cleaned:
        cleaned = again
    return text if cleaned == text else _tidied(cleaned)


def cited_sentences(text: str) -> list[str]:
    """The sentences of `text`, with a bracket of markers that stands alone after a full stop
    ("... sites. [a:3].") joined to the sentence it cites."""
    found: list[str] = []
    for span in sentences(text):
        if found and _only_markers(span.text):
            found[-1] += " " + span.text
        else:
            found.append(span.text)
    return found


def _only_markers(sentence: str) -> bool:
    written = [marker(paper_id, page) for paper_id, page in markers_in(sentence)]
    return bool(written) and not any(char.isalnum() for char in without_markers(sentence, written))


# Markdown blocks: the Markdown the writers use (ATX headings, paragraphs, flat lists).
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s+")


@dataclass
class MarkdownBlock:
    """One block of a Markdown text: a heading (its text), a paragraph (its lines joined), or a
    list (one text per item)."""

    kind: Literal["heading", "paragraph", "bullets", "numbered"]
    texts: list[str] = field(default_factory=list)
    level: int = 0


def markdown_blocks(markdown: str) -> list[MarkdownBlock]:
    """The blocks of the Markdown the writers use: ATX headings, paragraphs and flat lists."""
    blocks: list[MarkdownBlock] = []
    current: MarkdownBlock | None = None
    for line in markdown.splitlines():
        heading = _HEADING.match(line)
        item = _LIST_ITEM.match(line)
        if heading:
            blocks.append(MarkdownBlock("heading", [heading.group(2)], len(heading.group(1))))
            current = None
        elif item:
            kind: Literal["bullets", "numbered"] = (
                "numbered" if item.group(1)[0].isdigit() else "bullets"
            )
            if current is None or current.kind != kind:
                current = MarkdownBlock(kind)
                blocks.append(current)
            current.texts.append(line[item.end() :].strip())
        elif not line.strip():
            current = None
        elif current is None or current.kind == "heading":
            current = MarkdownBlock("paragraph", [line.strip()])
            blocks.append(current)
        else:
            # A wrapped line continues the paragraph or the list item above it.
            current.texts[-1] += " " + line.strip()
    return blocks


def estimate_tokens(text: str) -> int:
    """Model tokens of `text`, estimated as characters / 4 (English prose averages about four
    characters a token): cheap, and near enough to choose a pattern."""
    return math.ceil(len(text) / 4)


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 paper`, `3 papers`, `0 papers` (`plural` for a noun that does not take an `s`:
    `counted(n, "entry", "entries")`): every count a command or a page shows with its noun."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
