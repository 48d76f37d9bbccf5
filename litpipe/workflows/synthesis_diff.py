"""What changed between two versions of a collection's synthesis (and the relationship
analyses they were written from): papers added and removed, sentences added and removed with
their citations, claims whose support changed, and relationships that appeared or went,
contradictions first. Pure: it reads nothing and writes nothing.

Sentences are the synthesis text's own (`litpipe.text.cited_sentences` over its Markdown
blocks, headings aside), compared without their citation markers, whitespace and case. A
sentence only reworded counts as kept. The rule (`same_claim`), deterministic:

1. the same words (markers aside) are the same sentence, whatever it cites;
2. otherwise two sentences are one claim reworded when they cite a paper in common (or
   neither cites any) and either their words differ by one word (one replaced, added or
   removed), or the similarity of their word sequences (`difflib.SequenceMatcher`'s ratio,
   2 * matched words / all words) is at least `REWORDED_SIMILARITY` (0.6).

Sentences are matched one to one: identical ones first, in order; then each new sentence
with the unmatched old one of highest similarity that passes the rule (the earliest of
equals). A kept sentence whose cited papers changed is a claim whose support changed.

A paper retracted between the two versions is listed with each sentence of the older version
that cited it and what took its place: the same sentence kept (matched as above) now citing
other papers only; else the added sentence closest to it (the highest word-sequence similarity,
at least `REPLACED_SIMILARITY`, 0.35, each added sentence given once, the earliest of equals);
else nothing.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from litpipe.schemas import Insight, LeftOutPaper, Relationship, RelationshipAnalysis, Synthesis
from litpipe.schemas.changes import (
    ClaimEnd,
    DiffSentence,
    RelationshipChange,
    ReplacedSentence,
    RetractionChange,
    SupportChange,
    SynthesisDiff,
)
from litpipe.text import cited_sentences, markdown_blocks, markers_in, strip_markers

REWORDED_SIMILARITY = 0.6
REPLACED_SIMILARITY = 0.35
_WORD = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")


@dataclass
class _Sentence:
    text: str
    words: tuple[str, ...]
    papers: tuple[str, ...]

    @property
    def key(self) -> str:
        return " ".join(self.words)

    def shown(self) -> DiffSentence:
        return DiffSentence(text=self.text, papers=list(self.papers))


def sentence_words(sentence: str) -> tuple[str, ...]:
    """A sentence's words, its citation markers removed, casefolded."""
    return tuple(_WORD.findall(strip_markers(sentence).casefold()))


class _Words(dict[str, tuple[str, ...]]):
    """Each text's words (`sentence_words`), worked out once in a diff: its two versions share
    most of their sentences and insights, and an insight is an end of many relationships."""

    def __missing__(self, text: str) -> tuple[str, ...]:
        self[text] = found = sentence_words(text)
        return found

    def normal(self, text: str) -> str:
        return " ".join(self[text])


def _cited_papers(sentence: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(paper for paper, _page in markers_in(sentence)))


def synthesis_sentences(text: str) -> list[DiffSentence]:
    """The sentences of a synthesis' Markdown (headings aside), each with the papers it cites."""
    return [
        DiffSentence(text=one.text, papers=list(one.papers))
        for one in _sentences_of(text, _Words())
    ]


def _sentences_of(text: str, words_of: _Words) -> list[_Sentence]:
    found = []
    for block in markdown_blocks(text):
        if block.kind == "heading":
            continue
        for item in block.texts:
            for sentence in cited_sentences(item):
                words = words_of[sentence]
                if words:
                    found.append(_Sentence(sentence, words, _cited_papers(sentence)))
    return found


def matched_sentences(
    old_text: str, new_text: str
) -> tuple[list[tuple[DiffSentence, DiffSentence]], list[DiffSentence], list[DiffSentence]]:
    """The sentences of two Markdown texts matched by the module's rule: the pairs (old, new)
    kept, reworded or not, the old sentences removed and the new ones added."""
    words = _Words()
    kept, removed, added = _matched(_sentences_of(old_text, words), _sentences_of(new_text, words))
    return (
        [(before.shown(), after.shown()) for before, after, _reworded in kept],
        [sentence.shown() for sentence in removed],
        [sentence.shown() for sentence in added],
    )


def support_changes(kept: list[tuple[DiffSentence, DiffSentence]]) -> list[SupportChange]:
    """Of the sentences kept (old, new), those whose cited papers changed."""
    return [
        SupportChange(
            before=before.text,
            after=after.text,
            gained=[p for p in after.papers if p not in before.papers],
            lost=[p for p in before.papers if p not in after.papers],
        )
        for before, after in kept
        if set(before.papers) != set(after.papers)
    ]


def _one_word_apart(first: tuple[str, ...], second: tuple[str, ...]) -> bool:
    """Whether one word replaced, added or removed makes `first` into `second`."""
    if len(first) == len(second):
        return sum(a != b for a, b in zip(first, second, strict=True)) <= 1
    shorter, longer = sorted((first, second), key=len)
    if len(longer) - len(shorter) != 1:
        return False
    pairs = enumerate(zip(shorter, longer[: len(shorter)], strict=True))
    cut = next((i for i, (a, b) in pairs if a != b), len(shorter))
    return shorter[cut:] == longer[cut + 1 :]


def similarity(first: Iterable[str], second: Iterable[str]) -> float:
    """`SequenceMatcher`'s ratio of two word sequences: 2 * matched words / all words."""
    return difflib.SequenceMatcher(None, list(first), list(second), autojunk=False).ratio()


def same_claim(first: str, second: str) -> bool:
    """Whether `second` keeps the claim of `first`, only reworded (the module's rule)."""
    return _closeness(_parsed(first), _parsed(second)) is not None


def _parsed(sentence: str) -> _Sentence:
    return _Sentence(sentence, sentence_words(sentence), _cited_papers(sentence))


def _closeness(old: _Sentence, new: _Sentence) -> float | None:
    """How alike two sentences are when they are one claim (the rule), else None."""
    if old.words == new.words:
        return 1.0
    if set(old.papers).isdisjoint(new.papers) and (old.papers or new.papers):
        return None
    if _one_word_apart(old.words, new.words):
        return 1.0
    matcher = difflib.SequenceMatcher(None, old.words, new.words, autojunk=False)
    if matcher.real_quick_ratio() < REWORDED_SIMILARITY:
        return None
    if matcher.quick_ratio() < REWORDED_SIMILARITY:
        return None
    ratio = matcher.ratio()
    return ratio if ratio >= REWORDED_SIMILARITY else None


def _matched(
    old: list[_Sentence], new: list[_Sentence]
) -> tuple[list[tuple[_Sentence, _Sentence, bool]], list[_Sentence], list[_Sentence]]:
    """Pairs (old, new, reworded) kept, the old sentences removed, the new ones added."""
    free_old: dict[str, list[int]] = {}
    for index, sentence in enumerate(old):
        free_old.setdefault(sentence.key, []).append(index)
    taken: set[int] = set()
    pairs: dict[int, tuple[int, bool]] = {}
    unmatched_new = []
    for index, sentence in enumerate(new):
        same = free_old.get(sentence.key)
        if same:
            old_index = same.pop(0)
            taken.add(old_index)
            pairs[index] = (old_index, False)
        else:
            unmatched_new.append(index)
    # Old sentences left, by cited paper ("" for the uncited): the candidates of a new one.
    by_paper: dict[str, list[int]] = {}
    for index, sentence in enumerate(old):
        if index not in taken:
            for paper in sentence.papers or ("",):
                by_paper.setdefault(paper, []).append(index)
    for index in unmatched_new:
        sentence = new[index]
        candidates = sorted(
            {c for paper in sentence.papers or ("",) for c in by_paper.get(paper, [])} - taken
        )
        best: tuple[float, int] | None = None
        for candidate in candidates:
            closeness = _closeness(old[candidate], sentence)
            if closeness is not None and (best is None or closeness > best[0]):
                best = (closeness, candidate)
        if best is not None:
            taken.add(best[1])
            pairs[index] = (best[1], True)
    kept = [(old[o], new[n], reworded) for n, (o, reworded) in sorted(pairs.items())]
    removed = [sentence for index, sentence in enumerate(old) if index not in taken]
    added = [sentence for index, sentence in enumerate(new) if index not in pairs]
    return kept, removed, added


def _claims(analysis: RelationshipAnalysis | None, words: _Words) -> set[tuple[str, str]]:
    if analysis is None:
        return set()
    return {(insight.paper_id, words.normal(insight.text)) for insight in analysis.insights}


_Related = tuple[Relationship, Insight, Insight]


def _relations(
    analysis: RelationshipAnalysis | None, words: _Words
) -> dict[tuple[str, frozenset[tuple[str, str]]], _Related]:
    """The analysis' relationships, with their two insights, by what they relate (their type
    and both claims' papers and words: insight ids are renumbered from one analysis to the
    next)."""
    if analysis is None:
        return {}
    insights = {insight.insight_id: insight for insight in analysis.insights}
    found: dict[tuple[str, frozenset[tuple[str, str]]], _Related] = {}
    for relation in analysis.relationships:
        source, target = insights.get(relation.source), insights.get(relation.target)
        if source is None or target is None:
            continue
        key = (
            relation.type,
            frozenset({(i.paper_id, words.normal(i.text)) for i in (source, target)}),
        )
        found.setdefault(key, (relation, source, target))
    return found


def _change(related: _Related, known: set[tuple[str, str]], words: _Words) -> RelationshipChange:
    relation, source, target = related

    def end(insight: Insight) -> ClaimEnd:
        claim = (insight.paper_id, words.normal(insight.text))
        return ClaimEnd(paper_id=insight.paper_id, text=insight.text, known_before=claim in known)

    return RelationshipChange(
        type=relation.type,
        explanation=relation.explanation,
        source=end(source),
        target=end(target),
    )


def _contradictions_first(changes: Iterable[RelationshipChange]) -> list[RelationshipChange]:
    return sorted(changes, key=lambda change: change.type != "contradiction")


def synthesis_diff(
    collection: str,
    old: tuple[Synthesis, RelationshipAnalysis | None] | None,
    new: tuple[Synthesis, RelationshipAnalysis | None] | None,
    old_version: tuple[str, str] | None = None,
    new_version: tuple[str, str] | None = None,
) -> SynthesisDiff:
    """What changed from `old` (a synthesis and its analysis; None: nothing before) to `new`;
    the versions are (data version, when it was kept)."""
    old_synthesis, old_analysis = old if old is not None else (None, None)
    new_synthesis, new_analysis = new if new is not None else (None, None)
    old_papers = old_synthesis.papers if old_synthesis else []
    new_papers = new_synthesis.papers if new_synthesis else []
    words = _Words()
    old_sentences = _sentences_of(old_synthesis.text, words) if old_synthesis else []
    kept, removed, added = _matched(
        old_sentences, _sentences_of(new_synthesis.text, words) if new_synthesis else []
    )
    support = support_changes([(before.shown(), after.shown()) for before, after, _ in kept])
    known = _claims(old_analysis, words)
    before_relations = _relations(old_analysis, words)
    after_relations = _relations(new_analysis, words)
    appeared = _contradictions_first(
        _change(related, known, words)
        for key, related in after_relations.items()
        if key not in before_relations
    )
    gone = _contradictions_first(
        _change(related, known, words)
        for key, related in before_relations.items()
        if key not in after_relations
    )
    left_before = {paper.paper_id for paper in old_synthesis.left_out} if old_synthesis else set()
    return SynthesisDiff(
        collection=collection,
        from_version=old_version[0] if old_version else None,
        from_recorded_at=old_version[1] if old_version else None,
        to_version=new_version[0] if new_version else None,
        to_recorded_at=new_version[1] if new_version else None,
        papers_added=[p for p in new_papers if p not in old_papers],
        papers_removed=[p for p in old_papers if p not in new_papers],
        sentences_added=[sentence.shown() for sentence in added],
        sentences_removed=[sentence.shown() for sentence in removed],
        reworded=sum(reworded for _before, _after, reworded in kept),
        support_changed=support,
        contradicted=[
            change
            for change in appeared
            if change.type == "contradiction"
            and (change.source.known_before or change.target.known_before)
        ],
        relationships_appeared=appeared,
        relationships_gone=gone,
        theme_before=old_analysis.theme if old_analysis else "",
        theme_after=new_analysis.theme if new_analysis else "",
        left_out={
            paper.paper_id: paper.reason
            for paper in (new_synthesis.left_out if new_synthesis else [])
            if paper.paper_id not in left_before
        },
        retracted=_retractions(
            [
                paper
                for paper in (new_synthesis.left_out if new_synthesis else [])
                if paper.is_retracted and paper.paper_id not in left_before
            ],
            old_sentences,
            kept,
            added,
        ),
    )


def _retractions(
    papers: list[LeftOutPaper],
    old: list[_Sentence],
    kept: list[tuple[_Sentence, _Sentence, bool]],
    added: list[_Sentence],
) -> list[RetractionChange]:
    """Each retracted paper with the sentences of `old` that cited it and what took their
    place (the module's rule)."""
    successors = {id(before): after for before, after, _reworded in kept}
    free = list(added)
    found = []
    for paper in papers:
        sentences = []
        for sentence in (one for one in old if paper.paper_id in one.papers):
            after = successors.get(id(sentence))
            if after is not None:
                sentences.append(
                    ReplacedSentence(before=sentence.shown(), after=after.shown(), how="kept")
                )
                continue
            scored = [(similarity(sentence.words, one.words), -i) for i, one in enumerate(free)]
            best = max(scored, default=(0.0, 0))
            if best[0] >= REPLACED_SIMILARITY:
                replacement = free.pop(-best[1])
                sentences.append(
                    ReplacedSentence(
                        before=sentence.shown(), after=replacement.shown(), how="replaced"
                    )
                )
            else:
                sentences.append(ReplacedSentence(before=sentence.shown(), how="removed"))
        found.append(
            RetractionChange(paper_id=paper.paper_id, reason=paper.reason, sentences=sentences)
        )
    return found
