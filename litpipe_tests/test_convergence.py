"""The MAIS convergence report: its figures from hand-made runs, the Markdown table, the SVG plot
of the mean accuracy per iteration, and the ACU accuracy of a loop run through the stub."""

from __future__ import annotations

import statistics
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from litpipe.agents.asker import Asker
from litpipe.evaluation.convergence import convergence_report
from litpipe.extractive.summary_acus import AcusInput, offline_acus
from litpipe.llm.client import LLMClient
from litpipe.llm.usage import UsageLedger
from litpipe.report.convergence import render_markdown, render_svg
from litpipe.schemas import (
    JudgeVerdict,
    QuerySummary,
    QuerySummaryRequest,
    SummaryIteration,
)
from litpipe.workflows.query_summary import summarize_for_query
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_query_summary import (
    ABSTRACT,
    PAPER,
    PAPER_ID,
    QUERY,
    QUESTIONS,
    REQUEST,
    TITLE,
    fenced,
    term_search,
    verdict,
)

SVG = "{http://www.w3.org/2000/svg}"


def run(accuracies: list[float], approved: bool, cap: int = 15, index: int = 0) -> QuerySummary:
    """A run whose iterations had these accuracies; the last is approved when `approved`."""
    iterations = [
        SummaryIteration(
            iteration=number,
            revised_from=[] if number == 1 else ["a topic"],
            summary=f"Summary {number}.",
            highlights=[],
            citations=[],
            qa=[],
            verdict=JudgeVerdict(
                approved=approved and number == len(accuracies),
                mismatch_topics=[] if approved and number == len(accuracies) else ["a topic"],
                accuracy=accuracy,
            ),
        )
        for number, accuracy in enumerate(accuracies, 1)
    ]
    return QuerySummary(
        request=QuerySummaryRequest(paper_id=f"p{index}", query="What is found?"),
        title="A paper",
        status="approved" if approved else "max_iterations_reached",
        route="evidence",
        route_reason="by hand",
        questions=[],
        iterations=iterations,
        max_iterations=cap,
        summary=iterations[-1].summary,
        highlights=[],
        citations=[],
        source=[],
        engine="offline",
        engines={},
    )


RUNS = [
    run([1.0], True),
    run([0.5, 0.75, 1.0], True),
    run([0.25, 1.0], True),
    run([1.0], True),
    run([0.0, 0.25, 0.5, 0.5], False, cap=4),
]


def test_the_table_figures_of_hand_made_runs() -> None:
    report = convergence_report(RUNS)
    assert (report.runs, report.approved, report.single_iteration) == (5, 4, 2)
    assert report.approved_share == pytest.approx(0.8)
    # Of all runs, as MAIS reports "42.6% in one iteration" (26 of 61).
    assert report.single_iteration_share == pytest.approx(0.4)
    # Iterations of the approved runs: 1, 3, 2, 1.
    assert report.mean_iterations == pytest.approx(1.75)
    assert report.variance_iterations == pytest.approx(2.75 / 3)  # sample variance
    assert report.max_iterations == [4, 15]
    by_iteration = [(r.iteration, r.runs, r.mean_accuracy) for r in report.accuracy_by_iteration]
    assert by_iteration == [
        (1, 5, pytest.approx((1.0 + 0.5 + 0.25 + 1.0 + 0.0) / 5)),
        (2, 3, pytest.approx((0.75 + 1.0 + 0.25) / 3)),
        (3, 2, pytest.approx((1.0 + 0.5) / 2)),
        (4, 1, pytest.approx(0.5)),
    ]


def test_the_maiss_own_shares_come_out_of_the_same_arithmetic() -> None:
    """61 runs, 55 approved (26 of them at once): MAIS's 90.2% and 42.6%."""
    approved = [run([1.0] * count, True, index=i) for i, count in enumerate([1] * 26 + [4] * 29)]
    capped = [run([0.5] * 15, False, index=100 + i) for i in range(6)]
    report = convergence_report(approved + capped)
    assert (report.runs, report.approved, report.single_iteration) == (61, 55, 26)
    table = render_markdown(report)
    assert "| 61 | 55 | 90.2% | 26 (42.6%) |" in table
    counts = [1] * 26 + [4] * 29
    assert report.mean_iterations == pytest.approx(statistics.fmean(counts))
    assert report.variance_iterations == pytest.approx(statistics.variance(counts))


def test_the_markdown_table_shows_every_figure() -> None:
    table = render_markdown(convergence_report(RUNS))
    lines = table.splitlines()
    assert lines[0].startswith("| runs | approved | approved share | approved in one iteration")
    assert lines[2] == "| 5 | 4 | 80.0% | 2 (40.0%) | 1.75 | 0.92 | 4, 15 |"
    # Hand-made runs have no ACUs: their ACU accuracy is n/a.
    assert "| 1 | 5 | 0.550 | n/a |" in lines
    assert "| 4 | 1 | 0.500 | n/a |" in lines


def test_the_svg_is_xml_with_one_point_per_iteration() -> None:
    report = convergence_report(RUNS)
    root = ET.fromstring(render_svg(report))
    assert root.tag == f"{SVG}svg"
    points = root.findall(f".//{SVG}circle[@class='point']")
    assert [int(p.get("data-iteration", "")) for p in points] == [1, 2, 3, 4]
    accuracies = [float(p.get("data-accuracy", "")) for p in points]
    expected = [row.mean_accuracy for row in report.accuracy_by_iteration]
    assert accuracies == pytest.approx(expected, abs=1e-4)
    # Left to right by iteration; higher accuracy higher up (smaller y).
    xs = [float(p.get("cx", "")) for p in points]
    ys = [float(p.get("cy", "")) for p in points]
    assert xs == sorted(xs)
    by_accuracy = sorted(range(4), key=lambda i: accuracies[i])
    assert [ys[i] for i in by_accuracy] == sorted(ys, reverse=True)
    (line,) = root.findall(f".//{SVG}polyline")
    assert len(line.get("points", "").split()) == 4


def test_no_runs_give_an_empty_report_and_a_plot_without_points() -> None:
    report = convergence_report([])
    assert (report.runs, report.approved, report.approved_share) == (0, 0, 0.0)
    assert report.mean_iterations is None and report.variance_iterations is None
    assert report.accuracy_by_iteration == []
    root = ET.fromstring(render_svg(report))
    assert root.findall(f".//{SVG}circle") == []
    assert "| 0 | 0 | 0.0% | 0 (0.0%) | n/a | n/a | n/a |" in render_markdown(report)


def test_one_approved_run_has_a_mean_but_no_variance() -> None:
    report = convergence_report([run([0.5, 1.0], True)])
    assert report.mean_iterations == 2.0 and report.variance_iterations is None
    points = ET.fromstring(render_svg(report)).findall(f".//{SVG}circle[@class='point']")
    assert [p.get("data-accuracy") for p in points] == ["0.5000", "1.0000"]


def test_acu_accuracy_is_reported_per_iteration_and_drops_when_the_summary_omits_a_unit(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    """A summarizer whose first draft states every atomic content unit and whose second leaves
    one out: the report shows each iteration's ACU accuracy, 1 then (n - 1) / n, beside the
    judge's accuracy. The ACUs are written and checked offline (the paper's key sentences)."""
    units = offline_acus(
        AcusInput(paper_id=PAPER_ID, title=TITLE, query=QUERY, passages=PAPER, most=10)
    ).units
    assert len(units) >= 2
    drafts = [" ".join(u.text for u in units), " ".join(u.text for u in units[1:])]
    stub_llm.script("stub-questions", QUESTIONS)
    stub_llm.script(
        "stub-summary",
        *({"evidence_sufficient": True, "summary": d, "highlights": []} for d in drafts),
    )
    # Answers echoing the summary: the judge's two requests differ, so neither is a cache hit.
    stub_llm.respond(
        "stub-qa",
        lambda body: {
            "answers": [{"question_id": f"{PAPER_ID}:d0", "answer": fenced(body, "summary")}]
        },
    )
    stub_llm.script(
        "stub-judge",
        verdict(False, [True, False], ["the decisive domain"]),
        verdict(True, [True, True], []),
    )
    routes = {
        "query_questions": {"model": "openai/stub-questions"},
        "query_summary": {"model": "openai/stub-summary"},
        "summary_qa": {"model": "openai/stub-qa"},
        "summary_judge": {"model": "openai/stub-judge"},
        "summary_acus": {"model": "offline"},
        "summary_acu_check": {"model": "offline"},
    }
    settings = stub_settings(tmp_path, stub_llm, llm={"agents": routes})
    result = summarize_for_query(
        REQUEST,
        TITLE,
        ABSTRACT,
        PAPER,
        term_search(PAPER),
        settings.query_summary,
        Asker(settings.llm, LLMClient(settings.llm, settings.paths, UsageLedger())),
    )
    assert [unit.text for unit in result.acus] == [unit.text for unit in units]
    omitted = (len(units) - 1) / len(units)
    assert [i.acu_accuracy for i in result.iterations] == [1.0, pytest.approx(omitted)]
    report = convergence_report([result])
    assert [row.mean_acu_accuracy for row in report.accuracy_by_iteration] == [
        1.0,
        pytest.approx(omitted),
    ]
    lines = render_markdown(report).splitlines()
    assert "| iteration | runs reaching it | mean accuracy | mean ACU accuracy |" in lines
    assert "| 1 | 1 | 0.500 | 1.000 |" in lines
    assert f"| 2 | 1 | 1.000 | {omitted:.3f} |" in lines
