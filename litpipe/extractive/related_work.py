"""The offline engine of the `related_work` agent (LitLLM's writer), and the `[id]` citations of a
related-work section.

Citations here are the reference table's ids in square brackets (`[abc]`, several as
`[abc; def]`), not the `[paper_id:page]` markers of `litpipe.citations`: a related-work section
cites whole references, and every square bracket of a section is read as a citation.
`citation`, `cited_ids`, `without_citations`, `count_words` and `paragraphs` write and read
them, for the engine and for the checks every section goes through
(`litpipe.agents.related_work.review`).

The offline engine is extractive: every sentence is an abstract's own (less an opener it drops,
see below), citing that abstract only, but for the last, the idea's own, uncited.
0. Motivation: the section ends by motivating the idea, as the writer's prompt asks, with the
   idea's first statement of what it does ("We propose X", "In contrast, we present X", or
   else "X is proposed"; in an idea without one, its sentence closest to the references). Its
   words are set aside first, when the references keep two sentences and the words of a typical
   sentence (below) and still get a quoted one.
1. Scores: query-focused LexRank (Otterbacher et al. 2005) over the sentences of all the given
   abstracts: PageRank on their TF-IDF cosine graph (`litpipe.retrieval.centrality`, the graph
   of the LexRank baseline), the walk restarting at each sentence in proportion to its TF-IDF
   cosine with what the idea is about: its statement of what it does and its other sentences
   but those reporting its evaluation (figures, results, experiments, benchmarks), which would
   make the references' own figures look relevant. A sentence scores high when it says what
   the other abstracts say (the shared subject of the works cited) and is close to the idea; a
   peripheral sentence that merely shares a rare word with the idea does not.
2. Coverage: a sentence for each of as many references as have room for one, the rest named
   in one listing sentence ("Also related are "A" [a] and [b].", titles dropped when they do
   not fit). A reference is quoted only when every quoted one has the words of a typical
   sentence of the abstracts (the median length of all of them; the best-scored reference
   always has a sentence):
   shares shorter than that buy only short, peripheral sentences, while naming costs three
   words for all the named together. The references quoted are those whose best sentence
   scores highest (the score weighs relevance to the idea too); in the debate's order, each
   takes its best-scored sentence within an even share of the words left (W less what the
   quoted before it took, over those still to place), or its shortest when none is that short.
3. Filling: the words and sentences left first quote the named references where they can,
   best-scored first (a work described tells the reader more than a work named), each with its
   best-scored sentence that fits once it leaves the listing; then they go to the best-scored
   further sentences of the quoted references. Each sentence fits the words left and shares
   less than REDUNDANT_OVERLAP of its terms with every sentence taken, one opening with a word
   that points back ("This method", "It") comes only right after the sentence it follows in
   its abstract, and none reports an evaluation: a related-work section describes what works
   do, not how they scored. When the references have no more to say, the section is shorter:
   the idea's other sentences are not repeated back to its author.
Quoted sentences are compressed first (`compressed`): what only says where a claim is made (a
run-in "Abstract" heading, "In this paper,", "Here,") and a connective pointing at a sentence
left behind ("However,") are dropped, so the words go to content. They are then said of the
work, as a related-work section cites (`attributed`): the work as subject is its citation, and
its authors' first person the third, so "In this paper, we propose X and test our model" is
quoted "[a] propose X and test their model."; the rest is the abstract's, word for word. Each
reference's sentences stay together, in its abstract's order; the quoted references stand in a
chain of likeness, as a person groups works on one theme: the most relevant first, then each
followed by the one most like it (TF-IDF cosine of their sentences' terms); the named ones
follow, most relevant first, and the idea's sentence comes last. One parameter is the engine's
own, the redundancy bound (0.4); the rest are LexRank's (edges from a cosine of 0.1, damping
0.85: the walk restarts from the idea's sentences 15% of the time) and the median, which is the
data's. Its ROUGE against the extractive baselines: docs/results.md, "Related work against
gold paragraphs".
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from pydantic import BaseModel, Field

from litpipe.extractive.paper_summary import MIN_SENTENCE_TERMS
from litpipe.retrieval.centrality import query_focused_lexrank, tfidf_cosines
from litpipe.retrieval.text import tokenize
from litpipe.schemas import ScoredReference
from litpipe.text import cite, overlap, points_back, reports_evaluation, sentences

# A bracket not followed by "(" (a Markdown link is not a citation), on one line.
_BRACKET = re.compile(r"\[([^\[\]\n]{1,200})\](?!\()")
_ID_SEPARATOR = re.compile(r"\s*[;,]\s*")
# Characters an id cannot hold and still be cited and parsed back.
UNCITABLE_ID_CHARACTERS = "[];,\n\r"
_WORD = re.compile(r"[^\W_]")
PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_TERMINAL = re.compile(r"[.!?][\"'\u201d\u2019)]*$")
# The fixed words of the offline engine's sentences that are not an abstract's own.
ALSO_RELATED = "Also related are"
CLOSELY_RELATED = "Closely related is"


class RelatedWorkInput(BaseModel):
    idea: str
    references: list[ScoredReference] = Field(description="The top-k, most relevant first.")
    sentences: int = Field(ge=1, description="At most this many sentences (N).")
    words: int = Field(ge=1, description="At most this many words, citations not counted (W).")
    plan: str = Field(
        default="",
        description="A sentence plan for a model writer to write to (`related_work_plan`); "
        "empty: none. The offline engine does not follow one.",
    )

    @property
    def ids(self) -> list[str]:
        return [scored.reference.id for scored in self.references]


class RelatedWorkReply(BaseModel):
    text: str = Field(
        description="The related-work section: plain paragraphs, no heading, no reference "
        "list, citing references as [id]."
    )


# Citations.


def citation(ids: Iterable[str]) -> str:
    """`[a]`, or `[a; b]` for several."""
    return f"[{'; '.join(ids)}]"


def cited_ids(text: str) -> list[str]:
    """Every id in a bracket of `text`, in order of first citation, supplied or not."""
    found = [
        item
        for bracket in _BRACKET.finditer(text)
        for item in _ID_SEPARATOR.split(bracket.group(1).strip())
        if item
    ]
    return list(dict.fromkeys(found))


def replace_citations(text: str, known: Collection[str], render: Callable[[list[str]], str]) -> str:
    """`text` with each bracket whose ids are all `known` replaced by what `render` makes of
    them, in order; any other bracket as it is."""

    def replaced(bracket: re.Match[str]) -> str:
        items = [i for i in _ID_SEPARATOR.split(bracket.group(1).strip()) if i]
        return render(items) if items and all(i in known for i in items) else bracket.group()

    return _BRACKET.sub(replaced, text)


def without_citations(text: str, dropped: Iterable[str]) -> str:
    """`text` with the `dropped` ids taken out of its brackets (an emptied bracket goes too)."""
    drop = set(dropped)
    if not drop:
        return text

    def kept(bracket: re.Match[str]) -> str:
        items = [i for i in _ID_SEPARATOR.split(bracket.group(1).strip()) if i and i not in drop]
        return citation(items) if items else ""

    cleaned = _BRACKET.sub(kept, text)
    # A removed bracket leaves its space before punctuation, or two spaces.
    return re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", cleaned)).strip()


def count_words(text: str) -> int:
    """Words of `text` outside its citations (a token holding a letter or a digit)."""
    return sum(1 for token in _BRACKET.sub(" ", text).split() if _WORD.search(token))


def paragraphs(text: str) -> list[list[str]]:
    """The sentences of each paragraph; a bracket left alone after a full stop ("... works.
    [a]") joins the sentence before it."""
    found: list[list[str]] = []
    for paragraph in PARAGRAPH_BREAK.split(text.strip()):
        split: list[str] = []
        for span in sentences(paragraph):
            line = " ".join(span.text.split())
            if split and not _WORD.search(_BRACKET.sub("", line)):
                split[-1] += f" {line}"
            else:
                split.append(line)
        if split:
            found.append(split)
    return found


def joined(parts: list[list[str]]) -> str:
    return "\n\n".join(" ".join(paragraph) for paragraph in parts if paragraph)


def count_sentences(text: str) -> int:
    return sum(len(paragraph) for paragraph in paragraphs(text))


# Two sentences sharing this much of their terms (cosine of the term sets) say the same thing:
# a filling sentence that close to one already chosen is passed over.
REDUNDANT_OVERLAP = 0.4


def _quotable(sentence: str) -> str:
    """An abstract's sentence on one line, its square brackets made round: in a section, every
    square bracket is a citation ("values in [0, 1]" would cite `0` and `1`)."""
    return " ".join(sentence.split()).replace("[", "(").replace("]", ")")


# Openers a quoted sentence does without (`compressed`). In a section about other works, "In
# this paper, we propose X" says no more than "We propose X"; a connective ("However,", "Finally,")
# points at a sentence of the abstract that is not quoted.
_OPENER = re.compile(
    r"^(?:(?:in|within) (?:this|the present|our) (?:paper|work|article|study|letter|note|report"
    r"|thesis|dissertation|chapter)\s*,?\s+|here\s*,?\s+(?=we\b))?"
    r"(?:(?:however|moreover|furthermore|in addition|additionally|finally|also|thus|hence"
    r"|therefore|consequently|meanwhile|as a result|in particular|to this end|specifically"
    r"|in contrast|instead|then|first|firstly|second|secondly|third|thirdly|lastly)\s*,\s*)?",
    re.I,
)
# The heading of an abstract run into its first sentence ("Abstract This paper ..."), told from
# a sentence about abstract things ("Abstract interpretation is ...") by what follows it.
_RUN_IN_HEADING = re.compile(
    r"^Abstract(?:\s*[:.\u2014-]\s*|\s+(?=(?:This|These|We|In|The|A|An|Our|Here)\b))"
)


def compressed(sentence: str) -> str:
    """The sentence without what only says where its claim is made: a run-in "Abstract"
    heading, an opener ("In this paper,", "Here,") and a connective to a sentence left behind
    ("However,"); its first letter made upper case. As it is when nothing is dropped or too
    little would be left (fewer than MIN_SENTENCE_TERMS terms)."""
    rest = _OPENER.sub("", _RUN_IN_HEADING.sub("", sentence, count=1), count=1)
    if rest == sentence or len(tokenize(rest)) < MIN_SENTENCE_TERMS:
        return sentence
    return rest[:1].upper() + rest[1:]


def _ending(sentence: str) -> str:
    return sentence if _TERMINAL.search(sentence) else f"{sentence}."


def cited_sentence(sentence: str, ids: list[str]) -> str:
    """The sentence with its citation before its closing full stop ("... works [a]."), always
    ending as a sentence."""
    return _ending(cite(_quotable(sentence), citation(ids)))


# The subject of an abstract's sentence that is the work itself: its authors ("We", "I") or the
# paper ("This paper", "The authors"), followed by its verb (not by "of": "The study of X").
_SELF_SUBJECT = re.compile(
    r"^(?:we|i|(?:this|the present|our) (?:paper|work|article|study|letter|note|report|thesis"
    r"|dissertation|chapter)|the (?:paper|article|authors?))\s+(?!(?:of|on|in|for|from|by|at|to)\b)"
    r"(?=[a-z])",
    re.I,
)
# "We" after a clause that opens the sentence ("With this approach, we achieve X").
_INNER_WE = re.compile(r"(?<=, )we\s+(?=[a-z])")
# What a work proposes, in the passive ("A model is proposed").
_PROPOSED = re.compile(
    r"\b(?:is|are)\s+(?:\w+ly\s+)?(?:proposed|presented|introduced|developed|described)\b"
)
# First-person words, which in a section about another work are its authors': third person.
_FIRST_PERSON = re.compile(r"\b(?:[Ww]e|[Oo]ur|[Oo]urs|[Oo]urselves|us)\b")
_THIRD_PERSON = {
    "we": "they",
    "our": "their",
    "ours": "theirs",
    "ourselves": "themselves",
    "us": "them",
}


def _third_person(text: str) -> str:
    """`text` with its first-person words in the third person ("our model" is "their model")."""

    def replaced(word: re.Match[str]) -> str:
        found = word.group()
        third = _THIRD_PERSON[found.lower()]
        return third.capitalize() if found[0].isupper() else third

    return _FIRST_PERSON.sub(replaced, text)


def attributed(sentence: str, ids: list[str]) -> str:
    """The abstract's sentence as a related-work section says it of the work: the work's own
    subject becomes its citation ("We propose X" is written "[a] propose X.", "This paper
    studies X" "[a] studies X.", "With it, we reach X" "With it, [a] reach X."), and the rest of
    its first person the third ("our model" is "their model"); a sentence with no such subject
    keeps its citation at its end."""
    quotable = _quotable(sentence)
    subject = _SELF_SUBJECT.match(quotable) or _INNER_WE.search(quotable)
    if subject is None:
        return cited_sentence(_third_person(quotable), ids)
    rest = _third_person(quotable[subject.end() :])
    return _ending(f"{quotable[: subject.start()]}{citation(ids)} {rest}")


def _quoted_title(title: str) -> str:
    return f'"{_quotable(title).rstrip(".")}"'


def _listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


# An entry of a table of contents ("The model, 489. — III."): a title, its page number and the
# next entry's numeral. Two of them make an abstract a table of contents, with no sentence to quote.
_CONTENTS_ENTRY = re.compile(r",\s*\d+\s*\.?\s*[\u2014\u2013-]+\s*[IVXLC]+\b")


def terms_of(text: str) -> set[str]:
    return set(tokenize(text))


def abstract_sentences(abstract: str) -> list[str]:
    """The abstract's sentences, each on one line, fragments (fewer than MIN_SENTENCE_TERMS
    terms: "Code is available.") left out unless nothing else is left; none when the abstract is
    a table of contents (some journals' records give one)."""
    spans = [" ".join(span.text.split()) for span in sentences(abstract)]
    if sum(bool(_CONTENTS_ENTRY.search(s)) for s in spans) >= 2:
        return []
    return [s for s in spans if len(tokenize(s)) >= MIN_SENTENCE_TERMS] or spans


def ranked_sentences(scored: ScoredReference, idea_terms: set[str]) -> list[str]:
    """The abstract's sentences (fragments left out) closest to the idea first: by shared
    terms, then quoted by the debate, then in the abstract's order."""
    quotes = [" ".join(quote.split()) for quote in scored.verdict.quotes_for]
    usable = abstract_sentences(scored.reference.abstract)

    def quoted(sentence: str) -> bool:
        return any(quote and (quote in sentence or sentence in quote) for quote in quotes)

    order = sorted(
        range(len(usable)),
        key=lambda i: (-overlap(terms_of(usable[i]), idea_terms), not quoted(usable[i]), i),
    )
    return [usable[i] for i in order]


def closest_sentence(scored: ScoredReference, idea_terms: set[str]) -> str:
    """The reference's abstract sentence closest to the idea, cited; its title when the
    abstract has no sentence."""
    ids = [scored.reference.id]
    ranked = ranked_sentences(scored, idea_terms)
    if ranked:
        return cited_sentence(ranked[0], ids)
    return f"{CLOSELY_RELATED} {_quoted_title(scored.reference.title)} {citation(ids)}."


@dataclass(frozen=True)
class _Candidate:
    """A sentence the offline engine may write: `text` cites the one reference it is quoted
    from (`reference`, its index among the inputs'), `position` is its place in the abstract."""

    reference: int
    position: int
    text: str
    words: int
    terms: frozenset[str]
    score: float
    points_back: bool = False
    reports_evaluation: bool = False


def _candidates(inputs: RelatedWorkInput, idea: list[_IdeaSentence]) -> list[list[_Candidate]]:
    """Each reference's candidate sentences, scored by query-focused LexRank over the sentences
    of all the references: PageRank on their TF-IDF cosine graph whose walk restarts at a
    sentence in proportion to its TF-IDF cosine with what the idea is about (`_idea_query`).
    A sentence is scored as the
    abstract has it and written `compressed`. A reference whose abstract has no sentence has the
    sentence naming it as its only candidate."""
    pool = [
        (index, position, sentence)
        for index, scored in enumerate(inputs.references)
        for position, sentence in enumerate(abstract_sentences(scored.reference.abstract))
    ]
    terms = [tokenize(sentence) for _, _, sentence in pool]
    scores = query_focused_lexrank(terms, _idea_query(idea, inputs.idea))
    by_reference: list[list[_Candidate]] = [[] for _ in inputs.references]
    for (index, position, sentence), sentence_terms, score in zip(pool, terms, scores, strict=True):
        quoted = compressed(sentence)
        text = attributed(quoted, [inputs.references[index].reference.id])
        by_reference[index].append(
            _Candidate(
                index,
                position,
                text,
                count_words(text),
                frozenset(sentence_terms),
                score,
                points_back=points_back(quoted),
                reports_evaluation=reports_evaluation(quoted),
            )
        )
    for index, options in enumerate(by_reference):
        if not options:
            text = _listed([inputs.references[index]], inputs.words)
            options.append(_Candidate(index, 0, text, count_words(text), frozenset(), 0.0))
    return by_reference


def _listed(references: list[ScoredReference], words_left: int) -> str:
    """One sentence naming `references` by title and citation ("Also related are "A" [a] and
    [b]."), or by citation alone when the titles do not fit in `words_left`; none when there
    are no references to name."""
    if not references:
        return ""
    ids = [scored.reference.id for scored in references]
    titled = [
        f"{_quoted_title(s.reference.title)} {citation([s.reference.id])}"
        if s.reference.title.strip()
        else citation([s.reference.id])
        for s in references
    ]
    bare = [citation([i]) for i in ids]
    lead_in = CLOSELY_RELATED if len(ids) == 1 else ALSO_RELATED
    with_titles = f"{lead_in} {_listing(titled)}."
    return with_titles if count_words(with_titles) <= words_left else f"{lead_in} {_listing(bare)}."


def _typical_words(options: list[list[_Candidate]]) -> float:
    """The words of a typical sentence of the abstracts: the median of their candidates'."""
    return statistics.median(c.words for choices in options for c in choices)


def _coverage(
    options: list[list[_Candidate]], inputs: RelatedWorkInput
) -> tuple[list[_Candidate], str]:
    """A sentence for each of as many references as have room for one, the rest named in one
    listing sentence. The references quoted are those whose best sentence scores
    highest (the score weighs relevance to the idea too); in the debate's order, each takes the
    best-scored of its sentences within an even share of the words left, or its shortest when
    none is that short. A reference is quoted only when every quoted one has the words of a
    typical sentence of the abstracts (the median length): below that, shares buy only short,
    peripheral sentences, and naming costs three words for all the named together. The
    best-scored reference always has a sentence when the sentences allow one."""
    count = len(inputs.references)
    best_first = _best_first(options)
    typical = _typical_words(options)
    for own in range(min(count, inputs.sentences), 0, -1):
        if own < count and own + 1 > inputs.sentences:
            continue  # the listing needs a sentence of its own
        named = [inputs.references[i] for i in sorted(best_first[own:])]
        listing = _listed(named, inputs.words)
        words_left = inputs.words - count_words(listing)
        if own > 1 and own * typical > words_left:
            continue
        picks = []
        for turn, index in enumerate(sorted(best_first[:own])):
            share = words_left / (own - turn)
            fitting = [c for c in options[index] if c.words <= share]
            pick = (
                max(fitting, key=lambda c: c.score)
                if fitting
                else min(options[index], key=lambda c: c.words)
            )
            picks.append(pick)
            words_left -= pick.words
        if words_left >= 0:
            return picks, listing
    return [], _listed(inputs.references, inputs.words)


def _best_first(options: list[list[_Candidate]]) -> list[int]:
    """The references, those whose best sentence scores highest first."""
    return sorted(range(len(options)), key=lambda i: (-max(c.score for c in options[i]), i))


def _fits_the_section(candidate: _Candidate, taken: list[_Candidate]) -> bool:
    """Whether a further sentence may join `taken`: unlike each of them (less than
    REDUNDANT_OVERLAP of shared terms), not reporting an evaluation (a section describes what
    works do, not how they scored), and, when it points back ("This method ..."), right after
    the sentence it follows in its abstract."""
    if max(overlap(candidate.terms, c.terms) for c in taken) >= REDUNDANT_OVERLAP:
        return False
    if candidate.reports_evaluation:
        return False
    return not candidate.points_back or any(
        c.reference == candidate.reference and c.position == candidate.position - 1 for c in taken
    )


def _named_quoted(
    chosen: list[_Candidate], options: list[list[_Candidate]], inputs: RelatedWorkInput
) -> tuple[list[_Candidate], str]:
    """`chosen` with the named references quoted where the words left allow, best-scored
    first, and the listing sentence naming those still left: a work described tells the reader
    more than a work named. Each takes its best-scored sentence that fits the words left once
    it leaves the listing and may join those taken (`_fits_the_section`)."""
    quoted = list(chosen)
    for index in _best_first(options):
        if any(c.reference == index for c in quoted):
            continue
        listing = _listed(_still_named(quoted, inputs, but=index), inputs.words)
        words_left = inputs.words - sum(c.words for c in quoted) - count_words(listing)
        if len(quoted) + 1 + (1 if listing else 0) > inputs.sentences:
            continue
        fitting = [
            c
            for c in options[index]
            # A reference without an abstract has only the sentence naming it.
            if c.terms and c.words <= words_left and _fits_the_section(c, quoted)
        ]
        if fitting:
            quoted.append(max(fitting, key=lambda c: c.score))
    return quoted, _listed(_still_named(quoted, inputs), inputs.words)


def _still_named(
    quoted: list[_Candidate], inputs: RelatedWorkInput, but: int | None = None
) -> list[ScoredReference]:
    """The references not quoted (nor `but`), in the debate's order."""
    covered = {c.reference for c in quoted} | {but}
    return [scored for i, scored in enumerate(inputs.references) if i not in covered]


def _filled(
    chosen: list[_Candidate], options: list[list[_Candidate]], words_left: int, sentences_left: int
) -> list[_Candidate]:
    """`chosen` with the words and sentences left spent on the best-scored further sentences of
    the references that have one, each fitting the words left and able to join those taken
    (`_fits_the_section`): a reference's further sentences say more of what it does."""
    taken = list(chosen)
    covered = {c.reference for c in chosen}
    rest = [c for i in sorted(covered) for c in options[i] if c not in chosen]
    for candidate in sorted(rest, key=lambda c: (-c.score, c.reference, c.position)):
        if sentences_left == 0:
            break
        if candidate.words > words_left or not _fits_the_section(candidate, taken):
            continue
        taken.append(candidate)
        words_left -= candidate.words
        sentences_left -= 1
    return taken


@dataclass(frozen=True)
class _IdeaSentence:
    """A sentence of the idea as the section writes it: uncited, its opener dropped."""

    text: str
    words: int
    terms: list[str]
    # What the work does, said with the work as subject ("We propose X"), or in the passive.
    by_the_work: bool
    proposes: bool
    reports_evaluation: bool


def _idea_sentences(idea: str) -> list[_IdeaSentence]:
    """The idea's sentences, fragments left out."""
    found = []
    for span in sentences(idea):
        terms = tokenize(span.text)
        if len(terms) < MIN_SENTENCE_TERMS:
            continue
        quoted = compressed(" ".join(span.text.split()))
        text = _ending(_quotable(quoted))
        found.append(
            _IdeaSentence(
                text,
                count_words(text),
                terms,
                by_the_work=bool(_SELF_SUBJECT.match(quoted) or _INNER_WE.search(quoted)),
                proposes=bool(_PROPOSED.search(quoted)),
                reports_evaluation=reports_evaluation(quoted),
            )
        )
    return found


def _statement(idea: list[_IdeaSentence]) -> int | None:
    """The idea's first statement of what it does ("We propose X", or else "X is proposed")."""
    for stating in (
        [i for i, sentence in enumerate(idea) if sentence.by_the_work],
        [i for i, sentence in enumerate(idea) if sentence.proposes],
    ):
        if stating:
            return stating[0]
    return None


def _idea_query(idea: list[_IdeaSentence], text: str) -> list[str]:
    """What the idea is about, the query the references' sentences are scored against: its
    statement of what it does and its other sentences that do not report its evaluation ("Our
    model reaches 91% accuracy on X" would make the references' own figures and benchmarks look
    relevant); all its terms when no sentence is left."""
    statement = _statement(idea)
    about = [
        term
        for index, sentence in enumerate(idea)
        if index == statement or not sentence.reports_evaluation
        for term in sentence.terms
    ]
    return about or tokenize(text)


def _motivation(idea: list[_IdeaSentence], options: list[list[_Candidate]]) -> int | None:
    """The idea's sentence that ends the section by motivating the idea, as the writer's prompt
    asks: the idea's first statement of what it does ("We propose X", or else "X is
    proposed"); in an idea of several sentences without one, the sentence closest to the
    references (the largest sum of TF-IDF cosines with their sentences), where the idea meets
    them. None for an idea of one sentence that states no work (a query), which would only be
    repeated."""
    statement = _statement(idea)
    if statement is not None:
        return statement
    if len(idea) < 2:
        return None
    pool = [list(c.terms) for choices in options for c in choices]
    idea_terms = [sentence.terms for sentence in idea]
    closeness = tfidf_cosines(idea_terms + pool, idea_terms)[:, len(idea) :].sum(axis=1)
    return int(closeness.argmax())


def _room_for_the_references(
    inputs: RelatedWorkInput, options: list[list[_Candidate]], idea: list[_IdeaSentence]
) -> tuple[int | None, RelatedWorkInput]:
    """The idea's motivating sentence, when the section has room for it, and the sentences and
    words it leaves the references: the motivation is written only when they keep the words of
    a typical sentence and two sentences (one quoting, one naming the others)."""
    motivation = _motivation(idea, options)
    if motivation is None or inputs.sentences < 3:
        return None, inputs
    words_left = inputs.words - idea[motivation].words
    if words_left < _typical_words(options):
        return None, inputs
    return motivation, inputs.model_copy(
        update={"words": words_left, "sentences": inputs.sentences - 1}
    )


def _in_reading_order(written: list[_Candidate]) -> list[_Candidate]:
    """Each reference's sentences together, in its abstract's order, and the references in a
    chain of likeness, as a person groups works on one theme: the most relevant first, then
    each followed by the one still to place whose sentences are most like its own (TF-IDF
    cosine of their terms)."""
    by_reference: dict[int, list[_Candidate]] = {}
    for candidate in sorted(written, key=lambda c: (c.reference, c.position)):
        by_reference.setdefault(candidate.reference, []).append(candidate)
    groups = list(by_reference.values())
    if not groups:
        return []
    terms = [sorted(set().union(*(c.terms for c in group))) for group in groups]
    likeness = tfidf_cosines(terms, terms)
    chain = [0]
    while len(chain) < len(groups):
        last = chain[-1]
        rest = [i for i in range(len(groups)) if i not in chain]
        chain.append(max(rest, key=lambda i: likeness[last, i]))
    return [c for i in chain for c in groups[i]]


def offline_related_work(inputs: RelatedWorkInput) -> RelatedWorkReply:
    """A section of the references' own sentences, within N sentences and W words where it can
    be: a sentence each for the references with room for one, best-scored first (the rest
    named in a listing sentence), then further sentences; each reference's sentences together,
    in its abstract's order, the quoted references the most relevant first and then by
    likeness (`_in_reading_order`). It ends with the
    idea's sentence motivating it where there is room; words the references leave stay unused
    (the idea is not repeated back to its author)."""
    if not inputs.references:
        return RelatedWorkReply(text="")
    idea = _idea_sentences(inputs.idea)
    options = _candidates(inputs, idea)
    motivation, room = _room_for_the_references(inputs, options, idea)
    chosen, listing = _coverage(options, room)
    if motivation is not None and not chosen:
        # The idea's sentence never takes the place of every reference's.
        motivation, room = None, inputs
        chosen, listing = _coverage(options, room)
    if chosen:
        chosen, listing = _named_quoted(chosen, options, room)
    used = sum(c.words for c in chosen) + count_words(listing)
    sentences_left = room.sentences - len(chosen) - (1 if listing else 0)
    written = _filled(chosen, options, room.words - used, sentences_left) if chosen else []
    parts = [c.text for c in _in_reading_order(written)]
    if listing:
        parts.append(listing)
    if motivation is not None:
        parts.append(idea[motivation].text)
    return RelatedWorkReply(text=" ".join(parts))
