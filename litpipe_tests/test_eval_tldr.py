"""`litpipe eval tldr`: the `tldr` agent's offline engine, the multi-gold ROUGE, and the command on
six papers of SciTLDR-A's test split (`litpipe_tests/data/scitldr/`); a model route through the
local stub."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from litpipe.cli import main
from litpipe.evaluation.tldr import TldrEvaluation, best_of_golds, evaluate_tldr, read_examples
from litpipe.extractive.tldr import TldrInput, offline_tldr
from litpipe.settings.groups import settings_groups
from litpipe.text import sentences
from litpipe_tests.homes import home_instance
from litpipe_tests.stub_llm import StubLLM, stub_settings

SAMPLE = Path(__file__).parent / "data" / "scitldr" / "scitldr_a_test_sample.jsonl"


def test_offline_tldr_is_the_central_sentence_that_names_the_title() -> None:
    abstract = (
        "Deep networks are widely used. "
        "We propose sparse attention for long documents, which cuts the cost of attention. "
        "Sparse attention keeps accuracy on long documents. "
        "The weather was sunny."
    )
    inputs = TldrInput(title="Sparse Attention for Long Documents", abstract=abstract)
    assert offline_tldr(inputs).tldr == (
        "We propose sparse attention for long documents, which cuts the cost of attention."
    )
    # With no title to lean on it is still a sentence of the abstract, never the off-topic one.
    untitled = offline_tldr(TldrInput(title="", abstract=abstract)).tldr
    assert untitled in {span.text for span in sentences(abstract)}
    assert untitled != "The weather was sunny."


def test_several_golds_score_by_the_gold_with_the_best_rouge1() -> None:
    golds = ["Cats sleep all day long.", "We propose a fast sorting algorithm."]
    scores, best = best_of_golds("We propose a fast sorting algorithm.", golds)
    assert best == 1 and scores.rouge1 == pytest.approx(1.0) and scores.rougeL == 1.0


def test_eval_tldr_command_on_six_test_papers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    arguments = ["--dataset", str(SAMPLE), "--out", str(out), "--home", str(tmp_path / "home")]
    assert main(["eval", "tldr", *arguments]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    figures = json.loads(printed[-1])
    assert figures["examples"] == 6 and figures["engine"] == "offline"
    for system in ("litpipe", "lead_1", "textrank_1"):
        assert 0.0 < figures[f"{system}_rouge1"] <= 1.0
    evaluation = TldrEvaluation.model_validate_json((out / "tldr_eval.json").read_text())
    papers = {p.paper_id: p for p in read_examples(SAMPLE)}
    for result in evaluation.per_example:
        # Offline, every system's TL;DR is one sentence of the paper's own abstract.
        abstract = {" ".join(s.text.split()) for s in sentences(papers[result.paper_id].abstract)}
        assert set(result.outputs.values()) <= abstract
    table = (out / "tldr_eval.md").read_text()
    assert "| lead-1 |" in table and "| textrank-1 |" in table and "6 papers" in table


def test_a_model_route_asks_the_model_once_per_paper(tmp_path: Path, stub_llm: StubLLM) -> None:
    stub_llm.respond("stub-tldr", lambda body: {"tldr": "A model wrote this one sentence."})
    settings = stub_settings(
        tmp_path, stub_llm, llm={"model": None, "agents": {"tldr": {"model": "openai/stub-tldr"}}}
    )
    evaluation = evaluate_tldr(settings_groups(settings), SAMPLE, limit=2)
    assert evaluation.engine == "openai/stub-tldr" and evaluation.model == "openai/stub-tldr"
    assert [r.outputs["litpipe"] for r in evaluation.per_example] == [
        "A model wrote this one sentence."
    ] * 2
    assert stub_llm.request_count == 2
    # Each paper's title and abstract are in its prompt (the batch is sent concurrently).
    prompts = [json.dumps(request["messages"]) for request in stub_llm.requests]
    assert any("FearNet: Brain-Inspired" in p and "catastrophic forgetting" in p for p in prompts)


def test_a_bad_line_is_refused_with_its_number(tmp_path: Path) -> None:
    dataset = tmp_path / "bad.jsonl"
    dataset.write_text(SAMPLE.read_text().splitlines()[0] + "\n{}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.jsonl line 2"):
        read_examples(dataset)


def test_through_its_asset_the_model_calls_count_in_the_runs_usage(
    tmp_path: Path, stub_llm: StubLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `litpipe eval tldr` with a model: the step's client makes the calls, so the
    # materialization says what they cost, as every other model step does.
    stub_llm.respond("stub-tldr", lambda body: {"tldr": "A model wrote this one sentence."})
    monkeypatch.setenv("LITPIPE_LLM__AGENTS", json.dumps({"tldr": {"model": "openai/stub-tldr"}}))
    home = tmp_path / "home"
    arguments = ["--dataset", str(SAMPLE), "--limit", "2", "--home", str(home)]
    assert main(["eval", "tldr", *arguments, "--api-base", stub_llm.url]) == 0

    records = (
        home_instance(home)
        .fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey("eval_tldr")), limit=1)
        .records
    )
    metadata = records[0].asset_materialization.metadata
    assert metadata["engine"].value == "openai/stub-tldr"
    assert metadata["llm_made"].value == stub_llm.request_count == 2
