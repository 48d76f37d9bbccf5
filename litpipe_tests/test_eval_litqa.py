"""`litpipe eval litqa`: the answer judge (does a summary state the ideal answer or a
distractor?), offline and through the stub model, and the command end to end on two LitQA2
questions and their bundled papers (the tiny local embedder), its figures reported as a
materialization of `eval_litqa`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import dagster as dg
import pytest

from litpipe.agents.answer_judge import judge_answers
from litpipe.agents.asker import Asker
from litpipe.cli import main
from litpipe.evaluation.litqa import LitQAEvaluation, LitQAQuestion, read_questions
from litpipe.extractive.answer_judge import AnswerJudgeInput, offline_verdict
from litpipe.llm.client import LLMClient
from litpipe.llm.usage import UsageLedger
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.homes import home_instance
from litpipe_tests.stub_llm import StubLLM, stub_settings

LITQA2 = Path(__file__).parent / "data" / "litqa2" / "litqa2_subset_with_pdfs.jsonl"


def _inputs(summary: str, ideal: str, distractors: list[str]) -> AnswerJudgeInput:
    return AnswerJudgeInput(
        question="Which one?", ideal=ideal, distractors=distractors, summary=summary
    )


@pytest.mark.parametrize(
    ("summary", "ideal", "distractors", "states_ideal", "stated"),
    [
        # Terms are runs of letters and digits: a mutation stays one term, order matters.
        ("The K548R mutant lost activity.", "K548R", ["R548K", "K547R"], True, []),
        ("Only R548K was tested.", "K548R", ["R548K"], False, ["R548K"]),
        # Every term of the answer must be there, in any order, plurals folded.
        (
            "Fusing Cas9 to hExo1 through an XTEN linker (CXE) raised deletion rates.",
            "CXE (Cas9-XTEN-hExo1)",
            ["EXC (hExo1-XTEN-Cas9)"],
            True,
            [],
        ),
        (
            "Microcins V and H47 were both secreted.",
            "Microcin V",
            ["Microcin H47"],
            True,
            ["Microcin H47"],
        ),
        ("The strain flocculates.", "Flocculation", ["Fermentation"], False, []),
    ],
)
def test_the_rule_wants_every_content_term_of_the_answer(
    summary: str, ideal: str, distractors: list[str], states_ideal: bool, stated: list[str]
) -> None:
    verdict = offline_verdict(_inputs(summary, ideal, distractors))
    assert verdict.states_ideal is states_ideal
    assert verdict.stated_distractors == stated


def test_a_distractor_within_the_ideal_answer_is_not_counted() -> None:
    inputs = _inputs(
        "It shifts the equilibrium to a super-open state.",
        "Shift equilibrium to super-open state",
        ["Shift equilibrium"],
    )
    verdict = offline_verdict(inputs)
    assert verdict.states_ideal and verdict.stated_distractors == []


def test_a_model_judge_keeps_only_the_listed_distractors(tmp_path: Path, stub_llm: StubLLM) -> None:
    stub_llm.respond(
        "stub-judge",
        lambda body: {
            "states_ideal": False,
            "stated_distractors": ["UBM", "something else"],
            "reason": "It names UBM as the domain that matters.",
        },
    )
    settings = stub_settings(
        tmp_path,
        stub_llm,
        llm={"model": None, "agents": {"answer_judge": {"model": "openai/stub-judge"}}},
    )
    inputs = _inputs("The UBM domain matters most.", "DTD", ["BRCT", "UBM"])
    client = LLMClient(settings.llm, settings.paths, UsageLedger())
    (verdict,) = judge_answers([inputs], Asker(settings.llm, client))
    assert not verdict.states_ideal and verdict.stated_distractors == ["UBM"]
    user = stub_llm.requests[0]["messages"][-1]["content"]
    assert "The UBM domain matters most." in user and "- BRCT" in user


@pytest.mark.slow
def test_eval_litqa_grades_each_question_and_reports_the_materialization(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for pdf in PDFS_BY_SIZE[:2]:
        shutil.copy(pdf, corpus)
    questions = read_questions(LITQA2, LitQAQuestion)
    chosen = [q for q in questions if q.pdf_file in {pdf.name for pdf in PDFS_BY_SIZE[:2]}]
    assert len(chosen) == 2
    dataset = tmp_path / "litqa.jsonl"
    dataset.write_text("".join(q.model_dump_json() + "\n" for q in chosen), "utf-8")
    home = tmp_path / "home"
    command = ["eval", "litqa", "--dataset", str(dataset), "--corpus", str(corpus)]
    assert main([*command, "--home", str(home), "--embedder", str(tiny_model)]) == 0

    *table, last = capsys.readouterr().out.strip().splitlines()
    figures = json.loads(last)
    assert figures["examples"] == 2 and figures["engine"] == "offline"
    evaluation = LitQAEvaluation.model_validate_json(
        (home / "outputs" / "eval" / "litqa_eval.json").read_text()
    )
    assert figures["ideal_share"] == round(evaluation.ideal_share, 4)
    text = "\n".join(table)
    for question, row in zip(chosen, evaluation.per_question, strict=True):
        # One row per question: id, paper, iterations, whether the ideal answer is stated.
        assert row.question_id == question.id and row.ideal == question.ideal
        assert re.search(
            rf"^\| {question.id} \| {question.pdf_file[:-4]} \| {row.iterations} \| ", text, re.M
        )
        verdict = "yes" if row.states_ideal else "no"
        assert f"| {verdict} ({question.ideal}) |" in text
    # Reported to the instance as a materialization of the external asset, figures as floats.
    records = (
        home_instance(home)
        .fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey("eval_litqa")), 5)
        .records
    )
    assert len(records) == 1
    metadata = records[0].asset_materialization.metadata
    assert isinstance(metadata["ideal_share"], dg.FloatMetadataValue)
    assert metadata["ideal_share"].value == evaluation.ideal_share
    assert metadata["examples"].value == 2
