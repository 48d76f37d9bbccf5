"""`litpipe eval litqa --collection-wide`: every question asked of ONE collection of all the
corpus' papers through `collection_answer` (as `litpipe ask --collection`), graded as `eval
litqa` grades; accuracy, precision, the share declined and whether an answer cites its own paper.
End to end on three one-page papers (`short_paper`) and the tiny local embedder; the figures on
hand-made and generated rows."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litpipe.catalog import Catalog
from litpipe.cli import main
from litpipe.commands.evaluations import eval_command
from litpipe.evaluation.litqa import LitQAQuestion
from litpipe.evaluation.litqa_collection_wide import (
    CollectionWideAnswer,
    CollectionWideEvaluation,
    collection_wide_evaluation,
    figures,
    graded_answer,
)
from litpipe.extractive.answer_judge import AnswerVerdict
from litpipe.schemas import NOT_ANSWERED, Citation, CollectionAnswer, CollectionAnswerRequest
from litpipe.settings import Settings
from litpipe.stopping import STOPPED_EXIT
from litpipe_tests.bundled import short_paper
from litpipe_tests.homes import home_instance
from litpipe_tests.passages import retrieved_chunk

pytestmark = pytest.mark.xdist_group("test_eval_litqa_collection_wide")

QUESTION = LitQAQuestion(
    id="q",
    question="Which gene shapes fermentation?",
    ideal="gene 0",
    distractors=["gene 7"],
    pdf_file="short-0.pdf",
)


def answer_citing(*papers: str, answered: bool = True) -> CollectionAnswer:
    """An answer citing page 1 of each of `papers` (or, not answered, the decline)."""
    passages = [
        retrieved_chunk(paper, 0, 1, f"Gene 0 shapes fermentation in {paper}.") for paper in papers
    ]
    citations = [
        Citation(marker=f"[{paper}:1]", paper_id=paper, page=1, chunk_ids=[f"{paper}:0"])
        for paper in papers
    ]
    return CollectionAnswer(
        request=CollectionAnswerRequest(collection="c", question=QUESTION.question),
        answered=answered,
        declined_because="" if answered else "no passage holds 50% of the question's terms",
        text=" ".join(f"Gene 0 shapes it [{paper}:1]." for paper in papers)
        if answered
        else NOT_ANSWERED,
        citations=citations if answered else [],
        passages=passages,
        papers=["own", "other"],
        mode="single",
        engine="offline",
    )


RIGHT = AnswerVerdict(states_ideal=True, stated_distractors=[], reason="It says gene 0.")


def test_an_answer_cites_its_own_paper_only_when_a_citation_names_it() -> None:
    cited = graded_answer(QUESTION, "own", answer_citing("other", "own"), RIGHT)
    assert cited.cites_own_paper and cited.cited_papers == ["other", "own"]
    elsewhere = graded_answer(QUESTION, "own", answer_citing("other"), RIGHT)
    # Right, but from another paper of the collection.
    assert elsewhere.states_ideal and not elsewhere.cites_own_paper


def test_a_declined_answer_states_nothing_and_cites_nothing() -> None:
    row = graded_answer(QUESTION, "own", answer_citing(answered=False), None)
    assert not row.answered and not row.states_ideal and not row.cites_own_paper
    assert row.answer == NOT_ANSWERED and row.reason == row.declined_because


def _evaluation(rows: list[CollectionWideAnswer]) -> CollectionWideEvaluation:
    return collection_wide_evaluation(
        rows,
        dataset=Path("q.jsonl"),
        corpus=Path("pdfs"),
        collection="pdfs",
        papers=2,
        skipped=0,
        failed=0,
        engine="offline",
        model=None,
        embedder="e",
        grading="offline rule",
        seconds=0.0,
    )


def test_precision_counts_the_answered_and_accuracy_every_question() -> None:
    wrong = AnswerVerdict(states_ideal=False, stated_distractors=["gene 7"], reason="gene 7")
    rows = [
        graded_answer(QUESTION, "own", answer_citing("own"), RIGHT),
        graded_answer(QUESTION, "own", answer_citing("other"), wrong),
        graded_answer(QUESTION, "own", answer_citing(answered=False), None),
        graded_answer(QUESTION, "own", answer_citing(answered=False), None),
    ]
    evaluation = _evaluation(rows)
    assert evaluation.accuracy == 1 / 4 and evaluation.precision == 1 / 2
    assert evaluation.declined_share == 2 / 4 and evaluation.distractor_share == 1 / 4
    assert evaluation.cites_own_paper_share == 1 / 2
    # Every question declined: no precision, no own-paper share, none of them in the figures.
    declined = _evaluation(rows[2:])
    assert declined.precision is None and declined.cites_own_paper_share is None
    assert figures(declined) == {"accuracy": 0.0, "declined_share": 1.0, "distractor_share": 0.0}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.booleans(), st.lists(st.sampled_from(["own", "other"]))),
        min_size=1,
        max_size=12,
    )
)
def test_figures_of_any_rows_agree_with_each_other(
    cases: list[tuple[bool, bool, list[str]]],
) -> None:
    rows = [
        graded_answer(
            QUESTION,
            "own",
            answer_citing(*(cited or ["other"]), answered=answered),
            AnswerVerdict(states_ideal=right, stated_distractors=[], reason="r")
            if answered
            else None,
        )
        for answered, right, cited in cases
    ]
    evaluation = _evaluation(rows)
    answered = [row for row in rows if row.answered]
    # A declined question is never right; accuracy is precision over the share answered.
    assert evaluation.accuracy == pytest.approx(
        (evaluation.precision or 0.0) * (1 - evaluation.declined_share)
    )
    assert evaluation.declined_share == (len(rows) - len(answered)) / len(rows)
    for row, (answered_, _, cited) in zip(rows, cases, strict=True):
        assert row.cites_own_paper == (answered_ and "own" in cited)


@pytest.mark.slow
def test_the_command_asks_one_collection_of_every_paper_and_reports_the_figures(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for number in range(3):
        short_paper(corpus, number)
    questions = [
        # Its own paper (gene 0, yeast) answers it.
        QUESTION.model_copy(
            update={"id": "yeast", "question": "Which gene shapes fermentation in yeast?"}
        ),
        # No paper answers it: declined offline.
        QUESTION.model_copy(
            update={
                "id": "nitrogen",
                "question": "What is the boiling point of liquid nitrogen in kelvin?",
                "ideal": "77",
                "pdf_file": "short-2.pdf",
            }
        ),
        # Its PDF is not in the corpus.
        QUESTION.model_copy(update={"id": "gone", "pdf_file": "absent.pdf"}),
    ]
    dataset = tmp_path / "litqa.jsonl"
    dataset.write_text("".join(q.model_dump_json() + "\n" for q in questions), "utf-8")
    home = tmp_path / "home"
    command = ["eval", "litqa", "--collection-wide", "--dataset", str(dataset)]
    arguments = [
        *command,
        "--corpus",
        str(corpus),
        "--home",
        str(home),
        "--embedder",
        str(tiny_model),
    ]
    assert main(arguments) == 0

    *table, last = capsys.readouterr().out.strip().splitlines()
    reported = json.loads(last)
    evaluation = CollectionWideEvaluation.model_validate_json(
        (home / "outputs" / "eval" / "litqa_collection_wide.json").read_text()
    )
    # One collection of all three papers, every question asked of it (not of its own paper).
    papers = Catalog(home / "catalog.sqlite").papers("corpus")
    assert evaluation.papers == len(papers) == 3 and evaluation.collection == "corpus"
    assert (evaluation.examples, evaluation.skipped, evaluation.failed) == (2, 1, 0)
    rows = {row.question_id: row for row in evaluation.per_question}
    yeast, nitrogen = rows["yeast"], rows["nitrogen"]
    assert yeast.answered and yeast.states_ideal and set(yeast.cited_papers) <= set(papers)
    assert yeast.cites_own_paper == (yeast.own_paper in yeast.cited_papers)
    assert yeast.cites_own_paper and yeast.own_paper == "10.5555_short.0"
    assert not nitrogen.answered and nitrogen.answer == NOT_ANSWERED and not nitrogen.cited_papers
    assert (evaluation.accuracy, evaluation.precision, evaluation.declined_share) == (0.5, 1.0, 0.5)
    assert reported["accuracy"] == 0.5 and reported["declined_share"] == 0.5
    assert reported["precision"] == 1.0 and reported["skipped"] == 1
    text = "\n".join(table)
    assert "| nitrogen | 10.5555_short.2 | declined | no (77) |" in text
    assert "precision (right among those answered): 100.0%; declined: 50.0%" in text
    # Each answer is a partition of `collection_answer`; the figures a materialization.
    instance = home_instance(home)
    assert {yeast.key, nitrogen.key} <= set(instance.get_dynamic_partitions("collection_questions"))
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("eval_litqa_collection_wide")), 5
    ).records
    assert len(records) == 1 and records[0].asset_materialization.metadata["accuracy"].value == 0.5

    # A repeat is served: no collection answer is materialized again.
    assert main(arguments) == 0
    assert capsys.readouterr().err.count(": up to date") == 2


def test_max_iterations_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = tmp_path / "litqa.jsonl"
    dataset.write_text(QUESTION.model_dump_json() + "\n", "utf-8")
    command = ["eval", "litqa", "--collection-wide", "--dataset", str(dataset), "--corpus"]
    assert (
        main([*command, str(tmp_path), "--max-iterations", "2", "--home", str(tmp_path / "h")]) == 2
    )
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("litpipe eval litqa --collection-wide: --max-iterations")
    assert not (tmp_path / "h").exists()


def test_stopped_before_any_question_it_writes_no_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    short_paper(corpus, 0)
    dataset = tmp_path / "litqa.jsonl"
    dataset.write_text(QUESTION.model_dump_json() + "\n", "utf-8")
    home = tmp_path / "home"
    code = eval_command(
        Settings(home=home),
        "litqa-collection-wide",
        dataset,
        None,
        None,
        lambda: True,
        corpus=corpus,
    )
    assert code == STOPPED_EXIT
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "eval litqa --collection-wide" in line and "not asked: 1 question" in line
    assert not (home / "outputs" / "eval" / "litqa_collection_wide.json").exists()
