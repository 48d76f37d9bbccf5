"""The evaluation asset group: each `litpipe eval` dataset is an asset of group "evaluation" whose
materializations keep its figures as float metadata (what the UI plots over time), and the CLI
materializes it in-process into the instance the UI serves. Related work on a tiny synthetic
dataset in CiteBench's format stands for all (no model: a hashed bag of words stands in for
MiniLM)."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

import litpipe.workflows.related_work as workflow
from litpipe.cli import main
from litpipe.defs.definitions import build_definitions
from litpipe.evaluation.registry import EVALUATIONS
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.homes import home_instance

RELATED_WORK = dg.AssetKey("eval_related_work")


def _write_dataset(path: Path, extra_line: str = "") -> Path:
    rows = [
        {
            "idx": index,
            "query_abstract": f"We propose a graph network for molecule {topic}.",
            "ref_abstracts": [
                f"Graph neural networks learn molecule representations. They predict {topic}.",
                "Transformers attend over tokens. They scale to long sequences.",
            ],
            "gold_related_work": f"Graph neural networks [0] learn molecule representations "
            f"and predict {topic}. Transformers [1] attend over tokens and scale to long "
            "sequences.",
        }
        for index, topic in enumerate(["solubility", "toxicity"])
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + extra_line, encoding="utf-8")
    return path


@pytest.fixture
def fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workflow, "load_embedder", lambda ingest, paths: FakeEmbedder())


def test_every_registered_evaluation_is_an_asset_of_the_evaluation_group(tmp_path: Path) -> None:
    graph = build_definitions(**settings_groups(Settings(home=tmp_path))).resolve_asset_graph()
    for entry in EVALUATIONS.values():
        node = graph.get(dg.AssetKey(entry.asset_name))
        assert node.group_name == "evaluation"
        # Those the command runs itself (nested runs) are reported, not launched from the UI.
        assert node.is_executable == (entry.evaluate is not None)
    assert {"related-work", "tldr", "litqa"} <= set(EVALUATIONS)


def test_two_cli_runs_leave_two_materializations_with_their_figures(
    tmp_path: Path, fake_embedder: None, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = _write_dataset(tmp_path / "tiny.jsonl")
    home = tmp_path / "home"
    arguments = ["eval", "related-work", "--dataset", str(dataset), "--home", str(home)]
    for limit in ("1", "2"):
        assert main([*arguments, "--limit", limit]) == 0
    printed = capsys.readouterr()
    assert "| litpipe |" in printed.out and "written: " in printed.err
    figures = json.loads(printed.out.strip().splitlines()[-1])
    assert figures["examples"] == 2 and figures["out"] == str(home / "outputs" / "eval")

    records = (
        home_instance(home)
        .fetch_materializations(dg.AssetRecordsFilter(asset_key=RELATED_WORK), limit=10)
        .records
    )
    assert len(records) == 2
    latest, first = (r.asset_materialization.metadata for r in records)
    assert first["examples"].value == 1 and latest["examples"].value == 2
    for metadata in (latest, first):
        for name in ("litpipe_rouge1", "lead_rouge2", "textrank_rougeL"):
            assert isinstance(metadata[name], dg.FloatMetadataValue)
            assert 0.0 <= metadata[name].value <= 1.0
        assert metadata["litpipe_rouge1"].value > 0.0
        assert metadata["engine"].value == "offline"
        assert "model" in metadata and "embedder" in metadata
        assert "| textrank |" in metadata["table"].value
    # The last run's figures are what the command printed.
    assert round(latest["litpipe_rouge1"].value, 4) == figures["litpipe_rouge1"]


@pytest.mark.parametrize(
    ("extra", "limit", "message"),
    [
        ("", "0", "--limit must be at least 1"),
        ("{not json\n", None, "tiny.jsonl"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    tmp_path: Path,
    fake_embedder: None,
    capsys: pytest.CaptureFixture[str],
    extra: str,
    limit: str | None,
    message: str,
) -> None:
    dataset = _write_dataset(tmp_path / "tiny.jsonl", extra)
    out = tmp_path / "out"
    arguments = ["eval", "related-work", "--dataset", str(dataset), "--out", str(out)]
    arguments += ["--home", str(tmp_path / "home")] + (["--limit", limit] if limit else [])
    assert main(arguments) == 2
    printed = capsys.readouterr()
    (line,) = printed.err.strip().splitlines()
    assert line.startswith("litpipe eval related-work: ") and message in line
    assert printed.out == "" and not out.exists()
