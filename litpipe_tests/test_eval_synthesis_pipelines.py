"""`litpipe eval synthesis-pipelines`: X-Sum's pipeline 1 (flat) against pipeline 2
(relational) on the same papers' answers, offline and through the schema-driven stub, and the
command's table and its input errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from litpipe.cli import main
from litpipe.evaluation.synthesis_pipelines import PIPELINES, evaluate_synthesis_pipelines
from litpipe.settings.groups import settings_groups
from litpipe_tests.stub_llm import StubLLM, stub_settings

ICLR = Path(__file__).parents[1] / "corpora" / "iclr-abstracts-demo" / "iclr_abstracts_demo.csv"


def abstracts(folder: Path, rows: int) -> Path:
    """The first `rows` papers of the bundled ICLR abstracts, as a table of their own."""
    with ICLR.open(newline="", encoding="utf-8") as source:
        kept = [row for _, row in zip(range(rows), csv.DictReader(source), strict=False)]
    table = folder / f"iclr-{rows}.csv"
    with table.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=["id", "title", "abstract"])
        writer.writeheader()
        writer.writerows({key: row[key] for key in ("id", "title", "abstract")} for row in kept)
    return table


def test_offline_both_pipelines_are_graded_and_the_table_says_they_wrote_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    table = abstracts(tmp_path, 4)
    arguments = ["--dataset", str(table), "--limit", "3", "--out", str(out)]
    assert main(["eval", "synthesis-pipelines", *arguments, "--home", str(tmp_path / "h")]) == 0
    printed = capsys.readouterr().out
    figures = json.loads(printed.strip().splitlines()[-1])
    assert figures["examples"] == 3 and figures["engine"] == "offline"
    written = (out / "synthesis_pipelines.md").read_text()
    for pipeline in PIPELINES:
        assert f"| {pipeline} |" in written
        assert 0.0 < figures[f"{pipeline}_supported"] <= 1.0
        assert 0.0 <= figures[f"{pipeline}_completeness"] <= 1.0
        assert figures[f"{pipeline}_calls"] == 0.0 and f"{pipeline}_coherence" not in figures
    # Offline the flat writer is the relational one's engine: the table must not suggest a
    # difference that only a model's prose could make.
    assert "Both wrote the same text" in written
    saved = json.loads((out / "synthesis_pipelines.json").read_text())
    assert len({saved["pipelines"][p]["papers_cited"] for p in PIPELINES}) == 1


def test_through_a_model_each_pipeline_counts_its_own_synthesis_calls(tmp_path: Path) -> None:
    with StubLLM(schema_driven=True) as stub:
        settings = stub_settings(tmp_path / "h", stub)
        evaluation = evaluate_synthesis_pipelines(settings_groups(settings), abstracts(tmp_path, 3))
    flat, relational = (evaluation.pipelines[name] for name in ("flat", "relational"))
    assert evaluation.examples == 3 and evaluation.model == "openai/stub"
    assert flat.engine.startswith("openai/stub") and relational.engine.startswith("openai/stub")
    # Pipeline 1 is one writer's call; pipeline 2 the analysis' and its writer's at least.
    assert flat.calls == 1 and flat.tokens_in > 0
    assert relational.calls >= 2 and relational.tokens_in > flat.tokens_in
    for graded in (flat, relational):
        assert graded.coherence is not None and 1 <= graded.coherence <= 5
        assert 0.0 <= graded.supported + graded.partially_supported <= 1.0


def test_one_paper_is_refused_in_one_line_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    arguments = ["--dataset", str(abstracts(tmp_path, 1)), "--out", str(out)]
    assert main(["eval", "synthesis-pipelines", *arguments, "--home", str(tmp_path / "h")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("litpipe eval synthesis-pipelines: ") and "two papers" in line
    assert not out.exists()
