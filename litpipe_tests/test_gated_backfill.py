"""A gated embedder swap (issue 34, point 4): `litpipe backfill --embedder NEW --gate QRELS`
builds the new embedder's table beside the old one, scores both on judged queries, and makes
the new embedder the home's default (HOME/settings.toml) only if nDCG@10 holds; until then, and
when the gate fails, the old table serves every query.

The papers are the first abstracts of the bundled ICLR demo table; the judged queries, the
user's own pairs, are each paper's TL;DR (a sentence of SciTLDR's, not of the abstract) with the
table's id of its paper."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from litpipe.cli import main
from litpipe.evaluation.beir import BeirDataset
from litpipe.evaluation.embedder_gate import (
    RECORDED_QRELS,
    GateError,
    GateScore,
    decide,
    gate_qrels,
    load_gate_set,
    record_pair,
)
from litpipe.retrieval.store import ChunkStore
from litpipe.runtime import backfill as backfilling
from litpipe.settings import Settings
from litpipe.workflows.ingest import settings_embedder
from litpipe_tests.homes import home_instance
from litpipe_tests.variant_models import build_minilm_variant

DEMO = Path(__file__).resolve().parents[1] / "corpora" / "iclr-abstracts-demo"
PAPERS = 16
COLLECTION = "iclr"
# The home's default embedder: MiniLM under the default backend.
OLD = "all-MiniLM-L6-v2.torch-int8"


def demo_rows(count: int = PAPERS) -> list[dict[str, str]]:
    with (DEMO / "iclr_abstracts_demo.csv").open(encoding="utf-8", newline="") as table:
        return list(csv.DictReader(table))[:count]


def write_table(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as table:
        writer = csv.DictWriter(table, ["id", "title", "abstract"])
        writer.writeheader()
        writer.writerows({name: row[name] for name in ("id", "title", "abstract")} for row in rows)
    return path


def write_pairs(path: Path, rows: list[dict[str, str]]) -> Path:
    """The user's own qrels: a question and its relevant paper (the table's id) per line."""
    lines = [json.dumps({"question": row["tldr_first"], "paper": row["id"]}) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def serving_table(home: Path) -> str:
    """The table a query of this home searches: its default embedder's, as `litpipe ask`, the
    related work and the UI's code location resolve it."""
    settings = Settings(home=home)
    return ChunkStore.table_name(settings_embedder(settings.ingest, settings.paths).embedder_id)


def nearest(home: Path, query: str) -> list[str]:
    """The chunks a dense query of the home finds, from the table its settings serve."""
    settings = Settings(home=home)
    embedder = settings_embedder(settings.ingest, settings.paths)
    store = ChunkStore(home / "lancedb")
    rows = store.dense_search(embedder.embedder_id, embedder.encode([query])[0], 5)
    return [row["chunk_id"] for row in rows]


def last_json(out: str) -> dict[str, Any]:
    return json.loads(out.strip().splitlines()[-1])


def observed_gate(home: Path) -> tuple[str | None, dict[str, Any]]:
    """The latest observation of `corpus_index` (the UI's view of the gate): its partition and
    metadata values."""
    instance = home_instance(home)
    record = instance.fetch_observations(dg.AssetKey("corpus_index"), limit=1).records[0]
    observation = record.asset_observation
    assert observation is not None
    assert observation.description == "embedder gate of `litpipe backfill --gate`"
    return record.partition_key, {name: value.value for name, value in observation.metadata.items()}


def assert_observed(home: Path, gate: dict[str, Any]) -> None:
    """Both scores and the decision of the printed gate are on the collection's `corpus_index`."""
    partition, metadata = observed_gate(home)
    assert partition == COLLECTION
    assert metadata == {
        "old_embedder": gate["old"]["embedder"],
        "new_embedder": gate["new"]["embedder"],
        "old_ndcg_at_10": gate["old"]["ndcg_at_10"],
        "new_ndcg_at_10": gate["new"]["ndcg_at_10"],
        "old_recall_at_10": gate["old"]["recall_at_10"],
        "new_recall_at_10": gate["new"]["recall_at_10"],
        "drop": gate["drop"],
        "margin": gate["margin"],
        "passed": gate["passed"],
        "switched": gate["switched"],
        "decision": gate["decision"],
        "qrels": gate["qrels"],
        "queries": gate["queries"],
        "papers": gate["papers"],
    }


def test_the_gate_switches_the_default_only_when_ndcg_holds_and_the_old_table_serves_until_then(
    tmp_path: Path,
    tiny_model: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = demo_rows()
    table = write_table(tmp_path / "iclr.csv", rows)
    pairs = write_pairs(tmp_path / "pairs.jsonl", rows)
    home = tmp_path / "home"
    assert main(["run", str(table), "--collection", COLLECTION, "--home", str(home)]) == 0
    assert serving_table(home) == f"chunks__{OLD}"
    query = rows[0]["tldr_first"]
    before = nearest(home, query)

    # Qrels that judge none of the home's papers: refused before anything is built.
    stranger = tmp_path / "stranger.csv"
    stranger.write_text("question,paper\nwhat is it?,not-a-paper\n", encoding="utf-8")
    capsys.readouterr()
    gated = ["backfill", "--home", str(home), "--gate"]
    assert main([*gated, str(stranger), "--embedder", str(tiny_model)]) == 2
    assert "no query of stranger has a relevant paper" in capsys.readouterr().err
    assert main(["backfill", "--home", str(home), "--margin", "0.05"]) == 2
    assert "--margin goes with --gate" in capsys.readouterr().err

    # 1. A deliberately poor embedder (the tiny random model): the gate fails. While its table
    # fills, and after, queries are answered from MiniLM's table, as before.
    during: list[tuple[str, list[str]]] = []
    real_backfill = backfilling.backfill

    def watched(*args: Any, on_batch: Any, **kwargs: Any) -> backfilling.BackfillReport:
        def each(outcome: backfilling.BatchOutcome) -> None:
            on_batch(outcome)
            during.append((serving_table(home), nearest(home, query)))

        return real_backfill(*args, on_batch=each, **kwargs)

    monkeypatch.setattr(backfilling, "backfill", watched)
    tiny = Settings(home=home, ingest={"embedder": str(tiny_model)})
    tiny_id = settings_embedder(tiny.ingest, tiny.paths)
    assert main([*gated, str(pairs), "--embedder", str(tiny_model), "--batch", "8"]) == 3
    captured = capsys.readouterr()
    gate = last_json(captured.out)
    assert during == [(f"chunks__{OLD}", before)] * 2
    assert gate["switched"] is False and gate["queries"] == PAPERS
    assert gate["old"]["embedder"] == OLD and gate["new"]["embedder"] == tiny_id.embedder_id
    old_score, new_score = gate["old"]["ndcg_at_10"], gate["new"]["ndcg_at_10"]
    assert old_score > 0.5 and old_score - new_score > 0.01
    printed = captured.err
    assert f"gate: not switched: nDCG@10 drops by {old_score - new_score:.4f}" in printed
    assert f"({new_score:.4f} against {old_score:.4f})" in printed
    assert f"chunks__{OLD} serves every query" in printed
    assert "To make" not in printed  # the backfill's advice to switch by hand is the gate's now
    # The new table exists, holding every paper, and is not used.
    store = ChunkStore(home / "lancedb")
    assert store.count_rows(tiny_id.embedder_id) > 0
    assert serving_table(home) == f"chunks__{OLD}" and nearest(home, query) == before
    assert not (home / "settings.toml").exists()
    report = json.loads(
        (home / "outputs" / "backfill" / f"{tiny_id.embedder_id}.json").read_text("utf-8")
    )
    assert report["gate"] == gate and report["table"]["rows_after"] > 0
    report_file = home / "outputs" / "backfill" / f"{tiny_id.embedder_id}.json"
    assert f"gate: both scores are in {report_file} and on corpus_index in the UI" in printed
    # The UI shows the failed gate on the collection's index: both scores and the decision.
    assert_observed(home, gate)

    # 2. The same MiniLM saved as a folder (another embedder id, the same vectors): it scores
    # the same, so the gate passes and the folder becomes the home's default.
    monkeypatch.setattr(backfilling, "backfill", real_backfill)
    variant = build_minilm_variant(tmp_path / "models")
    assert main([*gated, str(pairs), "--embedder", str(variant)]) == 0
    captured = capsys.readouterr()
    gate = last_json(captured.out)
    assert gate["switched"] is True and gate["drop"] == 0.0
    assert gate["old"]["ndcg_at_10"] == gate["new"]["ndcg_at_10"] == old_score
    assert f"gate: switched: {gate['new']['embedder']} is the home's default" in captured.err
    assert_observed(home, gate)
    assert Settings(home=home).ingest.embedder == str(variant.resolve())
    assert serving_table(home) == gate["new"]["table"] != f"chunks__{OLD}"
    assert nearest(home, query) == before  # the same vectors find the same chunks
    assert main(["config", "--home", str(home)]) == 0
    config = capsys.readouterr().out
    (line,) = [line for line in config.splitlines() if line.startswith("ingest.embedder ")]
    assert line.endswith(f'= "{variant.resolve()}"  # home'), line

    # The switched-to embedder is the default now: a further gate against it is refused.
    assert main([*gated, str(pairs), "--embedder", str(variant)]) == 2
    assert "is the home's default already" in capsys.readouterr().err


def test_the_gate_reads_beir_folders_and_question_paper_tables_alike(tmp_path: Path) -> None:
    rows = demo_rows(3)
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": r["id"], "title": r["title"], "text": ""}) + "\n" for r in rows)
    )
    (beir / "queries.jsonl").write_text(
        "".join(
            json.dumps({"_id": f"q{n}", "text": r["tldr_first"]}) + "\n"
            for n, r in enumerate(rows, 1)
        )
    )
    (beir / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"q{n}\t{r['id']}\t1\n" for n, r in enumerate(rows, 1))
    )
    table = tmp_path / "pairs.csv"
    with table.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["question", "paper"])
        writer.writerows([r["tldr_first"], r["id"]] for r in rows)
    from_beir, from_table = load_gate_set(beir), load_gate_set(table)
    assert from_beir.queries == from_table.queries
    assert (
        from_beir.qrels
        == from_table.qrels
        == {f"q{n}": {r["id"]: 1} for n, r in enumerate(rows, 1)}
    )


def test_a_drop_of_exactly_the_margin_still_switches() -> None:
    dataset = BeirDataset(name="pairs", corpus={}, queries={"q1": "?"}, qrels={"q1": {"p": 1}})
    old = GateScore(embedder="a", table="chunks__a", ndcg_at_10=0.70, recall_at_10=0.9)
    switched: list[str] = []
    for score, expected in ((0.69, True), (0.6899, False), (0.75, True)):
        new = old.model_copy(update={"embedder": "b", "table": "chunks__b", "ndcg_at_10": score})
        gate = decide("pairs", dataset, 1, old, new, 0.01, lambda: switched.append("b"))
        assert gate.switched is expected, gate.decision
    assert switched == ["b", "b"]


def test_recorded_pairs_are_kept_once_and_read_as_a_gate_set(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert record_pair(home, "What does  Rev1 do?", "bio.rev1") is True
    # The same question spaced otherwise, of the same paper: kept once.
    assert record_pair(home, " What does Rev1\tdo? ", "bio.rev1") is False
    assert record_pair(home, "What does Rev1 do?", "bio.rev3") is True
    lines = [json.loads(line) for line in (home / RECORDED_QRELS).read_text("utf-8").splitlines()]
    assert [(line["question"], line["paper"]) for line in lines] == [
        ("What does Rev1 do?", "bio.rev1"),
        ("What does Rev1 do?", "bio.rev3"),
    ]
    assert all(line["recorded_at"] for line in lines)
    # `recorded_at` is no matter to the gate: one query, both papers relevant.
    recorded = load_gate_set(home / RECORDED_QRELS)
    assert recorded.queries == {"q1": "What does Rev1 do?"}
    assert recorded.qrels == {"q1": {"bio.rev1": 1, "bio.rev3": 1}}


def test_gate_recorded_names_the_homes_pairs_and_is_refused_while_there_are_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    given = tmp_path / "pairs.jsonl"
    assert gate_qrels(given, home) == given
    with pytest.raises(GateError, match="no pairs recorded yet: `litpipe ask --record`"):
        gate_qrels(Path("recorded"), home)
    assert main(["backfill", "--home", str(home), "--gate", "recorded"]) == 2
    assert "no pairs recorded yet: `litpipe ask --record` records them" in capsys.readouterr().err
    record_pair(home, "What does Rev1 do?", "bio.rev1")
    assert gate_qrels(Path("recorded"), home) == home / RECORDED_QRELS
