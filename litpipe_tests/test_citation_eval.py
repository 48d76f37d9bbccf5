"""The citation graph's evaluation (`litpipe.evaluation.citation_graph`): its scores on small
examples worked by hand, and the hand-checked set (`litpipe_tests/data/citation_eval/`) still
lining up with what the parser reads of the nine bundled papers.

What a user would notice: a wrong match lowers precision, a missed one recall, and an entry
left unmatched because it could be two papers is a miss; the figures docs/results.md reports
come from a set whose every entry, paper and context is still where the set says."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from litpipe.evaluation.citation_graph import (
    CitationSet,
    EntryOutcome,
    LabelledContext,
    LabelledEntry,
    classification_scores,
    evaluate_citation_graph,
    linking_precision,
    match_scores,
    misalignments,
    read_set,
)
from litpipe.schemas import CitationIntentLabel, MatchRule, PaperReferences
from litpipe.workflows.paper_references import paper_references
from litpipe_tests.bundled import BUNDLED_DOCUMENTS_GROUP, CORPUS, bundled_document

SET = Path(__file__).parent / "data" / "citation_eval"


def _outcome(
    expected: str | None,
    matched: str | None,
    rule: MatchRule | None = None,
    expected_rule: MatchRule | None = "title_year",
    also_right: list[str] | None = None,
) -> EntryOutcome:
    entry = LabelledEntry(
        paper="citing",
        reference_index=0,
        raw_start="",
        expected=expected,
        also_right=also_right or [],
        expected_rule=expected_rule if expected else None,
    )
    return EntryOutcome(entry=entry, matched=matched, rule=rule)


def test_a_wrong_match_counts_against_precision_and_a_missed_one_against_recall() -> None:
    scores = match_scores(
        [
            _outcome("a", "a", "doi", expected_rule="doi"),  # right
            _outcome("b", "c", "title_year"),  # another paper: wrong and missed
            _outcome("d", None),  # ambiguous, left unmatched: missed
            _outcome(None, "e", "title_year"),  # names no paper of the collection: wrong
            _outcome(None, None),  # rightly unmatched: counts for nothing
        ]
    )
    overall = scores.overall
    assert (overall.correct, overall.predicted, overall.expected) == (1, 3, 3)
    assert overall.precision == pytest.approx(1 / 3)
    assert overall.recall == pytest.approx(1 / 3)
    assert overall.f1 == pytest.approx(1 / 3)
    assert (scores.entries, scores.naming_a_paper) == (5, 3)
    doi, title = scores.by_rule["doi"], scores.by_rule["title_year"]
    assert (doi.matched, doi.precision, doi.expected, doi.recall) == (1, 1.0, 1, 1.0)
    # Two title matches, both wrong; two entries sharing only a title, neither found.
    assert (title.matched, title.precision, title.expected, title.recall) == (2, 0.0, 2, 0.0)
    assert scores.by_rule["arxiv"].precision is None
    assert scores.by_rule["arxiv"].recall is None


def test_a_duplicate_of_the_right_paper_is_right_and_nothing_matched_has_no_precision() -> None:
    duplicate = match_scores([_outcome("v1", "v3", "doi", also_right=["v3"])])
    assert duplicate.overall.precision == duplicate.overall.recall == 1.0
    nothing = match_scores([_outcome("a", None), _outcome(None, None)])
    assert nothing.overall.precision is None
    assert nothing.overall.recall == 0.0


def test_classification_scores_per_label_and_weighted_by_the_engine_labels_share() -> None:
    pairs: list[tuple[CitationIntentLabel, CitationIntentLabel]] = [
        ("uses", "uses"),
        ("uses", "background"),
        ("background", "background"),
        ("background", "uses"),
        ("compares", "compares"),
        ("contrasts", "background"),
    ]
    scores = classification_scores(pairs)
    uses = scores.labels["uses"]
    assert (uses.precision, uses.recall, uses.support, uses.predicted) == (0.5, 0.5, 2, 2)
    assert scores.labels["background"].precision == pytest.approx(1 / 3)
    assert scores.labels["contrasts"].recall == 0.0
    assert scores.labels["contrasts"].precision is None
    assert scores.labels["contrasts"].f1 == 0.0
    # extends: neither labelled nor predicted, left out of the macro mean.
    assert scores.labels["extends"].f1 is None
    assert scores.macro_f1 == pytest.approx((0.5 + 0.4 + 1.0 + 0.0) / 4)
    assert scores.accuracy == pytest.approx(3 / 6)
    assert scores.confusion["contrasts"]["background"] == 1
    # Each context the engine called background stands for ten: the uses it missed weigh more.
    estimated = classification_scores(pairs, {"background": 10.0})
    assert estimated.labels["uses"].recall == pytest.approx(1 / 11)
    assert estimated.labels["uses"].support == 2
    assert estimated.confusion["uses"]["background"] == 10.0


def test_a_marker_that_cites_nothing_counts_against_linking_precision() -> None:
    def context(linked: str) -> LabelledContext:
        return LabelledContext.model_validate(
            {"paper": "p", "marker_start": 0, "reference_index": 0, "marker": "[1]"}
            | {"sentence": "s", "label": None, "linked": linked}
        )

    found = linking_precision([context("right"), context("wrong"), context("not_a_citation")])
    assert (found.right, found.wrong, found.not_a_citation) == (1, 1, 1)
    assert found.precision == pytest.approx(1 / 3)


@cache
def _bundled_references() -> dict[str, PaperReferences]:
    return {
        pdf.stem: paper_references(bundled_document(pdf.stem))
        for pdf in sorted(CORPUS.glob("*.pdf"))
    }


@pytest.mark.xdist_group(BUNDLED_DOCUMENTS_GROUP)
def test_the_set_lines_up_with_the_parsed_bundled_papers() -> None:
    labelled = read_set(SET)
    references = _bundled_references()
    assert misalignments(labelled, references) == []
    assert len(labelled.entries) >= 60 and len(labelled.contexts) >= 150
    evaluation = evaluate_citation_graph(labelled, references)
    # Every match the engine makes among the nine lists is an entry the set judges.
    assert evaluation.unlabelled_matches == []
    # No entry matches a hard negative.
    negatives = {paper.paper_id for paper in labelled.collection if paper.hard_negative}
    assert negatives and not {o.matched for o in evaluation.outcomes} & negatives


@pytest.mark.xdist_group(BUNDLED_DOCUMENTS_GROUP)
def test_a_set_out_of_line_with_the_parser_is_named_and_not_scored() -> None:
    labelled = read_set(SET)
    entry, context = labelled.entries[0], labelled.contexts[0]
    shifted = CitationSet(
        collection=labelled.collection[1:],
        entries=[
            entry.model_copy(update={"raw_start": "Nobody A. 1999 Not this entry"}),
            *labelled.entries[1:],
        ],
        contexts=[context.model_copy(update={"marker_start": context.marker_start + 1})],
    )
    problems = misalignments(shifted, _bundled_references())
    assert any(f"entry {entry.reference_index}: reads" in problem for problem in problems)
    assert any(labelled.collection[0].paper_id in problem for problem in problems)
    assert any(f"at offset {context.marker_start + 1}" in problem for problem in problems)
    with pytest.raises(ValueError, match="does not line up"):
        evaluate_citation_graph(shifted, _bundled_references())
