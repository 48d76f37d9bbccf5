"""`litpipe eval retrieval` as a user runs it, on the dataset the tests bundle; and its reranked
methods: only the top candidates are reordered, the rest of the hybrid ranking stays below them,
and a reranker that cannot run is a usage error."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args

import pytest

from litpipe.cli import main
from litpipe.evaluation.beir import (
    RERANKED_METHODS,
    _RerankedHybrid,
    evaluate_retrieval,
    format_table,
)
from litpipe.retrieval.rerank import fallback, ranked
from litpipe.schemas import RetrievedChunk
from litpipe.settings import RetrievalSettings, Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.test_evaluation_ranking import write_beir
from litpipe_tests.test_rerank import PASSAGES, build_tiny_cross_encoder, make_candidates

# Eight abstracts and five judged queries, each naming its document's terms (beir-tiny/ATTRIBUTION).
BEIR_TINY = Path(__file__).parent / "data" / "beir-tiny"


def test_the_command_prints_each_method_s_figures_and_embeds_the_corpus_once(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The embedder the settings name, built by the command as `litpipe eval retrieval` does
    # without --embedder (a local model here, MiniLM by default).
    argv = ["eval", "retrieval", "--dataset", str(BEIR_TINY), "--split", "test"]
    argv += ["--home", str(tmp_path / "home"), "--embedder", str(tiny_model)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    header, columns, *rows = printed.splitlines()
    assert re.fullmatch(
        r"beir-tiny test: 5 queries, 8 documents, (\d+) chunks \(\1 embedded now\), .+", header
    ), header
    assert columns.split() == ["method", "nDCG@10", "R@10", "R@100", "p50", "ms", "p95", "ms"]
    figures = {
        row.split()[0]: [float(value) for value in row.split()[1:]]
        for row in rows
        if not row.startswith("written:")
    }
    assert list(figures) == ["bm25", "dense", "hybrid"]
    assert all(0 <= value <= 1 for row in figures.values() for value in row[:3])
    # Each query names its document's own terms: BM25 ranks every one first.
    assert figures["bm25"][:3] == [1.0, 1.0, 1.0]
    out = tmp_path / "home" / "outputs" / "eval" / "retrieval-beir-tiny-test.json"
    assert f"written: {out}" in printed
    written = json.loads(out.read_text())
    assert [result["ndcg_at_10"] for result in written["results"]] == pytest.approx(
        [row[0] for row in figures.values()], abs=5e-5
    )

    assert main([*argv, "--methods", "hybrid-mmr"]) == 0
    again = capsys.readouterr().out
    assert "chunks (0 embedded now)" in again.splitlines()[0]
    assert again.splitlines()[2].startswith("hybrid-mmr ")


class FixedRetriever:
    """Returns the same fused ranking for any query."""

    def __init__(self, chunks: list[RetrievedChunk]) -> None:
        self.chunks = chunks

    def search(self, query: str, **options: object) -> list[RetrievedChunk]:
        return list(self.chunks)


class ReversingReranker:
    name = "reverse"
    version = "reverse"

    def rerank(self, query: str, candidates: list[RetrievedChunk]) -> list[RetrievedChunk]:
        return ranked(candidates, [chunk.fused_rank for chunk in candidates])


class FailingReranker(ReversingReranker):
    def rerank(self, query: str, candidates: list[RetrievedChunk]) -> list[RetrievedChunk]:
        return fallback(self.name, candidates, "no model")


def test_only_the_top_candidates_are_reranked_the_rest_keep_the_hybrid_order() -> None:
    fused = make_candidates(PASSAGES)
    retriever = FixedRetriever(fused)
    rank = _RerankedHybrid(retriever, ReversingReranker(), candidates=3)
    assert rank("any query") == ["p2:0", "p1:0", "p0:0", "p3:0", "p4:0"]
    assert rank.fallbacks == 0

    failing = _RerankedHybrid(retriever, FailingReranker(), candidates=3)
    assert failing("any query") == [chunk.chunk_id for chunk in fused]
    assert failing.fallbacks == 1


def test_reranked_methods_run_offline_and_keep_recall_at_100(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    dataset = tmp_path / "tiny"
    write_beir(dataset)
    settings = Settings(home=tmp_path / "home", retrieval={"rerank_candidates": 2})
    methods = ("hybrid", "hybrid+relevance", "hybrid+debate")
    evaluation = evaluate_retrieval(
        settings_groups(settings), dataset, "test", methods, embedder=fake_embedder
    )
    assert [result.method for result in evaluation.results] == list(methods)
    hybrid = evaluation.results[0]
    for result in evaluation.results[1:]:
        assert result.queries == 2 and result.rerank_fallbacks == 0
        assert result.recall_at_100 == hybrid.recall_at_100
        assert result.ndcg_at_10 == pytest.approx(1.0)  # each query names its document
    assert evaluation.parameters["rerank_candidates"] == 2
    assert set(evaluation.rerankers) == {"hybrid+relevance", "hybrid+debate"}
    assert evaluation.rerankers["hybrid+debate"].startswith("debate-")
    table = format_table(evaluation)
    assert "hybrid+relevance" in table and "reranked: the top 2 hybrid chunks" in table


def test_a_cross_encoder_method_runs_with_a_local_model(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    dataset = tmp_path / "tiny"
    write_beir(dataset)
    model = build_tiny_cross_encoder(tmp_path / "cross-encoder")
    settings = Settings(home=tmp_path / "home", retrieval={"cross_encoder_model": str(model)})
    evaluation = evaluate_retrieval(
        settings_groups(settings),
        dataset,
        "test",
        ("hybrid", "hybrid+cross-encoder"),
        embedder=fake_embedder,
    )
    hybrid, reranked = evaluation.results
    assert reranked.method == "hybrid+cross-encoder" and reranked.rerank_fallbacks == 0
    assert reranked.recall_at_100 == hybrid.recall_at_100
    assert evaluation.rerankers["hybrid+cross-encoder"].startswith(f"cross-encoder:{model}")


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        ([], "--cross-encoder"),
        (["--cross-encoder", "{tmp}/no-such-model"], "cannot load the CrossEncoder"),
        (["--cross-encoder", "{tmp}/m", "--rerank-candidates", "0"], "rerank_candidates"),
    ],
)
def test_cli_refuses_a_cross_encoder_method_that_cannot_run(
    options: list[str], complaint: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    dataset = tmp_path / "tiny"
    write_beir(dataset)
    argv = ["eval", "retrieval", "--dataset", str(dataset), "--methods", "hybrid+cross-encoder"]
    options = [option.format(tmp=tmp_path) for option in options]
    assert main([*argv, *options, "--home", str(tmp_path / "home")]) == 2
    assert complaint in capsys.readouterr().err
    # Refused before anything was indexed.
    assert not (tmp_path / "home" / "lancedb").exists()


def test_every_reranker_setting_has_its_method() -> None:
    settings = set(get_args(RetrievalSettings.model_fields["reranker"].annotation))
    assert set(RERANKED_METHODS.values()) == settings - {"none"}
