"""The offline checks of a synthesis: every paper cited, every citation real, every cited sentence
supported by its passages (graded offline by `litpipe.evaluation.grading`, and how well the
support score tells true from mismatched pairs)."""

from __future__ import annotations

import csv
from pathlib import Path

from litpipe.agents.asker import Asker
from litpipe.agents.synthesis import ALSO_IN_COLLECTION
from litpipe.evaluation.checks import (
    CheckOutcome,
    citation_validity,
    cited_chunk_ids,
    coverage,
    stored_chunks,
)
from litpipe.evaluation.grading import (
    cited_passages,
    faithfulness,
    grade_output,
    prose_sentences,
)
from litpipe.schemas import Citation, SegmentGrade, Synthesis
from litpipe.settings import Settings
from litpipe.text import marker, sentences

ICLR_TABLE = (
    Path(__file__).resolve().parents[1]
    / "corpora"
    / "iclr-abstracts-demo"
    / "iclr_abstracts_demo.csv"
)
REPAIR = "10.1093_nar_gkae252"
FEARNET = "SJ1Xmf-Rb"
THRESHOLD = 0.5

REPAIR_PASSAGE = (
    "REV1 is a Y-family polymerase that inserts cytosine opposite abasic sites. Cells lacking "
    "REV1 are hypersensitive to alkylating agents."
)
FEARNET_PASSAGE = (
    "FearNet uses a brain-inspired dual-memory system in which new memories are consolidated "
    "from a network for recent memories to a network for long-term storage."
)
PASSAGES = {f"{REPAIR}:7": REPAIR_PASSAGE, f"{FEARNET}:0": FEARNET_PASSAGE}


def citation(paper_id: str, page: int, *chunk_ids: str) -> Citation:
    return Citation(
        marker=marker(paper_id, page), paper_id=paper_id, page=page, chunk_ids=list(chunk_ids)
    )


def synthesis(text: str, citations: list[Citation], papers: list[str]) -> Synthesis:
    return Synthesis(
        collection="demo",
        audience="expert",
        engine="offline",
        pattern="stuff",
        title="Demo",
        text=text,
        citations=citations,
        papers=papers,
    )


GOOD = synthesis(
    "## Findings\n"
    "REV1 inserts cytosine opposite abasic sites [10.1093_nar_gkae252:4]. FearNet consolidates\n"
    "new memories into long-term storage [SJ1Xmf-Rb:2].\n\n"
    "Both papers are about keeping information.\n\n"
    "## References\n"
    "- REV1 paper [10.1093_nar_gkae252:4]",
    [citation(REPAIR, 4, f"{REPAIR}:7"), citation(FEARNET, 2, f"{FEARNET}:0")],
    [REPAIR, FEARNET],
)


def support(written: Synthesis, chunk_texts: dict[str, str], threshold: float) -> CheckOutcome:
    """The support check offline without an embedder (the share of terms), as a step runs it."""
    settings = Settings(grading={"support_threshold": threshold})
    grades = grade_output(
        written.text,
        cited_passages(written.citations, chunk_texts),
        settings.grading,
        Asker(settings.llm),
    )
    return faithfulness(grades, "expert synthesis")


def segment_grades(outcome: CheckOutcome) -> list[SegmentGrade]:
    sentences = outcome.metadata["sentences"]
    assert isinstance(sentences, list)
    return [
        SegmentGrade.model_validate(segment)
        for sentence in sentences
        for segment in sentence["segments"]  # type: ignore[index,union-attr]
    ]


# Rows as the chunk store returns them: extra columns are ignored.
STORE_ROWS = [
    {"chunk_id": f"{REPAIR}:7", "paper_id": REPAIR, "page_start": 4, "page_end": 4, "text": "x"},
    {"chunk_id": f"{FEARNET}:0", "paper_id": FEARNET, "page_start": 1, "page_end": 2},
    {"chunk_id": f"{FEARNET}:5", "paper_id": FEARNET, "page_start": 6, "page_end": 6},
]


def test_coverage_passes_when_every_paper_is_cited() -> None:
    outcome = coverage(GOOD)

    assert outcome.passed
    assert outcome.metadata == {
        "writer_cited": [REPAIR, FEARNET],
        "writer_cited_count": 2,
        "appended": [],
        "appended_count": 0,
        "missing": [],
        "left_out": [],
        "total": 2,
    }


def test_coverage_fails_and_names_the_paper_never_cited() -> None:
    outcome = coverage(GOOD.model_copy(update={"papers": [REPAIR, FEARNET, "2401.00001"]}))

    assert not outcome.passed and not outcome.warn_only  # blocks, as it always did
    assert "2401.00001" in outcome.description and "2 of 3" in outcome.description
    assert outcome.metadata["missing"] == ["2401.00001"]


def test_coverage_counts_a_paper_cited_only_by_an_appended_sentence_apart_and_warns() -> None:
    # The writer cited REPAIR and FEARNET; the third paper only by the sentence appended for it.
    third = "2401.00001"
    text = f'{GOOD.text}\n\n{ALSO_IN_COLLECTION}, "A third paper": It holds [{third}:3].'
    written = GOOD.model_copy(
        update={
            "text": text,
            "citations": [*GOOD.citations, citation(third, 3, f"{third}:0")],
            "papers": [REPAIR, FEARNET, third],
            "appended": [third],
        }
    )

    outcome = coverage(written)

    assert not outcome.passed and outcome.warn_only
    assert outcome.metadata["writer_cited"] == [REPAIR, FEARNET]
    assert outcome.metadata["writer_cited_count"] == 2
    assert outcome.metadata["appended"] == [third] and outcome.metadata["appended_count"] == 1
    assert outcome.metadata["missing"] == [] and outcome.metadata["total"] == 3
    assert outcome.description == (
        "expert synthesis: the writer cites 2 of 3 papers; 1 more only by an appended "
        f'"{ALSO_IN_COLLECTION}" sentence: {third}'
    )


def test_valid_citations_pass_against_the_store_rows() -> None:
    store = stored_chunks(STORE_ROWS)

    outcome = citation_validity(GOOD, store)

    assert outcome.passed, outcome.metadata
    assert outcome.metadata == {"citations": 2, "invalid": []}
    assert cited_chunk_ids(GOOD) == [f"{REPAIR}:7", f"{FEARNET}:0"]


def test_citations_fail_for_a_missing_chunk_another_papers_chunk_or_a_page_not_covered() -> None:
    bad = GOOD.model_copy(
        update={
            "text": GOOD.text + " More [10.1093_nar_gkae252:9; SJ1Xmf-Rb:6] and [SJ1Xmf-Rb:3].",
            "citations": [
                *GOOD.citations,
                citation(REPAIR, 9, f"{REPAIR}:99", f"{FEARNET}:5"),
                citation(FEARNET, 6, f"{FEARNET}:0"),
            ],
        }
    )

    outcome = citation_validity(bad, stored_chunks(STORE_ROWS))

    assert not outcome.passed
    invalid = outcome.metadata["invalid"]
    assert isinstance(invalid, list)
    problems = {(entry["marker"], entry["chunk_id"]): entry["problem"] for entry in invalid}
    assert problems == {
        (f"[{REPAIR}:9]", f"{REPAIR}:99"): "chunk not in the store",
        (f"[{REPAIR}:9]", f"{FEARNET}:5"): f"chunk of another paper ({FEARNET})",
        (f"[{FEARNET}:6]", f"{FEARNET}:0"): "chunk on pages 1-2, not 6",
        (f"[{FEARNET}:3]", None): "no citation for this marker",
    }
    assert f"[{FEARNET}:3]" in outcome.description


def test_support_passes_a_verbatim_sentence_and_lists_the_uncited_one() -> None:
    verbatim = synthesis(
        f"{REPAIR_PASSAGE.split('. ')[0]} [{REPAIR}:4].\n\nA sentence with no citation.",
        [citation(REPAIR, 4, f"{REPAIR}:7")],
        [REPAIR],
    )

    outcome = support(verbatim, PASSAGES, THRESHOLD)

    assert outcome.passed
    assert [(g.score, g.verdict) for g in segment_grades(outcome)] == [(1.0, "supported")]
    assert outcome.metadata["uncited"] == ["A sentence with no citation."]


def test_support_flags_a_sentence_whose_passage_is_unrelated() -> None:
    miscited = synthesis(
        "REV1 inserts cytosine opposite abasic sites [10.1093_nar_gkae252:4]. "
        "FearNet consolidates memories into long-term storage [10.1093_nar_gkae252:4].",
        [citation(REPAIR, 4, f"{REPAIR}:7")],
        [REPAIR],
    )

    outcome = support(miscited, PASSAGES, THRESHOLD)

    assert not outcome.passed
    grades = segment_grades(outcome)
    assert [grade.verdict for grade in grades] == ["supported", "unsupported"]
    flagged = grades[1]
    assert flagged.score is not None and flagged.score < THRESHOLD
    assert "FearNet" in flagged.missing
    assert outcome.metadata["unsupported"] == [flagged.text]
    assert "1 of 2" in outcome.description and "FearNet consolidates" in outcome.description


def test_a_marker_without_its_passage_gives_no_support() -> None:
    outcome = support(GOOD, {f"{REPAIR}:7": REPAIR_PASSAGE}, THRESHOLD)

    assert [grade.verdict for grade in segment_grades(outcome)] == ["supported", "unsupported"]


def test_headings_and_references_are_not_graded() -> None:
    assert prose_sentences(GOOD.text) == [
        "REV1 inserts cytosine opposite abasic sites [10.1093_nar_gkae252:4].",
        "FearNet consolidates new memories into long-term storage [SJ1Xmf-Rb:2].",
        "Both papers are about keeping information.",
    ]
    outcome = support(GOOD, PASSAGES, THRESHOLD)
    assert outcome.passed and len(segment_grades(outcome)) == 2


def support_accuracy(pairs: list[tuple[str, str, bool]]) -> float:
    """Share of (claim, passage, is-true-pair) the support check grades right."""
    right = 0
    for claim, passage, true_pair in pairs:
        # Cited as a writer cites: the marker before the claim's final full stop.
        text = f"{claim.strip().removesuffix('.')} [{FEARNET}:1]."
        cited = synthesis(text, [citation(FEARNET, 1, "p:0")], [FEARNET])
        right += support(cited, {"p:0": passage}, THRESHOLD).passed == true_pair
    return right / len(pairs)


def iclr_rows() -> list[dict[str, str]]:
    with ICLR_TABLE.open(encoding="utf-8", newline="") as table:
        return list(csv.DictReader(table))


def test_the_score_separates_a_papers_own_summary_from_another_papers() -> None:
    """Each paper's TL;DR (a claim its authors wrote in other words) against its own abstract
    (true) and against the next paper's abstract (mismatched)."""
    rows = iclr_rows()
    pairs = [(row["tldr_first"], row["abstract"], True) for row in rows] + [
        (row["tldr_first"], rows[(index + 1) % len(rows)]["abstract"], False)
        for index, row in enumerate(rows)
    ]

    assert len(pairs) >= 80
    assert support_accuracy(pairs) >= 0.9


def test_the_score_separates_an_abstracts_sentence_from_another_abstract() -> None:
    rows = iclr_rows()
    pairs: list[tuple[str, str, bool]] = []
    for index, row in enumerate(rows):
        other = rows[(index + 1) % len(rows)]["abstract"]
        for span in sentences(row["abstract"])[:2]:
            pairs += [(span.text, row["abstract"], True), (span.text, other, False)]

    assert len(pairs) >= 80
    assert support_accuracy(pairs) >= 0.95


def test_a_marker_after_the_full_stop_stays_with_its_sentence() -> None:
    text = "REV1 inserts cytosine opposite abasic sites. [10.1093_nar_gkae252:4]"

    assert prose_sentences(text) == [text]
    cited = synthesis(text, [citation(REPAIR, 4, f"{REPAIR}:7")], [REPAIR])
    assert support(cited, PASSAGES, THRESHOLD).passed
