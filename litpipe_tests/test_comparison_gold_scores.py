"""A comparison table scored against a hand-checked gold (`evaluation/comparison_gold.py`): a
cell counts as right only when it cites one of the gold pages of its own paper and holds one of
the gold terms, a "not reported" only where the paper is silent, and every wrong cell is named
with why, so that a reader of the benchmark can check each call."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from litpipe.evaluation.comparison_gold import GoldCell, read_gold, score_table
from litpipe.schemas import Citation, ComparisonCell, ComparisonRow, ComparisonTable
from litpipe.schemas.grades import SentenceGrade

NOT_REPORTED = "not reported"


def gold(paper: str, aspect: str, pages: list[int], terms: list[str]) -> GoldCell:
    return GoldCell(
        paper_id=paper,
        aspect=aspect,
        reported=bool(pages),
        value=" ".join(terms),
        pages=pages,
        terms=terms,
    )


def cell(
    aspect: str, value: str, cites: list[tuple[str, int]], verdict: str | None = None
) -> ComparisonCell:
    if not cites:
        return ComparisonCell(
            aspect=aspect, value=NOT_REPORTED, citations=[], not_reported=True, engine="offline"
        )
    citations = [
        Citation(marker=f"[{paper}:{page}]", paper_id=paper, page=page, chunk_ids=[f"{paper}-c"])
        for paper, page in cites
    ]
    markers = " ".join(citation.marker for citation in citations)
    grade = (
        SentenceGrade(sentence=value, verdict=verdict, segments=[])  # type: ignore[arg-type]
        if verdict
        else None
    )
    return ComparisonCell(
        aspect=aspect,
        value=f"{value} {markers}",
        citations=citations,
        not_reported=False,
        engine="offline",
        grade=grade,
    )


def table(rows: dict[str, list[ComparisonCell]]) -> ComparisonTable:
    return ComparisonTable(
        collection="c",
        aspects=["data", "limitations"],
        aspects_engine="offline",
        rows=[
            ComparisonRow(paper_id=paper, title=paper, cells=cells, passages=[])
            for paper, cells in rows.items()
        ],
    )


GOLD = [
    gold("p1", "data", [3], ["zebrafish", "larvae"]),
    gold("p1", "limitations", [], []),
    gold("p2", "data", [2, 4], ["rna-seq"]),
    gold("p2", "limitations", [9], ["small sample"]),
    gold("p3", "data", [1], ["mice"]),
]


def test_each_cell_is_judged_by_page_and_term_and_every_wrong_one_is_named_with_why() -> None:
    scored = score_table(
        table(
            {
                # Right: cites gold page 3 and holds "Zebrafish" (case-folded).
                "p1": [
                    cell("data", "Zebrafish embryos", [("p1", 3)], "supported"),
                    cell("limitations", "", []),  # right: the paper is silent
                ],
                "p2": [
                    # A gold term on a page the gold does not name.
                    cell("data", "bulk RNA-seq of liver", [("p2", 7)], "supported"),
                    # Left empty, though the paper states it.
                    cell("limitations", "", []),
                ],
                # p3's row was left out of the table: its gold cell is missing.
            }
        ),
        GOLD,
    )
    assert (scored.overall.cells, scored.overall.correct) == (5, 2)
    assert scored.overall.accuracy == pytest.approx(2 / 5)
    reasons = {(wrong.paper_id, wrong.aspect): wrong.reason for wrong in scored.wrong}
    assert reasons == {
        ("p2", "data"): "wrong page",
        ("p2", "limitations"): "not reported where stated",
        ("p3", "data"): "missing",
    }
    wrong_page = next(wrong for wrong in scored.wrong if wrong.reason == "wrong page")
    assert (wrong_page.cited_pages, wrong_page.gold_pages) == ([7], [2, 4])
    # Filled cells: 2, of which 1 right; the gold states 4 cells.
    assert (scored.overall.filled.precision, scored.overall.filled.recall) == (0.5, 0.25)
    assert scored.by_aspect["data"].correct == 1 and scored.by_aspect["limitations"].correct == 1
    agreement = scored.not_reported
    assert (agreement.silent, agreement.silent_left, agreement.stated_left) == (1, 1, 1)
    # The support check passed the wrong-page cell: it grades faithfulness, not the aspect.
    cross = scored.support_by_correctness
    assert (cross.correct_supported, cross.incorrect, cross.incorrect_supported) == (1, 1, 1)
    assert scored.support == {"supported": 2, "ungraded": 3}


def test_a_citation_of_another_paper_never_makes_a_cell_right() -> None:
    scored = score_table(table({"p3": [cell("data", "adult mice", [("p1", 1)])]}), [GOLD[-1]])
    assert scored.overall.correct == 0
    assert scored.wrong[0].reason == "wrong page"
    assert scored.wrong[0].cited_pages == []


def test_a_cell_on_the_right_page_without_a_term_and_one_filled_where_the_paper_is_silent() -> None:
    scored = score_table(
        table(
            {
                "p1": [
                    cell("data", "fish of several ages", [("p1", 3)]),
                    cell("limitations", "few animals", [("p1", 5)], "unsupported"),
                ]
            }
        ),
        GOLD[:2],
    )
    assert [wrong.reason for wrong in scored.wrong] == ["no term", "filled where silent"]
    assert scored.not_reported.silent_filled == 1
    assert scored.support == {"ungraded": 1, "unsupported": 1}


def test_the_gold_reads_back_and_a_bad_line_is_named(tmp_path: Path) -> None:
    bundled = read_gold(Path(__file__).parent / "data" / "comparison_eval")
    assert len(bundled) == 54
    (tmp_path / "gold.jsonl").write_text(
        GOLD[0].model_dump_json() + "\n" + '{"paper_id": "p9", "aspect": "data"}\n', "utf-8"
    )
    with pytest.raises(ValueError, match="2"):
        read_gold(tmp_path)


@given(
    verdicts=st.lists(
        st.tuples(
            st.sampled_from(["right", "wrong page", "no term", "empty", "absent"]),
            st.sampled_from([None, "supported", "unsupported"]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_the_counts_add_up_whatever_the_table_holds(
    verdicts: list[tuple[str, str | None]],
) -> None:
    records = [gold(f"p{i}", "data", [2], ["mice"]) for i in range(len(verdicts))]
    rows: dict[str, list[ComparisonCell]] = {}
    for i, (kind, verdict) in enumerate(verdicts):
        paper = f"p{i}"
        if kind == "right":
            rows[paper] = [cell("data", "mice", [(paper, 2)], verdict)]
        elif kind == "wrong page":
            rows[paper] = [cell("data", "mice", [(paper, 5)], verdict)]
        elif kind == "no term":
            rows[paper] = [cell("data", "rats", [(paper, 2)], verdict)]
        elif kind == "empty":
            rows[paper] = [cell("data", "", [])]
    scored = score_table(table(rows), records)
    assert scored.overall.correct == sum(kind == "right" for kind, _ in verdicts)
    assert scored.overall.correct + len(scored.wrong) == len(records)
    assert sum(scored.support.values()) == len(records)
    cross = scored.support_by_correctness
    assert cross.correct + cross.incorrect == sum(
        kind in {"right", "wrong page", "no term"} for kind, _ in verdicts
    )
