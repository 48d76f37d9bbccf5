"""nDCG@k and recall@k against hand-computed values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from litpipe.cli import main
from litpipe.evaluation.beir import METHODS, evaluate_retrieval, format_table
from litpipe.evaluation.ranking import ndcg_at_k, recall_at_k
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.conftest import FakeEmbedder


def test_ndcg_with_graded_judgements() -> None:
    qrels = {"d1": 2, "d2": 1, "d9": 0}
    # Gains 0, 2, 1 at ranks 1-3: DCG = 2/log2(3) + 1/log2(4); ideal 2, 1: 2 + 1/log2(3).
    expected = (2 / math.log2(3) + 1 / 2) / (2 + 1 / math.log2(3))
    assert ndcg_at_k(["d9", "d1", "d2"], qrels, 10) == pytest.approx(expected)
    assert ndcg_at_k(["d1", "d2", "x"], qrels, 10) == pytest.approx(1.0)
    # Cut at 1: only the top document counts.
    assert ndcg_at_k(["d2", "d1"], qrels, 1) == pytest.approx(1 / 2)


def test_ndcg_without_relevant_documents_is_zero() -> None:
    assert ndcg_at_k(["a", "b"], {}, 10) == 0.0
    assert ndcg_at_k(["a", "b"], {"a": 0}, 10) == 0.0
    assert ndcg_at_k([], {"a": 1}, 10) == 0.0


def test_recall_counts_relevant_documents_in_the_cut() -> None:
    qrels = {"d1": 1, "d2": 1, "d3": 2, "d4": 0}
    assert recall_at_k(["d1", "x", "d3", "d4"], qrels, 2) == pytest.approx(1 / 3)
    assert recall_at_k(["d1", "x", "d3", "d4"], qrels, 10) == pytest.approx(2 / 3)
    assert recall_at_k(["x"], {}, 10) == 0.0


def write_beir(folder: Path) -> None:
    documents = {
        "d1": ("Aspirin and heart attacks", "Aspirin lowers the risk of myocardial infarction."),
        "d2": ("IL-6 in arthritis", "IL-6 signalling drives inflammation in arthritis."),
        "d3": ("Protein folding", "Deep learning predicts protein structure from sequence."),
    }
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n"
            for doc_id, (title, text) in documents.items()
        )
    )
    queries = {"q1": "aspirin myocardial infarction", "q2": "IL-6 arthritis", "q3": "unjudged"}
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": qid, "text": text}) + "\n" for qid, text in queries.items())
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")


def test_beir_evaluation_embeds_the_corpus_once(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    dataset = tmp_path / "tiny"
    write_beir(dataset)
    settings = Settings(home=tmp_path / "home")
    first = evaluate_retrieval(
        settings_groups(settings), dataset, "test", METHODS, embedder=fake_embedder
    )
    assert first.collection == "beir-tiny" and first.documents == 3
    assert first.embedded_chunks == first.chunks > 0
    assert [result.method for result in first.results] == list(METHODS)
    for result in first.results:
        assert result.queries == 2
        assert result.ndcg_at_10 == pytest.approx(1.0)
        assert result.recall_at_100 == pytest.approx(1.0)
    second = evaluate_retrieval(
        settings_groups(settings), dataset, "test", ("bm25",), embedder=fake_embedder
    )
    assert second.embedded_chunks == 0
    assert "bm25" in format_table(second)
    with pytest.raises(ValueError):
        evaluate_retrieval(
            settings_groups(settings), dataset, "test", ("splade",), embedder=fake_embedder
        )


def test_cli_rejects_an_unknown_method(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    dataset = tmp_path / "tiny"
    write_beir(dataset)
    argv = ["eval", "retrieval", "--dataset", str(dataset), "--methods", "bm25,splade"]
    assert main([*argv, "--home", str(tmp_path / "home")]) == 2
    assert "splade" in capsys.readouterr().err
