"""A model that fails loses only what it failed: an optional collection step (comparative
questions, a thin paper's follow-ups, the plain summary) is recorded as not run, with why, and the
synthesis and its page are written all the same; a paper whose own model stages fail is left out
of the synthesis of the others, named with why. Through the stub server, refusing requests as a
provider does (its errors are not replies the offline engine could stand in for)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from litpipe.agents.asker import Asker
from litpipe.ingest.sources import discover
from litpipe.llm.client import LLMClient
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import Answer, PaperAbstract, Question, StepNotRun
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe.workflows import pipeline
from litpipe.workflows.plain_summary import plain_summary
from litpipe.workflows.relationship_analysis import analyse
from litpipe.workflows.synthesis import write_synthesis
from litpipe_tests.stub_agents import serve_every_agent
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_cli import run
from litpipe_tests.test_synthesis import ANSWERS, PAPERS, PLM, TITLES, make_analysis

# Three abstracts; the provider refuses every request quoting the second ("Rev1").
TABLE = (
    "id,title,abstract\n"
    "a1,Yeast proteomics,We profile ale yeast proteins during fermentation. "
    "Heat shock proteins rise sharply.\n"
    "b2,Fly genetics,Rev1 coordinates tolerance to alkylation damage in flies. "
    "Larvae lacking Rev1 show shattered chromosomes.\n"
    "c3,Yeast stress,Yeast cells under heat stress induce chaperones. "
    "Fermentation slows under stress.\n"
)
REFUSED = "Rev1"
# What the stub answers a refused request with (400), as the client reports it.
REFUSAL = "Invalid value for 'temperature'"


def abstract_table(folder: Path) -> Path:
    folder.mkdir()
    table = folder / "papers.csv"
    table.write_text(TABLE, encoding="utf-8")
    return table


def checks_of(report: dict) -> dict[tuple[str, str], dict]:
    return {(c["asset"], c["check"]): c for c in report["synthesis"]["checks"]}


def outputs(report: dict) -> tuple[str, str]:
    """The collection's page and its Markdown synthesis."""
    files = report["synthesis"]["outputs"]
    return (
        Path(files["synthesis.html"]).read_text("utf-8"),
        Path(files["synthesis.md"]).read_text("utf-8"),
    )


@pytest.mark.slow  # a whole `litpipe run`
def test_every_optional_step_refused_the_synthesis_and_its_page_are_written_and_say_why(
    tmp_path: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The comparative questions, every thin paper's follow-ups and the plain summary on a model
    that refuses them all (401): the command exits 0 with the synthesis and its page, which,
    with report.json and the terminal, name each step that did not run and why."""
    optional = {"model": "openai/stub-optional"}
    monkeypatch.setenv(
        "LITPIPE_LLM__AGENTS",
        json.dumps(
            {"cross_paper_questions": optional, "followups": optional, "plain_summary": optional}
        ),
    )
    # Every paper thin, so that each is asked follow-up questions; the extras are off by default.
    monkeypatch.setenv("LITPIPE_SYNTHESIS__MIN_INSIGHTS_PER_PAPER", "99")
    monkeypatch.setenv("LITPIPE_SYNTHESIS__FOLLOW_UP_QUESTIONS", "2")
    monkeypatch.setenv("LITPIPE_SYNTHESIS__CROSS_PAPER_QUESTIONS", "4")
    stub_llm.fail_next("unauthorized", 1000, marker="stub-optional")
    table = abstract_table(tmp_path / "papers")

    code, report = run(
        tmp_path / "home", tiny_model, str(table), "--collection", "bio", "--api-base", stub_llm.url
    )

    assert code == 0 and report["collection_failure"] is None
    synthesis = report["synthesis"]
    assert synthesis["papers"] == synthesis["cited_papers"] == 3
    assert synthesis["comparative_questions"] == 0 and synthesis["plain_words"] == 0
    assert synthesis["follow_up_papers"] == []
    checks = checks_of(report)
    steps = {
        "cross_paper_questions": ["The cross-paper questions did not run: "],
        "relationship_analysis": [
            f"The follow-up questions for {paper} did not run: "
            for paper in ("bio.a1", "bio.b2", "bio.c3")
        ],
        "plain_summary": ["The plain-language summary did not run: "],
    }
    page, markdown = outputs(report)
    err = capsys.readouterr().err
    for asset, lines in steps.items():
        check = checks[(asset, "optional_step")]
        assert (check["passed"], check["severity"]) == (False, "warn")
        assert check["description"].count("(401)") == len(lines)
        for line in lines:
            assert line in check["description"] and line in page and line in markdown
        assert f"  check {asset}/optional_step: FAILED (warn): {check['description']}" in err
    assert html.escape(checks[("cross_paper_questions", "optional_step")]["description"]) in page
    # The expert synthesis' own checks pass as before.
    assert "Steps not run" in page and "## Not run" in markdown
    assert checks[("synthesis", "coverage")]["passed"]
    assert checks[("synthesis", "citation_validity")]["passed"]
    plain = Path(synthesis["outputs"]["plain.md"]).read_text("utf-8")
    assert "The plain-language summary did not run: " in plain
    # Its own checks could not run: skipped (neither passed nor failed), each saying why.
    for name in ("coverage", "citation_validity", "support", "coherence"):
        check = checks[("plain_summary", name)]
        assert check["passed"] is None
        assert check["description"].startswith("The plain-language summary did not run")
        assert f"  check plain_summary/{name}: skipped: {check['description']}" in err


@pytest.mark.slow  # a whole `litpipe run`
def test_a_paper_the_provider_refuses_is_left_out_and_the_others_get_their_synthesis(
    tmp_path: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every request quoting one paper is refused (400): its answers fail, and so do the
    comparative questions that quote it; the other two papers get their synthesis and page,
    which name the paper left out and the step not run, each with why."""
    serve_every_agent(stub_llm)
    monkeypatch.setenv("LITPIPE_LLM__AGENTS", json.dumps({"answers": {"model": "openai/stub"}}))
    monkeypatch.setenv("LITPIPE_SYNTHESIS__CROSS_PAPER_QUESTIONS", "4")  # off by default
    stub_llm.fail_next("bad_request", 1000, marker=REFUSED)
    table = abstract_table(tmp_path / "papers")

    code, report = run(
        tmp_path / "home", tiny_model, str(table), "--collection", "bio", "--api-base", stub_llm.url
    )

    assert code == 0 and report["collection_failure"] is None
    (failed,) = report["failed_papers"]
    assert failed["paper_id"] == "bio.b2" and REFUSAL in failed["reason"]
    synthesis = report["synthesis"]
    assert synthesis["papers"] == 2
    (left_out,) = synthesis["left_out"]
    assert left_out == {"paper_id": "bio.b2", "reason": f"its own run failed: {failed['reason']}"}
    page, markdown = outputs(report)
    assert "Papers left out" in page and html.escape(left_out["reason"]) in page
    assert left_out["reason"] in markdown
    comparative = checks_of(report)[("cross_paper_questions", "optional_step")]
    assert not comparative["passed"] and REFUSAL in comparative["description"]
    assert html.escape(comparative["description"]) in page


def test_a_paper_whose_model_stages_fail_is_left_out_of_the_notebook_chain(
    tmp_path: Path, tiny_model: Path, stub_llm: StubLLM
) -> None:
    """`pipeline.run`, as a notebook calls it: the refused paper is left out with why, and the
    synthesis is written from the two others."""
    serve_every_agent(stub_llm)
    stub_llm.fail_next("bad_request", 1000, marker=REFUSED)
    settings = stub_settings(
        tmp_path / "home",
        stub_llm,
        llm={"model": None, "agents": {"answers": {"model": "openai/stub"}}},
        ingest={"embedder": str(tiny_model)},
        synthesis={"cross_paper_questions": 4},  # off by default
    )
    table = abstract_table(tmp_path / "papers")

    result = pipeline.run(discover(table, "bio"), settings_groups(settings))

    (left_out,) = result.left_out
    assert left_out.paper_id == "bio.b2"
    assert left_out.reason.startswith("its own run failed: ") and REFUSAL in left_out.reason
    assert [paper.answers.paper_id for paper in result.papers] == ["bio.a1", "bio.c3"]
    assert result.synthesis.papers == ["bio.a1", "bio.c3"]
    assert result.synthesis.left_out == [left_out]
    assert {citation.paper_id for citation in result.synthesis.citations} == {"bio.a1", "bio.c3"}
    assert result.cross_paper_questions.not_run is not None
    assert result.cross_paper_questions.answers == []


def test_a_thin_paper_whose_follow_ups_fail_keeps_its_insights_and_the_others_are_asked(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    serve_every_agent(stub_llm)
    stub_llm.fail_next("bad_request", 10, marker=TITLES[PLM])
    settings = stub_settings(
        tmp_path,
        stub_llm,
        llm={"model": None, "agents": {"followups": {"model": "openai/stub"}}},
        synthesis={"min_insights_per_paper": 99, "follow_up_questions": 2},  # off by default
    )
    abstracts = {
        paper: PaperAbstract(
            paper_id=paper, title=title, abstract=title, source="parsed", engine="parsed"
        )
        for paper, title in TITLES.items()
    }
    asked: list[str] = []

    def follow_up(paper_id: str, questions: list[Question]) -> list[Answer]:
        asked.append(paper_id)
        return []

    analysis = analyse(
        "variants",
        ANSWERS,
        None,
        abstracts,
        follow_up,
        settings.synthesis,
        Asker(settings.llm, LLMClient(settings.llm, settings.paths, UsageLedger())),
    )

    (failed,) = analysis.follow_ups_not_run
    assert (failed.step, failed.paper_id) == ("follow_up_questions", PLM)
    assert REFUSAL in failed.reason and "\n" not in failed.reason
    assert (
        [item.paper_id for item in analysis.follow_ups] == asked == [p for p in PAPERS if p != PLM]
    )
    assert {insight.paper_id for insight in analysis.insights} >= set(PAPERS)


def test_a_plain_summary_the_model_fails_is_empty_and_says_why(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    stub_llm.fail_next("unauthorized", 10)
    settings = stub_settings(tmp_path, stub_llm)
    analysis = make_analysis()
    offline = Settings(home=tmp_path)
    expert = write_synthesis(
        analysis,
        ANSWERS,
        None,
        TITLES,
        offline.synthesis,
        offline.ingest,
        offline.paths,
        Asker(offline.llm),
    )

    written = plain_summary(
        analysis,
        expert,
        TITLES,
        Asker(settings.llm, LLMClient(settings.llm, settings.paths, UsageLedger())),
    )

    assert written.audience == "plain" and written.text == "" and written.citations == []
    assert written.papers == PAPERS
    assert isinstance(written.not_run, StepNotRun) and written.not_run.step == "plain_summary"
    assert "(401)" in written.not_run.reason
    assert written.not_run.line().startswith("The plain-language summary did not run: ")


def test_a_programming_error_in_an_optional_step_is_not_taken_for_a_model_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise TypeError("a bug")

    monkeypatch.setattr("litpipe.workflows.plain_summary.write_plain_summary", broken)
    analysis = make_analysis()
    settings = Settings(home=tmp_path)
    expert = write_synthesis(
        analysis,
        ANSWERS,
        None,
        TITLES,
        settings.synthesis,
        settings.ingest,
        settings.paths,
        Asker(settings.llm),
    )
    with pytest.raises(TypeError, match="a bug"):
        plain_summary(analysis, expert, TITLES, Asker(settings.llm))
