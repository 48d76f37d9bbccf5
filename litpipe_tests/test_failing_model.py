"""A failing model never blocks a collection, and its failures do not outlive the fix.

`litpipe run` on a small table against the local stub server, misbehaving as servers do: one
that answers every agent but the coherence judge (prose for it), one whose every reply is 200 kB
of text that is not JSON. The collection is written all the same, exit 0, its coherence check
skipped with why. Then the same command pointed at a working server (another address) asks
again exactly the items the offline engine wrote in the failing one's place, with no cache flag;
and a rerun asks nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from litpipe.cli import main
from litpipe.schemas import RunReport
from litpipe_tests.stub_agents import answer_as_agent, serve_every_agent
from litpipe_tests.stub_llm import StubLLM, requested_schema
from litpipe_tests.test_model_server_faults import small_table

pytestmark = pytest.mark.xdist_group("failing_model")

COLLECTION = "failing"
# A phrase of the coherence judge's system prompt only.
COHERENCE_PROMPT = "You grade the coherence of a text"
PROSE = "This text reads as one clear argument, I would give it four out of five."


def run(home: Path, table: Path, stub: StubLLM, embedder: Path) -> RunReport:
    arguments = ["run", str(table), "--collection", COLLECTION, "--home", str(home)]
    model = ["--model", "openai/stub", "--api-base", stub.url, "--embedder", str(embedder)]
    assert main([*arguments, *model]) == 0
    report = home / "outputs" / COLLECTION / "report.json"
    return RunReport.model_validate_json(report.read_text("utf-8"))


def agent_of(body: dict[str, Any]) -> str:
    """The reply schema a request asks for: which agent asked."""
    return str((requested_schema(body) or {}).get("title", "?"))


def asked(stub: StubLLM) -> Counter[str]:
    return Counter(agent_of(body) for body in stub.requests)


def coherence_checks(report: RunReport) -> list[Any]:
    assert report.synthesis is not None
    return [check for check in report.synthesis.checks if check.check == "coherence"]


def test_a_coherence_judge_answering_prose_leaves_the_collection_written_its_check_skipped(
    tmp_path: Path, tiny_model: Path
) -> None:
    with StubLLM() as stub:
        stub.respond(COHERENCE_PROMPT, lambda body: PROSE)
        serve_every_agent(stub)
        report = run(tmp_path / "home", small_table(tmp_path / "t.csv", 3), stub, tiny_model)
        assert asked(stub)["CoherenceReply"] > 0

    outputs = tmp_path / "home" / "outputs" / COLLECTION
    assert (outputs / "synthesis.md").read_text("utf-8").startswith("# ")
    assert (outputs / "synthesis.html").exists() and (outputs / "plain.md").exists()
    checks = coherence_checks(report)
    assert checks and all(check.passed is None for check in checks)
    assert all("not graded" in check.description for check in checks)
    assert all("offline fallback" in check.description for check in checks)


def test_a_server_answering_200_kb_of_text_leaves_every_output_written_and_says_so(
    tmp_path: Path, tiny_model: Path
) -> None:
    flood = "Not JSON at all. " * (200_000 // 17)
    with StubLLM() as stub:
        stub.respond("stub", lambda body: flood)
        report = run(tmp_path / "home", small_table(tmp_path / "t.csv", 3), stub, tiny_model)

    outputs = tmp_path / "home" / "outputs" / COLLECTION
    assert report.synthesis is not None and report.papers == 3 and not report.failed_papers
    assert all(check.passed is None for check in coherence_checks(report))
    synthesis = (outputs / "synthesis.md").read_text("utf-8")
    page = (outputs / "synthesis.html").read_text("utf-8")
    for shown in (synthesis.split("\n## ", 1)[0], (outputs / "plain.md").read_text("utf-8"), page):
        assert "in the model&#x27;s place" in shown or "in the model's place" in shown
    assert report.llm_calls_by_agent["answers"].fallbacks > 0


def test_after_a_failing_server_a_working_one_is_asked_only_what_fell_back_then_nothing(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, table = tmp_path / "home", small_table(tmp_path / "t.csv", 3)
    with StubLLM() as failing:
        failing.respond(
            "You answer a question about scientific papers using only", lambda body: PROSE
        )
        failing.respond("stub", answer_as_agent)
        first = run(home, table, failing, tiny_model)
        first_asked = asked(failing)
    fell_back = first.llm_calls_by_agent["answers"].fallbacks
    assert fell_back > 0
    capsys.readouterr()
    assert main(["status", "--home", str(home)]) == 0
    status = capsys.readouterr().out
    assert f"written offline in the model's place: {fell_back} in paper_answers;" in status
    assert "asks them again" in status
    assert all(
        usage.fallbacks == 0
        for agent, usage in first.llm_calls_by_agent.items()
        if agent != "answers"
    )

    with StubLLM() as working:
        serve_every_agent(working)
        second = run(home, table, working, tiny_model)
        second_asked = asked(working)
    assert second.llm_calls_by_agent["answers"].fallbacks == 0
    # Every answer that fell back asked once more; nothing asked again of what did not fall
    # back upstream of it (the questions, the abstracts): their replies are cached.
    assert second_asked["AnswerReply"] == fell_back
    assert second_asked["QuestionsReply"] == 0 and first_asked["QuestionsReply"] > 0

    with StubLLM() as again:
        serve_every_agent(again)
        third = run(home, table, again, tiny_model)
        assert again.request_count == 0, json.dumps(asked(again))
    assert third.llm_calls.get("made", 0) == 0
    capsys.readouterr()
    assert main(["status", "--home", str(home)]) == 0
    assert "in the model's place" not in capsys.readouterr().out
