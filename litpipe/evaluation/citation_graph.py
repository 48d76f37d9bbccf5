"""The citation graph against a hand-checked set: which paper each reference-list entry names
(edge matching), whether each marker is linked to the right entry (marker linking), and what each
citing sentence says of the work it cites (context classification).

The set (`litpipe_tests/data/citation_eval/`, its README says how it was made) has three files:

- `collection.jsonl`: papers written from a reading of the entries that cite them, as a
  library would hold them (`SetPaper`), and hard negatives, papers no entry names;
- `references.jsonl`: entries of the nine bundled papers' lists (`LabelledEntry`), each with the
  paper of the collection it names, or none;
- `contexts.jsonl`: citation contexts of those papers (`LabelledContext`), each with its intent
  as read by hand and whether its marker was linked to the right entry.

Edge matching runs `workflows.citation_graph.citation_graph` over the nine papers' references
and the set's papers (each a paper with no reference list of its own). An entry's outcome:

- a match to a right paper counts for precision and recall;
- a match to any other paper counts against precision, and, if the entry names a paper of the
  collection, against recall too (the right one was not found);
- no match (an ambiguous entry is left unmatched) counts against recall if the entry names a
  paper of the collection, and nothing otherwise.

By rule, precision counts the matches each rule made; recall the entries whose shared
identifier (`expected_rule`: a DOI on both sides, else an arXiv id, else title and year) is the
rule's, however they were found.

Context classification compares the engine's labels with the hand labels on the sample, and
estimates them over all the contexts: the sample took every context of the rare labels the
engine gives and a random share of the others, so each sampled context stands for the contexts
of its engine label (`population / sampled` of that label).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from litpipe.evaluation.datasets import json_lines
from litpipe.schemas import (
    CITATION_INTENT_LABELS,
    CitationContext,
    CitationIntentLabel,
    CollectionPaper,
    MatchRule,
    PaperReferences,
)
from litpipe.workflows.citation_graph import citation_graph

MATCH_RULES: tuple[MatchRule, ...] = ("doi", "arxiv", "title_year")


class SetPaper(CollectionPaper):
    """A paper of the set's collection."""

    variation: str = Field(default="", description="How its metadata differs from the entry's.")
    hard_negative: str = Field(default="", description="Why no entry may match it; '' if one does.")


class LabelledEntry(BaseModel):
    """A reference-list entry of a bundled paper, with the paper of the collection it names."""

    paper: str = Field(description="The citing bundled paper (its file's stem).")
    reference_index: int
    raw_start: str = Field(description="The entry's first characters, as the parser reads it.")
    expected: str | None = Field(description="The paper it names; None if none of the set's.")
    also_right: list[str] = Field(
        default_factory=list, description="Other papers that are the same work (duplicates)."
    )
    expected_rule: MatchRule | None = Field(
        default=None, description="The strongest identifier the entry and its paper share."
    )
    note: str = ""

    @property
    def right(self) -> set[str]:
        return {self.expected, *self.also_right} if self.expected else set()


class LabelledContext(BaseModel):
    """A citation context of a bundled paper, labelled by hand."""

    paper: str
    marker_start: int
    reference_index: int = Field(description="The entry the engine linked the marker to.")
    marker: str
    section: str = ""
    sentence: str
    label: CitationIntentLabel | None = Field(description="None where the marker cites nothing.")
    unsure: bool = Field(default=False, description="The reader found two labels defensible.")
    linked: Literal["right", "wrong", "not_a_citation"]
    note: str = ""

    @property
    def key(self) -> tuple[str, int, int]:
        return self.paper, self.marker_start, self.reference_index


class CitationSet(BaseModel):
    collection: list[SetPaper]
    entries: list[LabelledEntry]
    contexts: list[LabelledContext]


def read_set(folder: Path) -> CitationSet:
    """The set's three files; a bad line raises `ValueError` naming its file and line."""
    return CitationSet(
        collection=[paper for _, paper in json_lines(folder / "collection.jsonl", SetPaper)],
        entries=[entry for _, entry in json_lines(folder / "references.jsonl", LabelledEntry)],
        contexts=[context for _, context in json_lines(folder / "contexts.jsonl", LabelledContext)],
    )


class PrecisionRecall(BaseModel):
    correct: int
    predicted: int = Field(description="What precision rests on.")
    expected: int = Field(description="What recall rests on.")
    precision: float | None = Field(description="None when nothing was predicted.")
    recall: float | None = Field(description="None when nothing was expected.")
    f1: float | None


def precision_recall(correct: int, predicted: int, expected: int) -> PrecisionRecall:
    """The share of `correct` among `predicted` and among `expected`, and their F1."""
    precision = correct / predicted if predicted else None
    recall = correct / expected if expected else None
    f1 = None
    if precision is not None and recall is not None:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return PrecisionRecall(
        correct=correct,
        predicted=predicted,
        expected=expected,
        precision=precision,
        recall=recall,
        f1=f1,
    )


class EntryOutcome(BaseModel):
    """One labelled entry and what the engine matched it to."""

    entry: LabelledEntry
    matched: str | None = None
    rule: MatchRule | None = None
    note: str = Field(default="", description="The engine's why, for an entry it left unmatched.")

    @property
    def correct(self) -> bool:
        return self.matched is not None and self.matched in self.entry.right


class RuleScores(BaseModel):
    """One rule: precision of the matches it made, recall of the entries sharing its identifier
    (found by any rule), and their F1."""

    matched: int = Field(description="Matches the rule made: what precision rests on.")
    matched_right: int
    precision: float | None
    expected: int = Field(description="Entries sharing the rule's identifier: recall rests on.")
    found: int = Field(description="Of those, matched to a right paper by any rule.")
    recall: float | None
    f1: float | None


class MatchScores(BaseModel):
    overall: PrecisionRecall
    by_rule: dict[MatchRule, RuleScores]
    entries: int
    naming_a_paper: int


def match_scores(outcomes: Iterable[EntryOutcome]) -> MatchScores:
    """Edge matching's precision, recall and F1 over the labelled entries, and by rule."""
    found = list(outcomes)
    by_rule = {}
    for rule in MATCH_RULES:
        made = [o for o in found if o.rule == rule]
        expected = [o for o in found if o.entry.expected_rule == rule]
        figures = precision_recall(
            correct=sum(o.correct for o in made), predicted=len(made), expected=len(expected)
        )
        recall = sum(o.correct for o in expected) / len(expected) if expected else None
        f1 = None
        if figures.precision is not None and recall is not None:
            total = figures.precision + recall
            f1 = 2 * figures.precision * recall / total if total else 0.0
        by_rule[rule] = RuleScores(
            matched=len(made),
            matched_right=figures.correct,
            precision=figures.precision,
            expected=len(expected),
            found=sum(o.correct for o in expected),
            recall=recall,
            f1=f1,
        )
    named = sum(o.entry.expected is not None for o in found)
    return MatchScores(
        overall=precision_recall(
            correct=sum(o.correct for o in found),
            predicted=sum(o.matched is not None for o in found),
            expected=named,
        ),
        by_rule=by_rule,
        entries=len(found),
        naming_a_paper=named,
    )


class LabelScores(BaseModel):
    precision: float | None
    recall: float | None
    f1: float | None
    support: int = Field(description="Hand-labelled contexts of this label in the sample.")
    predicted: int = Field(description="Contexts of the sample the engine gave this label.")


class ClassificationScores(BaseModel):
    labels: dict[CitationIntentLabel, LabelScores]
    macro_f1: float | None = Field(
        description="Mean F1 over the labels with a defined F1 (some support or prediction)."
    )
    accuracy: float | None
    contexts: int = Field(description="Contexts scored (those citing something).")
    confusion: dict[CitationIntentLabel, dict[CitationIntentLabel, float]] = Field(
        description="confusion[hand label][engine label]: contexts, or estimated contexts."
    )


def classification_scores(
    pairs: Iterable[tuple[CitationIntentLabel, CitationIntentLabel]],
    weights: Mapping[CitationIntentLabel, float] | None = None,
) -> ClassificationScores:
    """Per-label precision, recall and F1, their macro mean, accuracy and the confusion matrix
    of (hand label, engine label) pairs; each pair counting `weights[engine label]` (default
    1), so that a stratified sample's pairs estimate the whole. Support and predicted stay
    counts of the sample."""
    found = list(pairs)
    weight = weights or {}
    confusion: dict[CitationIntentLabel, dict[CitationIntentLabel, float]] = {
        gold: dict.fromkeys(CITATION_INTENT_LABELS, 0.0) for gold in CITATION_INTENT_LABELS
    }
    for gold, predicted in found:
        confusion[gold][predicted] += weight.get(predicted, 1.0)
    support = Counter(gold for gold, _ in found)
    predictions = Counter(predicted for _, predicted in found)
    labels = {}
    for label in CITATION_INTENT_LABELS:
        right = confusion[label][label]
        predicted_weight = sum(confusion[gold][label] for gold in CITATION_INTENT_LABELS)
        expected_weight = sum(confusion[label].values())
        precision = right / predicted_weight if predicted_weight else None
        recall = right / expected_weight if expected_weight else None
        f1 = None
        if precision is not None or recall is not None:
            p, r = precision or 0.0, recall or 0.0
            f1 = 2 * p * r / (p + r) if p + r else 0.0
        labels[label] = LabelScores(
            precision=precision,
            recall=recall,
            f1=f1,
            support=support[label],
            predicted=predictions[label],
        )
    defined = [scores.f1 for scores in labels.values() if scores.f1 is not None]
    total = sum(sum(row.values()) for row in confusion.values())
    return ClassificationScores(
        labels=labels,
        macro_f1=sum(defined) / len(defined) if defined else None,
        accuracy=sum(confusion[label][label] for label in CITATION_INTENT_LABELS) / total
        if total
        else None,
        contexts=len(found),
        confusion=confusion,
    )


def misalignments(labelled: CitationSet, references: Mapping[str, PaperReferences]) -> list[str]:
    """Where the set no longer lines up with what the parser reads of the bundled papers: an
    entry that is not at its index, a context not found, a paper id the collection lacks."""
    problems = []
    ids = {paper.paper_id for paper in labelled.collection}
    if len(ids) < len(labelled.collection):
        problems.append("collection.jsonl: a paper id given twice")
    for entry in labelled.entries:
        records = references[entry.paper].records if entry.paper in references else []
        if entry.reference_index >= len(records):
            problems.append(f"{entry.paper} entry {entry.reference_index}: no such entry")
        elif not records[entry.reference_index].raw.startswith(entry.raw_start):
            problems.append(
                f"{entry.paper} entry {entry.reference_index}: reads "
                f"{records[entry.reference_index].raw[:40]!r}, not {entry.raw_start[:40]!r}"
            )
        problems.extend(
            f"{entry.paper} entry {entry.reference_index}: {paper_id} is not in the collection"
            for paper_id in sorted(entry.right - ids)
        )
    found = {_key(paper_id, c) for paper_id, paper in references.items() for c in paper.contexts}
    problems.extend(
        f"{context.paper}: no context of entry {context.reference_index} at offset "
        f"{context.marker_start} ({context.marker})"
        for context in labelled.contexts
        if context.key not in found
    )
    return problems


class LinkingPrecision(BaseModel):
    """The sampled contexts whose marker was linked to the entry it cites."""

    right: int
    wrong: int = Field(description="Linked to another entry than the one it cites.")
    not_a_citation: int = Field(description="Markers that cite nothing (an allele's name).")
    precision: float | None


def linking_precision(contexts: Iterable[LabelledContext]) -> LinkingPrecision:
    verdicts = Counter(context.linked for context in contexts)
    total = sum(verdicts.values())
    return LinkingPrecision(
        right=verdicts["right"],
        wrong=verdicts["wrong"],
        not_a_citation=verdicts["not_a_citation"],
        precision=verdicts["right"] / total if total else None,
    )


class MatchedUnlabelled(BaseModel):
    """A match the set cannot judge: an entry of the nine lists it does not label."""

    paper: str
    reference_index: int
    matched: str
    raw: str


class CitationGraphEvaluation(BaseModel):
    matching: MatchScores
    outcomes: list[EntryOutcome]
    unlabelled_matches: list[MatchedUnlabelled] = Field(
        description="Matches of entries the set does not label: neither right nor wrong here."
    )
    linking: LinkingPrecision
    classification_sample: ClassificationScores
    classification_estimated: ClassificationScores = Field(
        description="Over all contexts: each sampled one weighted by its engine label's share."
    )
    accuracy_sure: float | None = Field(description="Accuracy on the contexts labelled sure.")
    sure_contexts: int
    contexts_by_engine_label: dict[CitationIntentLabel, int] = Field(
        description="All contexts of the papers, by the engine's label (the strata)."
    )
    sampled_by_engine_label: dict[CitationIntentLabel, int]


def evaluate_citation_graph(
    labelled: CitationSet, references: Mapping[str, PaperReferences]
) -> CitationGraphEvaluation:
    """The engine's graph and intents over the bundled papers' `references` (by paper id, as
    `paper_references` built them) scored against the set; a `ValueError` listing where the
    set no longer lines up with them."""
    if problems := misalignments(labelled, references):
        raise ValueError("the set does not line up with the parsed papers:\n" + "\n".join(problems))
    collection = {
        paper.paper_id: PaperReferences(
            paper=CollectionPaper.model_validate(
                paper.model_dump(include=set(CollectionPaper.model_fields))
            )
        )
        for paper in labelled.collection
    }
    graph = citation_graph("citation_eval", {**references, **collection})
    edges = {(edge.citing, edge.reference_index): edge for edge in graph.edges}
    notes = {(item.paper_id, item.reference_index): item.note for item in graph.ambiguous}
    outcomes = []
    for entry in labelled.entries:
        edge = edges.pop((entry.paper, entry.reference_index), None)
        outcomes.append(
            EntryOutcome(
                entry=entry,
                matched=edge.cited if edge else None,
                rule=edge.rule if edge else None,
                note=notes.get((entry.paper, entry.reference_index), ""),
            )
        )
    unlabelled = [
        MatchedUnlabelled(
            paper=edge.citing,
            reference_index=edge.reference_index,
            matched=edge.cited,
            raw=references[edge.citing].records[edge.reference_index].raw,
        )
        for edge in edges.values()
    ]
    contexts = {
        _key(paper_id, context): context
        for paper_id, paper in references.items()
        for context in paper.contexts
    }
    population = Counter(_engine_label(context) for context in contexts.values())
    sampled = Counter(_engine_label(contexts[item.key]) for item in labelled.contexts)
    weights = {label: population[label] / count for label, count in sampled.items()}
    pairs = [
        (item.label, _engine_label(contexts[item.key]), item.unsure)
        for item in labelled.contexts
        if item.label is not None
    ]
    sure = [(gold, predicted) for gold, predicted, unsure in pairs if not unsure]
    return CitationGraphEvaluation(
        matching=match_scores(outcomes),
        outcomes=outcomes,
        unlabelled_matches=unlabelled,
        linking=linking_precision(labelled.contexts),
        classification_sample=classification_scores((g, p) for g, p, _ in pairs),
        classification_estimated=classification_scores(((g, p) for g, p, _ in pairs), weights),
        accuracy_sure=sum(g == p for g, p in sure) / len(sure) if sure else None,
        sure_contexts=len(sure),
        contexts_by_engine_label=dict(population),
        sampled_by_engine_label=dict(sampled),
    )


def _key(paper_id: str, context: CitationContext) -> tuple[str, int, int]:
    return paper_id, context.marker_start, context.reference_index


def _engine_label(context: CitationContext) -> CitationIntentLabel:
    return context.intent.label if context.intent is not None else "background"
