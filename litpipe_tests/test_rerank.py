"""The reranker interface, the non-LLM rerankers, and the choice of a reranker from settings."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from litpipe.agents.asker import Asker
from litpipe.agents.question_evidence.rerankers import LLMDebateReranker, LLMRelevanceReranker
from litpipe.llm.prompts import PromptLibrary
from litpipe.retrieval.rerank import (
    CrossEncoderReranker,
    NoReranker,
    Reranker,
    RerankerError,
    ranked,
    term_coverage,
)
from litpipe.schemas import RetrievedChunk
from litpipe.settings import Settings
from litpipe.workflows.reranking import settings_reranker
from litpipe_tests.tiny_model import copy_tokenizer, tiny_bert_config

# One worker builds this module's shared fixtures (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group("test_rerank")

PASSAGES = [
    "Aspirin lowers the risk of myocardial infarction in adults.",
    "IL-6 signalling drives inflammation in rheumatoid arthritis.",
    "Deep learning predicts protein structure from sequence.",
    "Statins reduce cholesterol and cardiovascular events.",
    "Aspirin irreversibly inhibits cyclooxygenase in platelets.",
]


def make_candidates(texts: list[str]) -> list[RetrievedChunk]:
    """Candidates in fused order: the first is fused rank 1."""
    return [
        RetrievedChunk(
            chunk_id=f"p{index}:0",
            paper_id=f"p{index}",
            section="Abstract",
            page_start=1,
            page_end=1,
            char_start=0,
            char_end=len(text),
            text=text,
            fused_rank=index + 1,
            fused_score=1 / (11 + index),
        )
        for index, text in enumerate(texts)
    ]


def build_tiny_cross_encoder(dest: Path) -> Path:
    """A random one-layer BERT with one output (a regression CrossEncoder) and MiniLM's
    tokenizer, saved as a local folder: its scores mean nothing, its code path is the real one."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(0)
    # Wide random weights, so that the scores of different passages differ visibly.
    config = tiny_bert_config(num_labels=1, initializer_range=0.5)
    BertForSequenceClassification(config).save_pretrained(dest)
    copy_tokenizer(dest)
    return dest


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


def test_no_reranker_keeps_the_fused_order_unscored() -> None:
    candidates = make_candidates(PASSAGES)
    reranked = NoReranker().rerank("aspirin", candidates)
    assert reranked == candidates
    assert all(chunk.rerank_score is None for chunk in reranked)
    assert NoReranker().rerank("aspirin", []) == []


def test_ranked_sorts_best_first_and_keeps_the_order_of_ties() -> None:
    candidates = make_candidates(PASSAGES[:4])
    reranked = ranked(candidates, [1.0, 3.0, 3.0, 2.0], ["a", "b", "c", "d"])
    assert [chunk.chunk_id for chunk in reranked] == ["p1:0", "p2:0", "p3:0", "p0:0"]
    assert [(chunk.rerank_score, chunk.rerank_reason) for chunk in reranked] == [
        (3.0, "b"),
        (3.0, "c"),
        (2.0, "d"),
        (1.0, "a"),
    ]
    # Everything else about a candidate is kept: where it is, how the retrievers ranked it.
    assert reranked[0].model_dump(exclude={"rerank_score", "rerank_reason"}) == candidates[
        1
    ].model_dump(exclude={"rerank_score", "rerank_reason"})
    with pytest.raises(ValueError):
        ranked(candidates, [1.0])


def test_cross_encoder_orders_by_its_own_predict_scores(tiny_cross_encoder: Path) -> None:
    from sentence_transformers import CrossEncoder

    query = "Does aspirin prevent myocardial infarction?"
    candidates = make_candidates(PASSAGES)
    reranker = CrossEncoderReranker(str(tiny_cross_encoder))
    reranked = reranker.rerank(query, candidates)

    predicted = CrossEncoder(str(tiny_cross_encoder), device="cpu").predict(
        [(query, text) for text in PASSAGES]
    )
    assert len(set(predicted.tolist())) == len(PASSAGES)  # distinct: the order is determined
    expected = sorted(range(len(PASSAGES)), key=lambda index: -predicted[index])
    assert [chunk.chunk_id for chunk in reranked] == [f"p{index}:0" for index in expected]
    assert [chunk.rerank_score for chunk in reranked] == pytest.approx(
        [float(predicted[index]) for index in expected], rel=1e-5
    )
    assert all(chunk.rerank_reason is None for chunk in reranked)
    assert reranker.rerank(query, []) == []


def test_cross_encoder_version_names_the_model_and_its_content(
    tiny_cross_encoder: Path, tmp_path: Path
) -> None:
    version = CrossEncoderReranker(str(tiny_cross_encoder)).version
    assert version.startswith(f"cross-encoder:{tiny_cross_encoder}-")
    copy = shutil.copytree(tiny_cross_encoder, tmp_path / "copy")
    (copy / "README.md").write_text("A retrained model.\n")
    assert CrossEncoderReranker(str(copy)).version.rsplit("-", 1)[1] != version.rsplit("-", 1)[1]
    assert CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L6-v2").version == (
        "cross-encoder:cross-encoder/ms-marco-MiniLM-L6-v2"
    )


@pytest.mark.parametrize(
    "model", ["{tmp}/no-such-model", "cross-encoder/not-in-the-hugging-face-cache"]
)
def test_a_cross_encoder_that_cannot_load_keeps_the_fused_order_with_a_warning(
    model: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    candidates = make_candidates(PASSAGES)
    reranker = CrossEncoderReranker(model.format(tmp=tmp_path))
    with caplog.at_level(logging.WARNING, logger="litpipe.retrieval.rerank"):
        reranked = reranker.rerank("aspirin", candidates)
    assert [chunk.chunk_id for chunk in reranked] == [chunk.chunk_id for chunk in candidates]
    assert all(chunk.rerank_score is None for chunk in reranked)
    (warning,) = [r for r in caplog.records if r.name == "litpipe.retrieval.rerank"]
    assert warning.levelno == logging.WARNING
    assert "cross-encoder" in warning.getMessage()
    assert "cannot load the CrossEncoder" in warning.getMessage()
    assert "\n" not in warning.getMessage()
    with pytest.raises(RerankerError):
        reranker.load()


def test_term_coverage_names_the_words_as_written() -> None:
    # Terms: il6, il, 6 (IL-6 whole and in parts), drive, arthritis, mice; "drives" is "drive".
    coverage = term_coverage("Does IL-6 drive arthritis in mice?", PASSAGES[1] + " IL-6 again.")
    assert coverage.share == pytest.approx(5 / 6)
    assert coverage.matched == ["IL-6", "drives", "arthritis"]
    assert coverage.missing == ["mice"]
    assert coverage.describe() == "The passage mentions IL-6, drives, arthritis but not mice."
    assert term_coverage("the of and", PASSAGES[0]).share == 0.0


def test_reranker_for_follows_the_setting(tmp_path: Path, tiny_cross_encoder: Path) -> None:
    prompts = PromptLibrary(None)

    def chosen(**overrides: Any) -> Reranker:
        settings = Settings(home=tmp_path, **overrides)
        return settings_reranker(
            settings.retrieval, settings.ingest, Asker(settings.llm, None, prompts)
        )

    assert isinstance(chosen(), NoReranker)
    cross_encoder = chosen(
        retrieval={"reranker": "cross-encoder", "cross_encoder_model": str(tiny_cross_encoder)},
        ingest={"embed_device": "cpu"},
    )
    assert isinstance(cross_encoder, CrossEncoderReranker)
    assert cross_encoder.model_name_or_path == str(tiny_cross_encoder)
    assert cross_encoder.device == "cpu"
    # Offline (no model configured) the LLM rerankers need no client: their engines answer.
    assert isinstance(chosen(retrieval={"reranker": "relevance"}), LLMRelevanceReranker)
    assert isinstance(chosen(retrieval={"reranker": "debate"}), LLMDebateReranker)
    with pytest.raises(ValueError, match="no LLM client"):
        chosen(retrieval={"reranker": "relevance"}, llm={"model": "openai/stub-model"})
