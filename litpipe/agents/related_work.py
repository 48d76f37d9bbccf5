"""The `related_work` agent (LitLLM's writer): a related-work section for a research idea from
the top-k references, each with its debate verdict, citing them as `[id]`.

Citations here are the reference table's ids in square brackets (`[abc]`, several as
`[abc; def]`), not the `[paper_id:page]` markers of `litpipe.citations`: a related-work section
cites whole references. Every square bracket of a section is read as a citation (the prompt keeps
brackets for citations only), so a bracket that names no supplied reference is an invented one.

Whatever wrote it, a section is held to three rules, checked by `review`:
- it cites only the references it was given;
- it cites every one of them;
- it has at most N sentences and W words (citations are not words).
A model's section that breaks any gets one revision request naming each problem. What remains
is then fixed without a model, each fix logged and recorded: invented citations are removed; a
reference still uncited gets a sentence of its own, its abstract's sentence closest to the idea;
a section still too long loses whole sentences (never one that is the only citation of a
reference, the closing one last, as it usually motivates the idea). Sentences are never cut in
the middle; a section that still does not fit is kept, with a warning, and is marked as such.

The offline engine is extractive: each reference's abstract sentence closest to the idea (by
shared terms; a sentence the debate quoted wins a tie), cited, in the order of the debate's
probabilities. When N is smaller than k, the least relevant references share the last sentence,
of fixed words listing their titles ("Also related are "A" [a] and "B" [b]."), so each is cited;
when N is larger, further sentences closest to the idea and unlike those chosen (MMR) fill it.
Past W words, the longest sentence gives way to a shorter one of its abstract, then to its
title, then to its bare citation.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from litpipe.agents.base import Agent, StructuredClient
from litpipe.agents.extractive import overlap, sentences
from litpipe.agents.paper_summary import MAX_REDUNDANCY, MIN_SENTENCE_TERMS, MMR_LAMBDA, cite
from litpipe.llm.prompts import PromptLibrary, fence
from litpipe.retrieval.text import tokenize
from litpipe.schemas import ScoredReference
from litpipe.settings import Settings

log = logging.getLogger(__name__)

# A bracket not followed by "(" (a Markdown link is not a citation), on one line.
_BRACKET = re.compile(r"\[([^\[\]\n]{1,200})\](?!\()")
_ID_SEPARATOR = re.compile(r"\s*[;,]\s*")
# Characters an id cannot hold and still be cited and parsed back.
UNCITABLE_ID_CHARACTERS = "[];,\n\r"
_WORD = re.compile(r"[^\W_]")
_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t].*$", re.M)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_TERMINAL = re.compile(r"[.!?][\"'\u201d\u2019)]*$")

# The fixed words of the offline engine's sentences that are not an abstract's own.
ALSO_RELATED = "Also related are"
CLOSELY_RELATED = "Closely related is"

REVISION_REQUEST = (
    "Your section cannot be used as it is: {problems}. Write it again, fixing all of this, and "
    "reply with only the JSON object."
)


class RelatedWorkInput(BaseModel):
    idea: str
    references: list[ScoredReference] = Field(description="The top-k, most relevant first.")
    sentences: int = Field(ge=1, description="At most this many sentences (N).")
    words: int = Field(ge=1, description="At most this many words, citations not counted (W).")

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
    for paragraph in _PARAGRAPH_BREAK.split(text.strip()):
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


@dataclass
class Review:
    """What a section breaks of the three rules."""

    unknown: list[str]
    missing: list[str]
    sentences: int
    words: int
    max_sentences: int
    max_words: int

    @property
    def within_length(self) -> bool:
        return self.sentences <= self.max_sentences and self.words <= self.max_words

    @property
    def ok(self) -> bool:
        return not self.unknown and not self.missing and self.within_length

    def problems(self, supplied: list[str]) -> list[str]:
        found = []
        if self.unknown:
            found.append(
                f"it cites {', '.join(citation([i]) for i in self.unknown)}, which "
                f"{'is' if len(self.unknown) == 1 else 'are'} not among the references given "
                f"(cite only {', '.join(citation([i]) for i in supplied)})"
            )
        if self.missing:
            found.append(
                f"it does not cite {', '.join(citation([i]) for i in self.missing)} (cite every "
                "reference given at least once)"
            )
        if self.sentences > self.max_sentences:
            found.append(f"it has {self.sentences} sentences, more than {self.max_sentences}")
        if self.words > self.max_words:
            found.append(
                f"it has {self.words} words (citations not counted), more than {self.max_words}"
            )
        return found


def review(text: str, supplied: list[str], max_sentences: int, max_words: int) -> Review:
    cited = cited_ids(text)
    return Review(
        unknown=[i for i in cited if i not in supplied],
        missing=[i for i in supplied if i not in cited],
        sentences=count_sentences(text),
        words=count_words(text),
        max_sentences=max_sentences,
        max_words=max_words,
    )


# The offline engine.


def _quotable(sentence: str) -> str:
    """An abstract's sentence on one line, its square brackets made round: in a section, every
    square bracket is a citation ("values in [0, 1]" would cite `0` and `1`)."""
    return " ".join(sentence.split()).replace("[", "(").replace("]", ")")


def _ending(sentence: str) -> str:
    return sentence if _TERMINAL.search(sentence) else f"{sentence}."


def cited_sentence(sentence: str, ids: list[str]) -> str:
    """The sentence with its citation before its closing full stop ("... works [a]."), always
    ending as a sentence."""
    return _ending(cite(_quotable(sentence), citation(ids)))


def _quoted_title(title: str) -> str:
    return f'"{_quotable(title).rstrip(".")}"'


def _listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _terms(text: str) -> set[str]:
    return set(tokenize(text))


@dataclass
class _Choice:
    """One sentence of the offline section: the references it cites and its options, best
    first; `at` is the option in use."""

    references: list[ScoredReference]
    options: list[str]
    at: int = 0
    extras: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.options[self.at]

    def shorter(self) -> bool:
        """Move to the best option shorter than the current one; False when there is none."""
        words = count_words(self.text)
        for index in range(self.at + 1, len(self.options)):
            if count_words(self.options[index]) < words:
                self.at = index
                return True
        return False


def ranked_sentences(scored: ScoredReference, idea_terms: set[str]) -> list[str]:
    """The abstract's sentences (fragments left out) closest to the idea first: by shared
    terms, then quoted by the debate, then in the abstract's order."""
    quotes = [" ".join(quote.split()) for quote in scored.verdict.quotes]
    spans = [" ".join(span.text.split()) for span in sentences(scored.reference.abstract)]
    usable = [s for s in spans if len(tokenize(s)) >= MIN_SENTENCE_TERMS] or spans

    def quoted(sentence: str) -> bool:
        return any(quote and (quote in sentence or sentence in quote) for quote in quotes)

    order = sorted(
        range(len(usable)),
        key=lambda i: (-overlap(_terms(usable[i]), idea_terms), not quoted(usable[i]), i),
    )
    return [usable[i] for i in order]


def _groups(count: int, sentences_at_most: int) -> list[list[int]]:
    """`count` references (most relevant first) in at most `sentences_at_most` groups, in order:
    one each while there are sentences to spare, the rest together in the last; the most
    relevant references keep a sentence of their own, the least share one that lists them."""
    if count <= sentences_at_most:
        return [[index] for index in range(count)]
    singles = sentences_at_most - 1
    return [*([index] for index in range(singles)), list(range(singles, count))]


def _choice(group: list[ScoredReference], idea_terms: set[str]) -> _Choice:
    ids = [scored.reference.id for scored in group]
    if len(group) == 1:
        scored = group[0]
        options = [cited_sentence(s, ids) for s in ranked_sentences(scored, idea_terms)]
        options.append(
            f"{CLOSELY_RELATED} {_quoted_title(scored.reference.title)} {citation(ids)}."
        )
    else:
        titled = [f"{_quoted_title(s.reference.title)} {citation([s.reference.id])}" for s in group]
        options = [
            f"{ALSO_RELATED} {_listing(titled)}.",
            f"{ALSO_RELATED} {_listing([citation([i]) for i in ids])}.",
        ]
    return _Choice(references=group, options=options)


def _words(choices: list[_Choice]) -> int:
    return sum(count_words(c.text) + sum(count_words(e) for e in c.extras) for c in choices)


def _fit_words(choices: list[_Choice], max_words: int) -> list[_Choice]:
    """The longest sentence gives way to a shorter option until the section fits; if none is
    left, one sentence citing every reference."""
    while _words(choices) > max_words:
        for choice in sorted(choices, key=lambda c: -count_words(c.text)):
            if choice.shorter():
                break
        else:
            everyone = [scored for choice in choices for scored in choice.references]
            ids = [citation([scored.reference.id]) for scored in everyone]
            return [_Choice(references=everyone, options=[f"{ALSO_RELATED} {_listing(ids)}."])]
    return choices


def _add_extras(
    choices: list[_Choice], idea_terms: set[str], max_sentences: int, max_words: int
) -> None:
    """Fill the sentences left with the single references' other sentences, by MMR: close to the
    idea, unlike what is chosen, within the words left; each after its reference's own."""
    pool = [
        (choice, sentence, _terms(sentence))
        for choice in choices
        if len(choice.references) == 1 and choice.at < len(choice.options) - 1
        for sentence in ranked_sentences(choice.references[0], idea_terms)
        if cited_sentence(sentence, [choice.references[0].reference.id]) != choice.text
    ]
    chosen_terms = [_terms(choice.text) for choice in choices]
    sentences_left = max_sentences - len(choices)
    while sentences_left > 0 and pool:
        words_left = max_words - _words(choices)
        best: tuple[float, int] | None = None
        for index, (_, sentence, terms) in enumerate(pool):
            relevance = overlap(terms, idea_terms)
            redundancy = max((overlap(terms, other) for other in chosen_terms), default=0.0)
            if relevance <= 0 or redundancy >= MAX_REDUNDANCY:
                continue
            if count_words(sentence) > words_left:
                continue
            score = MMR_LAMBDA * relevance - (1 - MMR_LAMBDA) * redundancy
            if best is None or score > best[0]:
                best = (score, index)
        if best is None:
            return
        choice, sentence, terms = pool.pop(best[1])
        choice.extras.append(cited_sentence(sentence, [choice.references[0].reference.id]))
        chosen_terms.append(terms)
        sentences_left -= 1


def offline_related_work(inputs: RelatedWorkInput) -> RelatedWorkReply:
    """One sentence per reference (or per group of references when N < k), most relevant
    first, within W words where it can be; then further sentences up to N."""
    if not inputs.references:
        return RelatedWorkReply(text="")
    idea_terms = _terms(inputs.idea)
    choices = [
        _choice([inputs.references[i] for i in group], idea_terms)
        for group in _groups(len(inputs.references), inputs.sentences)
    ]
    choices = _fit_words(choices, inputs.words)
    _add_extras(choices, idea_terms, inputs.sentences, inputs.words)
    return RelatedWorkReply(text=" ".join(s for c in choices for s in (c.text, *c.extras)))


# The agent, and the checks and fixes every section goes through.


def reference_block(scored: ScoredReference) -> str:
    """One reference as the writer sees it: its id and probability, its title and abstract
    (fenced as paper text), the debate's arguments and quotes (fenced too: they quote it)."""
    verdict = scored.verdict
    debate = [
        *(f"For: {argument}" for argument in verdict.arguments_for),
        *(f"Against: {argument}" for argument in verdict.arguments_against),
        *(f'Quote: "{" ".join(quote.split())}"' for quote in verdict.quotes),
    ]
    reference = scored.reference
    return (
        f"### Reference {citation([reference.id])}: relevance {verdict.probability}/100\n"
        + fence(f"Title: {' '.join(reference.title.split())}\n\n{reference.abstract.strip()}")
        + "\nDebate of its relevance:\n"
        + fence("\n".join(debate) or "(no arguments)", "debate")
    )


class RelatedWorkAgent(Agent[RelatedWorkInput, RelatedWorkReply]):
    name = "related_work"
    reply_schema = RelatedWorkReply

    def messages(self, inputs: RelatedWorkInput, prompts: PromptLibrary) -> list[dict[str, str]]:
        return prompts.render(
            self.name,
            idea=fence(inputs.idea, "idea"),
            ids=", ".join(citation([i]) for i in inputs.ids),
            references="\n\n".join(reference_block(scored) for scored in inputs.references),
            sentences=str(inputs.sentences),
            words=str(inputs.words),
        )

    def offline(self, inputs: RelatedWorkInput) -> RelatedWorkReply:
        return offline_related_work(inputs)


class WrittenSection(BaseModel):
    """The section as kept, and what was done to it to keep the rules."""

    text: str
    cited_ids: list[str]
    sentences: int
    words: int
    within_length: bool
    revised: bool = False
    dropped_citations: list[str] = Field(default_factory=list)
    added_citations: list[str] = Field(default_factory=list)
    trimmed_sentences: int = 0
    warnings: list[str] = Field(default_factory=list)


def _plain(text: str) -> str:
    """The section without Markdown heading lines: the document around it has its own."""
    return _PARAGRAPH_BREAK.sub("\n\n", _HEADING.sub("", text)).strip()


def _with_missing(text: str, inputs: RelatedWorkInput, missing: list[str]) -> tuple[str, list[str]]:
    """A sentence for each reference left uncited, its abstract's sentence closest to the idea,
    placed before the closing sentence when that one cites nothing (it motivates the idea)."""
    idea_terms = _terms(inputs.idea)
    by_id = {scored.reference.id: scored for scored in inputs.references}
    added = [_choice([by_id[i]], idea_terms).text for i in missing]
    parts = paragraphs(text) or [[]]
    last = parts[-1]
    if last and not cited_ids(last[-1]):
        last[-1:-1] = added
    else:
        last.extend(added)
    return joined(parts), added


def _trimmed(text: str, inputs: RelatedWorkInput) -> tuple[str, int]:
    """Whole sentences removed until the section fits: from the end, the closing sentence
    last, never one holding the only citation of a reference."""
    parts = paragraphs(text)
    places = [(p, s) for p, paragraph in enumerate(parts) for s in range(len(paragraph))]
    order = [*reversed(places[:-1]), *places[-1:]]
    removed: set[tuple[int, int]] = set()

    def kept_text() -> str:
        return joined(
            [
                [s for i, s in enumerate(paragraph) if (p, i) not in removed]
                for p, paragraph in enumerate(parts)
            ]
        )

    for place in order:
        current = kept_text()
        if review(current, inputs.ids, inputs.sentences, inputs.words).within_length:
            break
        removed.add(place)
        if review(kept_text(), inputs.ids, inputs.sentences, inputs.words).missing:
            removed.discard(place)
    return kept_text(), len(removed)


def settle(
    text: str, inputs: RelatedWorkInput, writer: str, revised: bool = False
) -> WrittenSection:
    """The section made to keep the rules without a model: invented citations removed, missing
    references added, whole sentences trimmed to the length; each fix logged and recorded."""
    warnings: list[str] = []

    def warn(message: str) -> None:
        log.warning("%s: %s", writer, message)
        warnings.append(message)

    text = _plain(text)
    found = review(text, inputs.ids, inputs.sentences, inputs.words)
    if found.unknown:
        warn(f"removed citations of ids not supplied: {', '.join(found.unknown)}")
        text = without_citations(text, found.unknown)
    added: list[str] = []
    if found.missing:
        text, sentences_added = _with_missing(text, inputs, found.missing)
        added = found.missing
        warn(
            f"references {', '.join(added)} were uncited; added a sentence from each abstract "
            f"({' '.join(sentences_added)})"
        )
    trimmed = 0
    if not review(text, inputs.ids, inputs.sentences, inputs.words).within_length:
        text, trimmed = _trimmed(text, inputs)
        if trimmed:
            warn(f"removed {trimmed} sentence(s) to meet the length")
    final = review(text, inputs.ids, inputs.sentences, inputs.words)
    if not final.within_length:
        warn(
            f"the section has {final.sentences} sentences and {final.words} words, more than "
            f"the {inputs.sentences} sentences and {inputs.words} words asked: every reference "
            "must be cited, and sentences are not cut in the middle"
        )
    return WrittenSection(
        text=text,
        cited_ids=cited_ids(text),
        sentences=final.sentences,
        words=final.words,
        within_length=final.within_length,
        revised=revised,
        dropped_citations=found.unknown,
        added_citations=added,
        trimmed_sentences=trimmed,
        warnings=warnings,
    )


def write_section(
    inputs: RelatedWorkInput,
    settings: Settings,
    prompts: PromptLibrary,
    client: StructuredClient | None,
) -> WrittenSection:
    """The section for `inputs`: from the offline engine, or from the model with one revision
    request when its first reply breaks a rule; then `settle`d either way."""
    agent = RelatedWorkAgent()
    route = settings.route(agent.name)
    if route.offline:
        return settle(agent.offline(inputs).text, inputs, "related_work (offline)")
    if client is None:
        raise ValueError(
            f"agent {agent.name!r} is routed to model {route.model!r} but no LLM client was given"
        )
    messages = agent.messages(inputs, prompts)
    reply = client.complete_sync(route, messages, RelatedWorkReply)
    first = review(_plain(reply.text), inputs.ids, inputs.sentences, inputs.words)
    if first.ok:
        return settle(reply.text, inputs, f"related_work ({route.model})")
    problems = "; ".join(first.problems(inputs.ids))
    log.warning("related_work (%s): asking for one revision: %s", route.model, problems)
    revision = [
        *messages,
        {"role": "assistant", "content": reply.model_dump_json()},
        {"role": "user", "content": REVISION_REQUEST.format(problems=problems)},
    ]
    revised = client.complete_sync(route, revision, RelatedWorkReply)
    return settle(revised.text, inputs, f"related_work ({route.model})", revised=True)
