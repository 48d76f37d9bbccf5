"""`litpipe eval scholarqa-answer-modes`: single-view, multi-view and multi-view answers written
from the same passages of ScholarQABench questions, offline and through the local stub, and the
command's table. A hashed bag of words stands in for MiniLM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import litpipe.evaluation.scholarqa_answer_modes as answer_modes
import litpipe.workflows.related_work as workflow
from litpipe.cli import main
from litpipe.evaluation.scholarqa import collection, read_examples
from litpipe.evaluation.scholarqa_answer_modes import MODES, evaluate_answer_modes
from litpipe.schemas import AnswerMode, QuestionEvidence
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe.text import markers_in
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.stub_llm import StubLLM, stub_settings

DATA = Path(__file__).parent / "data" / "scholarqa" / "scholarqa_multi_first20.jsonl"


@pytest.fixture(autouse=True)
def fake_dense_retrieval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workflow, "load_embedder", lambda ingest, paths: FakeEmbedder())


def recorded_passages(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[list[str]]]:
    """Each mode's passages (chunk ids, in order) per question, as the answering saw them."""
    seen: dict[str, list[list[str]]] = {}
    answer = answer_modes.answer_questions

    def recording(items: list[QuestionEvidence], mode: AnswerMode, *rest: Any) -> Any:
        seen[mode] = [[c.chunk_id for c in i.chunks] for i in items]
        return answer(items, mode, *rest)

    monkeypatch.setattr(answer_modes, "answer_questions", recording)
    return seen


def assert_citations_name_snippets(evaluation: answer_modes.AnswerModesEvaluation) -> None:
    examples = {e.id: e for e in read_examples(DATA)}
    for result in evaluation.per_example:
        snippets = collection(examples[result.id])
        passages = {f"{s.paper_id}:{s.number}" for s in snippets}
        for mode in MODES:
            for paper_id in result.cited_papers[mode]:
                assert any(p.startswith(f"{paper_id}:") for p in passages)
            assert result.words[mode] <= result.budget_words


@pytest.mark.slow
def test_offline_the_three_modes_answer_from_the_same_passages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = recorded_passages(monkeypatch)
    evaluation = evaluate_answer_modes(settings_groups(Settings(home=tmp_path)), DATA, limit=4)
    assert set(seen) == set(MODES)
    assert seen["single"] == seen["multi_view"] == seen["multi_view_answers"]
    assert evaluation.engine == "offline" and evaluation.model is None
    assert evaluation.calls_per_question == dict.fromkeys(MODES, 0)
    assert_citations_name_snippets(evaluation)
    for mode in MODES:
        assert 0.0 < evaluation.means[mode].rouge1 < 1.0
        assert 0.0 < evaluation.citations[mode].recall <= 1.0
        # Offline every sentence is a snippet's own, cited: nothing outside the question's papers.
        assert evaluation.citations[mode].precision > 0.0


@pytest.mark.slow
def test_with_the_stub_every_mode_asks_its_calls_and_keeps_citations_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = recorded_passages(monkeypatch)
    with StubLLM(schema_driven=True) as stub:
        settings = stub_settings(tmp_path, stub)
        evaluation = evaluate_answer_modes(settings_groups(settings), DATA, limit=1)
        requests = len(stub.requests)
    assert evaluation.calls_per_question == {
        "single": 1,
        "multi_view": 4,
        "multi_view_answers": 7,
    }
    # Run one after the other, multi-view answers find the three views multi-view asked for
    # in the model cache: the same passages give the same requests.
    assert requests == 1 + 4 + (7 - 3)
    assert evaluation.engine == "openai/stub" and evaluation.model == "openai/stub"
    assert seen["single"] == seen["multi_view"] == seen["multi_view_answers"]
    assert_citations_name_snippets(evaluation)
    examples = {e.id: e for e in read_examples(DATA, limit=1)}
    for result in evaluation.per_example:
        snippets = collection(examples[result.id])
        passages = {(s.paper_id, s.number) for s in snippets}
        for mode in MODES:
            # Whatever the stub invented, the markers left are the question's snippets.
            written = result.answers[mode]
            assert set(markers_in(written)) <= passages, written


@pytest.mark.slow
def test_eval_scholarqa_answer_modes_command_prints_one_row_per_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    arguments = ["--dataset", str(DATA), "--limit", "2", "--out", str(out)]
    assert main(["eval", "scholarqa-answer-modes", *arguments, "--home", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    figures = json.loads(printed.strip().splitlines()[-1])
    assert figures["examples"] == 2 and figures["engine"] == "offline"
    table = (out / "scholarqa_answer_modes.md").read_text()
    for mode in MODES:
        assert f"| {mode} |" in table and f"| {mode} |" in printed
        assert 0.0 < figures[f"{mode}_rouge1"] <= 1.0
