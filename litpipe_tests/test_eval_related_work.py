"""`litpipe eval related-work`: the extractive baselines, the ROUGE wrapper, and the command on a
tiny synthetic dataset in CiteBench's Multi-XScience format (no model: a hashed bag of words
stands in for MiniLM)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import litpipe.workflows.related_work as workflow
from litpipe.cli import main
from litpipe.evaluation import related_work as related_work_eval
from litpipe.evaluation.baselines import lead, lexrank, pagerank, textrank, within_budget
from litpipe.evaluation.related_work import (
    JSON_FILE,
    MARKDOWN_FILE,
    RelatedWorkEvaluation,
    evaluate_related_work,
    format_table,
    read_examples,
    rouge,
    without_citations,
)
from litpipe.extractive.related_work import count_words
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.conftest import FakeEmbedder

# Three sentences about graph neural networks and one outlier: the central sentence shares the
# most words with the others.
CLUSTER = [
    "Graph neural networks learn node representations by message passing over edges.",
    "Message passing lets graph neural networks aggregate neighbour features over edges.",
    "Graph neural networks with message passing over edges learn node and neighbour features.",
    "The weather in Lisbon was sunny during the conference week.",
]
CENTRAL = CLUSTER[2]


def test_lead_takes_each_documents_first_sentence_first() -> None:
    documents = ["Alpha one starts here. Alpha two follows.", "Beta one starts here. Beta two."]
    assert lead(documents, 100) == [
        "Alpha one starts here.",
        "Beta one starts here.",
        "Alpha two follows.",
        "Beta two.",
    ]
    assert lead(documents, 8) == ["Alpha one starts here.", "Beta one starts here."]


@pytest.mark.parametrize("baseline", [lexrank, textrank])
def test_graph_baselines_pick_the_central_sentence(baseline) -> None:
    chosen = baseline([" ".join(CLUSTER)], count_words(CENTRAL))
    assert chosen == [CENTRAL]


@pytest.mark.parametrize("baseline", [lead, lexrank, textrank])
@pytest.mark.parametrize("budget", [1, 12, 25, 200])
def test_budgets_are_respected(baseline, budget: int) -> None:
    chosen = baseline([" ".join(CLUSTER[:2]), " ".join(CLUSTER[2:])], budget)
    assert sum(count_words(s) for s in chosen) <= budget
    assert all(s in CLUSTER for s in chosen)


def test_a_sentence_too_long_is_passed_over_for_a_shorter_one() -> None:
    assert within_budget(["one two three four", "five six"], 3) == ["five six"]


def test_pagerank_is_a_distribution_and_favours_the_hub() -> None:
    import numpy as np

    star = np.array([[0, 1, 1], [1, 0, 0], [1, 0, 0]], dtype=float)
    scores = pagerank(star)
    assert scores.sum() == pytest.approx(1.0)
    assert scores[0] > scores[1] == pytest.approx(scores[2])


def test_rouge_of_identical_text_is_one_and_citations_are_removed() -> None:
    text = "Graph neural networks pass messages [1; 2] over edges @cite_3."
    scores = rouge(without_citations(text), without_citations(text))
    assert (scores.rouge1, scores.rouge2, scores.rougeL) == (1.0, 1.0, 1.0)
    assert without_citations(text) == "Graph neural networks pass messages over edges ."
    assert rouge("completely different words", "graph networks").rouge1 == 0.0


def _write_dataset(folder: Path) -> Path:
    rows = [
        {
            "idx": index,
            "query_abstract": f"We propose a graph neural network for molecule property {topic}.",
            "ref_abstracts": [
                f"Graph neural networks learn molecule representations. They predict {topic}.",
                f"Message passing networks model chemistry. Results on {topic} are strong.",
                "Transformers attend over tokens. They scale to long sequences.",
            ],
            "gold_related_work": f"Graph neural networks [0] learn molecule representations "
            f"and predict {topic}. Message passing networks [1] model chemistry, with strong "
            f"results on {topic}.",
        }
        for index, topic in enumerate(["solubility", "toxicity", "binding"])
    ]
    path = folder / "sample.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_eval_related_work_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(workflow, "load_embedder", lambda ingest, paths: FakeEmbedder())
    dataset = _write_dataset(tmp_path)
    assert len(read_examples(tmp_path)) == 3
    out = tmp_path / "out"
    home = str(tmp_path / "home")
    arguments = ["--dataset", str(tmp_path), "--limit", "2", "--out", str(out), "--home", home]
    code = main(["eval", "related-work", *arguments])
    assert code == 0
    printed = capsys.readouterr().out.strip().splitlines()
    figures = json.loads(printed[-1])
    assert figures["examples"] == 2 and figures["engine"] == "offline"
    for system in ("litpipe", "litpipe_ranked", "lead", "lexrank", "textrank"):
        assert 0.0 < figures[f"{system}_rouge1"] <= 1.0
    evaluation = RelatedWorkEvaluation.model_validate_json((out / JSON_FILE).read_text())
    assert [r.idx for r in evaluation.per_example] == [0, 1]
    for result in evaluation.per_example:
        # Every system within the gold paragraph's words, citations left out.
        assert all(words <= result.budget_words for words in result.words.values())
        assert "[" not in result.outputs["litpipe"]
    table = (out / MARKDOWN_FILE).read_text()
    assert "| textrank |" in table and "offline" in table
    assert dataset.is_file()


def test_the_ranked_path_scores_the_top_k_it_ranked_from_the_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workflow, "load_embedder", lambda ingest, paths: FakeEmbedder())
    evaluation = evaluate_related_work(
        settings_groups(Settings(home=tmp_path / "home")), _write_dataset(tmp_path)
    )
    # The pool: each example's two abstracts on its topic, and the one all three cite, once.
    assert evaluation.pool == 3 * 2 + 1
    # Ranked from the pool, each idea's top 3 are the three graph-network abstracts (one its
    # own): of the 3 it cites, the ranking finds 1, and its section scores lower for it.
    assert [r.ranked_recall for r in evaluation.per_example] == [pytest.approx(1 / 3)] * 3
    assert evaluation.ranked_recall == pytest.approx(1 / 3)
    for result in evaluation.per_example:
        assert result.scores["litpipe_ranked"].rougeL < result.scores["litpipe"].rougeL
    assert "| litpipe_ranked |" in format_table(evaluation) and "recall 0.33" in format_table(
        evaluation
    )
    assert related_work_eval.figures(evaluation)["litpipe_ranked_recall"] == pytest.approx(1 / 3)


def test_eval_related_work_refuses_a_bad_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", "related-work", "--dataset", str(tmp_path / "missing.jsonl")])
    assert code == 2
    assert "litpipe eval related-work" in capsys.readouterr().err
