"""The offline engine of the comparison table's agents, `comparison_aspects` (the table's
columns) and `comparison_cells` (one paper's row), with their inputs and replies.

Aspects: offline, the fixed six (`FIXED_ASPECTS`), at most `max_aspects` of them.

Cells: for each aspect, the paper's passages retrieved for the aspect's query
(`aspect_query`, those of the sections stating the aspect first: `in_aspect_sections_first`)
give the value: the first sentence making the aspect's rhetorical move (`ASPECT_CUES`), else
the best-scored one as an answer's evidence is scored (`answering.best_sentences`: the share
of the query's content terms a sentence holds, weighted by its passage's rank) sharing at least
`MIN_SHARED_TERMS` distinct content terms with the query; verbatim, cited with its passage's
marker, cut to `cell_words` words at a word (`capped`). The back matter (acknowledgements,
funding, data availability, ...) is never a value. A paper none of whose passages makes the
move or shares that much with the aspect gets `NOT_REPORTED`. The value is the paper's own
words, so the cell is faithful by construction; what it cannot promise is relevance, which the
cues and the shared terms only bound (`docs/results.md`: 12 of 54 cells of the bundled papers
right against a hand-checked table).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, Field

from litpipe.citations import chunk_marker
from litpipe.extractive.answering import (
    EvidenceSentence,
    best_sentences,
    evidence_sentences,
    whole_unless_none,
)
from litpipe.extractive.fields import NON_BLANK
from litpipe.extractive.related_work import count_words
from litpipe.retrieval.text import content_terms
from litpipe.schemas import NOT_REPORTED, RetrievedChunk
from litpipe.text import BRACKETED, cite, marker, markers_in

# The ArxivDIGESTables recipe's common columns of a paper table, as a reader compares papers
# without a model: what each sets out to do, how, on what, how it is tested, what it finds and
# what it leaves open.
FIXED_ASPECTS = ("problem", "approach", "data", "evaluation", "main result", "limitations")

# What each fixed aspect is searched with and scored against. An aspect's own name is a poor
# query: "data", "approach", "problem" and "result" are among the words too general to say what
# a sentence is about (`text.GENERIC_WORDS`, which `content_terms` drops), and research verbs
# ("propose", "show", "evaluate") count for nothing either. So each query is the words papers
# use in the sentences that state that aspect, specific enough to count: "data" is what was
# collected or sequenced, from which organisms, strains, cohorts or patients.
ASPECT_QUERIES = {
    "problem": "challenge gap question unknown unclear poorly understood remains motivation "
    "problem",
    "approach": "approach framework technique design algorithm pipeline strategy method developed",
    "data": "dataset samples organisms strains cohort patients collected sequencing corpus "
    "species data",
    "evaluation": "benchmark baseline metric accuracy experiments validation compared tested "
    "evaluation",
    "main result": "finding findings key conclusion higher lower greater strongly main result",
    "limitations": "limitation limitations limited caveat future unclear cannot remains "
    "limitations",
}
# A sentence names an aspect when it shares at least this many distinct content terms with the
# aspect's query (the query's own terms are chosen to be specific to it). Measured on the nine
# bundled papers (benchmarks/comparison_table.py): two shared terms left 42 of 54 cells "not
# reported" (no paper's "problem" or "limitations"), papers stating them in other words; one
# leaves 2, at the cost of some values that match the aspect's word but not its sense.
MIN_SHARED_TERMS = 1
# What marks a value cut short of its sentence.
CUT = "…"
# Sections that state no finding of the paper (compared with everything but letters removed):
# their sentences share an aspect's words by accident ("Any opinions, findings, conclusions
# ... are those of the authors", "sequencing data have been deposited").
_BACK_MATTER = re.compile(
    r"acknowledg|funding|contribution|availability|competing|conflict|declaration|publisher|"
    r"reference|bibliograph|ethic|consent|abbreviation"
)
# The same statements where the parser gave them no heading of their own (a first page's
# footnotes: "Author contributions: ...", "This work was supported by ...").
_BACK_MATTER_SENTENCE = re.compile(
    r"^(?:author contributions|acknowledg|competing interests|conflicts? of interest)"
    r"|\b(?:was|were|is) (?:supported|funded) by\b",
    re.I,
)


# Where papers state each fixed aspect, as a reader of an IMRaD paper looks for it: the question
# in the abstract and the introduction's close, the method and data in the methods, the tests in
# the results, the finding in the abstract and conclusions, the caveats in the discussion. A
# passage of these sections goes before the others the aspect's search found
# (`in_aspect_sections_first`); it is a preference, not a filter: a paper whose headings are
# none of these (a subsection's own title, a preprint's numbered headings) keeps its order.
# Compared with the section's heading, case-folded.
ASPECT_SECTIONS = {
    "problem": re.compile(r"abstract|introduction|background|significance|summary"),
    "approach": re.compile(r"abstract|method|approach|summary"),
    "data": re.compile(r"method|material|data\b|dataset"),
    "evaluation": re.compile(r"result|evaluation|experiment|validation"),
    "main result": re.compile(r"abstract|conclusion|summary|significance"),
    "limitations": re.compile(r"discussion|limitation|conclusion|future"),
}

# How papers word each fixed aspect, whatever their field: the rhetorical moves of a research
# article (Swales's "indicating a gap", Teufel's argumentative zones: aim, own method, own
# result, limits). A sentence making the aspect's move is its value before any sentence that
# only shares its query's terms (`best_cell_sentence`): "Here we show that ..." states a main
# result whose words no query can guess. Matched case-insensitively.
ASPECT_CUES = {
    aspect: re.compile(pattern, re.I)
    for aspect, pattern in {
        "problem": r"\b(?:remains?|remained) (?:largely |still |poorly )?(?:unclear|unknown|"
        r"elusive|unexplored|to be (?:determined|elucidated))|\b(?:is|are|was|were) (?:largely |"
        r"still )?(?:unclear|unknown|elusive|unexplored|poorly understood|not well understood)"
        r"|\blittle is known|\b(?:major|key|central|open|outstanding) (?:challenge|question|"
        r"problem)|\bto address (?:this|these|the)\b|\bgap in\b",
        "approach": r"\b(?:here,? )?we (?:develop(?:ed)?|design(?:ed)?|construct(?:ed)?|"
        r"engineer(?:ed)?|establish(?:ed)?|introduce[ds]?|present(?:ed)?|combine[ds]?|"
        r"appl(?:y|ied)|employ(?:ed)?|use[ds]?|perform(?:ed)?|generate[ds]?)\b",
        "data": r"\b(?:collected|sequenced|recruited|sampled|isolated|obtained|downloaded|"
        r"retrieved)\b|\bdata(?:sets?)? (?:from|of|were|was|comprising)\b",
        "evaluation": r"\b(?:validated?|validation|benchmark(?:ed|s)?|compared (?:with|to|"
        r"against)|cross-validation|replicates?|statistical(?:ly)?|significan(?:t|ce))\b",
        "main result": r"\b(?:here,? )?we (?:show|showed|find|found|demonstrate[ds]?|reveal(?:ed)?|"
        r"report|identif(?:y|ied)|uncover(?:ed)?)\b|\b(?:our|these|the) (?:results|findings|"
        r"data|analyses) (?:show|showed|suggest|indicate|reveal|demonstrate|support)|^(?:in "
        r"summary|in conclusion|conclusions?|taken together|together|overall)\b",
        "limitations": r"\blimitations?\b|\bcaveats?\b|\bfuture (?:work|studies|research)|"
        r"\bremains? to be\b|\bfurther (?:work|studies|research|investigation) (?:is|are|will "
        r"be) (?:needed|required)|\bcannot (?:rule out|exclude)|\bwe did not\b|\b(?:has|have) "
        r"yet to\b|\bmay (?:differ|not generali[sz]e)|\bbeyond the scope",
    }.items()
}


# Aspects a user names in words too general to count (`--set comparison.aspects=
# '["organism", "method"]'`): searched as the fixed aspect they mean.
_ALIASES = {
    "method": "approach",
    "methods": "approach",
    "methodology": "approach",
    "model": "approach",
    "dataset": "data",
    "datasets": "data",
    "result": "main result",
    "results": "main result",
    "findings": "main result",
    "main finding": "main result",
    "limitation": "limitations",
    "task": "problem",
}


def _fixed_aspect(aspect: str) -> str:
    """The fixed aspect an aspect names (itself, or the one its alias names); else the aspect
    case-folded."""
    named = " ".join(aspect.casefold().split())
    return _ALIASES.get(named, named)


def aspect_query(aspect: str) -> str:
    """What an aspect is searched with: a fixed aspect's query (or the one an alias names), any
    other aspect's own words. An aspect whose words are all too general ("performance") finds
    no sentence offline, and is not reported."""
    return ASPECT_QUERIES.get(_fixed_aspect(aspect), aspect)


def in_aspect_sections_first(aspect: str, passages: list[RetrievedChunk]) -> list[RetrievedChunk]:
    """The passages of the sections where papers state the aspect (`ASPECT_SECTIONS`) first,
    each group in its search order; an aspect not among the fixed ones keeps the order."""
    sections = ASPECT_SECTIONS.get(_fixed_aspect(aspect))
    if sections is None:
        return passages
    return sorted(passages, key=lambda chunk: not sections.search(chunk.section.casefold()))


class AspectsPaper(BaseModel):
    """A paper as the aspects are proposed from it: its title, abstract and answers."""

    paper_id: str
    title: str
    abstract: str
    answers: list[str] = Field(
        default_factory=list, description="Its questions and answers, one `Q: … A: …` each."
    )


class AspectsInput(BaseModel):
    collection: str
    papers: list[AspectsPaper]
    max_aspects: int


class AspectsReply(BaseModel):
    # A column's header: a few words, never a paragraph.
    aspects: list[Annotated[str, Field(pattern=NON_BLANK, max_length=80)]] = Field(
        min_length=1,
        description="The aspects to compare the papers on, each a short noun phrase, most "
        "telling first.",
    )


def offline_aspects(inputs: AspectsInput) -> AspectsReply:
    return AspectsReply(aspects=list(FIXED_ASPECTS[: max(inputs.max_aspects, 1)]))


class AspectPassages(BaseModel):
    """One aspect of a paper's row and the paper's passages retrieved for it, best first."""

    aspect: str
    passages: list[RetrievedChunk]


class CellsInput(BaseModel):
    """What one paper's row is written from: nothing of any other paper."""

    paper_id: str
    title: str
    aspects: list[AspectPassages]
    cell_words: int

    def passages(self) -> list[RetrievedChunk]:
        """The row's passages, each once, in the order first retrieved."""
        seen: dict[str, RetrievedChunk] = {}
        for item in self.aspects:
            for chunk in item.passages:
                seen.setdefault(chunk.chunk_id, chunk)
        return list(seen.values())


class CellReply(BaseModel):
    aspect: str = Field(description="The aspect, as given.", pattern=NON_BLANK)
    value: str = Field(
        description=f"A short value citing its passage as [paper_id:page], or `{NOT_REPORTED}`.",
        pattern=NON_BLANK,
    )


class CellsReply(BaseModel):
    cells: list[CellReply] = Field(description="One cell per aspect given.")


def shared_terms(sentence: EvidenceSentence, query: str) -> int:
    """Distinct content terms of `query` the sentence holds."""
    return len(sentence.terms & content_terms(query))


def best_cell_sentence(aspect: str, passages: list[RetrievedChunk]) -> EvidenceSentence | None:
    """The aspect's sentence among the passages, back matter aside: the first making the
    aspect's move (`ASPECT_CUES`), in the passages' order; else the best-scored one sharing
    enough content terms with its query (`aspect_query`, `MIN_SHARED_TERMS`); None when none
    does."""
    query = aspect_query(aspect)
    wanted = content_terms(query)
    need = min(MIN_SHARED_TERMS, len(wanted))
    own = [chunk for chunk in passages if not _back_matter(chunk.section)]
    if not need or not own:
        return None
    cue = ASPECT_CUES.get(_fixed_aspect(aspect))
    if cue is not None:
        moves = [
            sentence
            for sentence in whole_unless_none(evidence_sentences(query, own))
            if cue.search(sentence.text) and not _BACK_MATTER_SENTENCE.search(sentence.text)
        ]
        if moves:
            return moves[0]
    return next(
        (
            sentence
            for sentence in best_sentences(query, own, most=len(own) * 3)
            if shared_terms(sentence, query) >= need
            and not _BACK_MATTER_SENTENCE.search(sentence.text)
        ),
        None,
    )


def _back_matter(section: str) -> bool:
    return bool(_BACK_MATTER.search(re.sub(r"[^a-z]", "", section.lower())))


def capped(value: str, words: int) -> str:
    """`value` on one line with at most `words` words outside its markers (`count_words`): cut
    after its `words`th word, trailing punctuation dropped, `…` marking the cut, then the
    markers of what was cut that the kept part does not hold, so the value still cites every
    passage it came from. Within the limit, `value` as it is."""
    flat = " ".join(value.split())
    if count_words(flat) <= words:
        return flat
    brackets = [(found.start(), found.end()) for found in BRACKETED.finditer(flat)]
    counted = 0
    end = len(flat)
    for token in re.finditer(r"\S+", flat):
        if any(start <= token.start() < stop for start, stop in brackets):
            continue
        if re.search(r"[^\W_]", token.group()):
            counted += 1
        if counted == words:
            end = token.end()
            break
    kept = flat[:end].rstrip(",;:.!?-\u2014\u2013")
    if kept.rfind("[") > kept.rfind("]"):  # a marker the cut would split is cut whole
        kept = kept[: kept.rfind("[")].rstrip()
    held = set(markers_in(kept))
    dropped = [found for found in markers_in(flat[end:]) if found not in held]
    return " ".join([kept, CUT, *(marker(*found) for found in dict.fromkeys(dropped))])


def offline_cell(item: AspectPassages, words: int) -> str:
    """The aspect's value: its best sentence (`best_cell_sentence`), cited and `capped`; or
    NOT_REPORTED."""
    sentence = best_cell_sentence(item.aspect, item.passages)
    if sentence is None:
        return NOT_REPORTED
    return capped(cite(sentence.text, chunk_marker(sentence.chunk)), words)


def offline_cells(inputs: CellsInput) -> CellsReply:
    return CellsReply(
        cells=[
            CellReply(aspect=item.aspect, value=offline_cell(item, inputs.cell_words))
            for item in inputs.aspects
        ]
    )
