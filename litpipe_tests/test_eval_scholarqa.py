"""`litpipe eval scholarqa`: the expert's citations read from the answer, citation precision and
recall, litpipe's answers and the baselines on 20 ScholarQABench questions, the command, and
the writer routed to a model (the local stub). A hashed bag of words stands in for MiniLM."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import litpipe.workflows.related_work as workflow
from litpipe.agents.query_answer import within_words
from litpipe.cli import main
from litpipe.evaluation.citation_accuracy import citation_accuracy, mean_accuracy
from litpipe.evaluation.scholarqa import (
    ScholarQAEvaluation,
    ScholarQAExample,
    collection,
    evaluate_scholarqa,
    gold_citations,
    gold_papers,
    read_examples,
)
from litpipe.extractive.query_answer import QueryAnswerInput, offline_query_answer
from litpipe.schemas import Question
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.conftest import FakeEmbedder
from litpipe_tests.passages import retrieved_chunk
from litpipe_tests.stub_llm import StubLLM, stub_settings

# One worker builds this module's shared fixtures (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group("test_eval_scholarqa")

DATA = Path(__file__).parent / "data" / "scholarqa" / "scholarqa_multi_first20.jsonl"
SYSTEMS = ("litpipe", "lead", "lexrank", "textrank")
_MARKER = re.compile(r"\[(p\d+):(\d+)\]")


@pytest.fixture(autouse=True)
def fake_dense_retrieval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workflow, "load_embedder", lambda ingest, paths: FakeEmbedder())


@pytest.fixture(scope="module")
def offline_evaluation(tmp_path_factory: pytest.TempPathFactory) -> ScholarQAEvaluation:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(workflow, "load_embedder", lambda ingest, paths: FakeEmbedder())
        return evaluate_scholarqa(settings_groups(Settings(home=home)), DATA, limit=20)


def example(**changes: Any) -> ScholarQAExample:
    papers = [
        {"title": "Corona glycans", "url": "https://s2/a", "year": 2015, "text": "A one. A two."},
        {"title": "Stealth", "url": "https://s2/b", "year": 2019, "text": "B one."},
        {"title": "Corona glycans", "url": "https://s2/a", "year": 2015, "text": "A three."},
        {"title": "Lost", "url": "https://s2/c", "year": 2020, "text": float("nan")},
        {"title": "In vivo", "url": "", "year": 2017, "text": "D one."},
    ]
    row = {"id": "q1", "query": "How do coronas form?", "gold_answer": "", "papers": papers}
    return ScholarQAExample.model_validate(row | changes)


def test_gold_citations_read_lists_and_ranges_once_each() -> None:
    answer = "Coronas form [0]. Both bind [1, 2] and [2-4]; see also [0,5] and [4]."
    assert gold_citations(answer) == [0, 1, 2, 3, 4, 5]
    assert gold_citations("No citation here, nor in [a].") == []


def test_snippets_of_one_paper_share_its_id_and_missing_ones_are_left_out() -> None:
    question = example(gold_answer="A binds [0] and [2]; D [4]; lost [3]; past the list [7].")
    snippets = collection(question)
    assert [(s.index, s.paper_id, s.number) for s in snippets] == [
        (0, "p1", 1),
        (1, "p2", 1),
        (2, "p1", 2),
        (4, "p3", 1),
    ]
    # Paper 0 and 2 are one paper; [3] has no snippet and [7] is past the list.
    assert gold_papers(question, snippets) == (["p1", "p3"], [3, 7])


def test_citation_precision_and_recall_on_a_hand_made_case() -> None:
    found = citation_accuracy(["p1", "p2", "p3", "p9", "p1"], ["p1", "p2", "p4"])
    assert (found.cited, found.gold, found.correct) == (4, 3, 2)
    assert found.precision == pytest.approx(2 / 4)
    assert found.recall == pytest.approx(2 / 3)
    assert found.f1 == pytest.approx(2 * (1 / 2) * (2 / 3) / (1 / 2 + 2 / 3))
    nothing = citation_accuracy([], ["p1"])
    assert (nothing.precision, nothing.recall, nothing.f1) == (0.0, 0.0, 0.0)
    no_gold = citation_accuracy(["p1"], [])
    assert no_gold.recall is None and no_gold.f1 is None
    means = mean_accuracy([found, nothing, no_gold])
    # Recall averages the two questions whose gold cites something; precision all three.
    assert means.recall == pytest.approx((2 / 3 + 0.0) / 2)
    assert means.precision == pytest.approx((1 / 2 + 0.0 + 0.0) / 3)
    assert (means.examples, means.with_gold) == (3, 2)


def test_the_offline_answer_draws_on_every_paper_before_saying_more_of_one() -> None:
    question = Question(
        question_id="q", paper_id="", style="broad", text="How do protein coronas form?"
    )
    evidence = [
        retrieved_chunk(
            "pa", 0, 1, "Protein coronas form by adsorption. Coronas then form again in plasma."
        ),
        retrieved_chunk("pb", 1, 1, "Serum protein binds to lipids."),
        retrieved_chunk("pc", 2, 1, "Corona size was measured. The weather was fine."),
    ]
    answer = offline_query_answer(QueryAnswerInput(question=question, evidence=evidence, words=15))
    # Paper a's second sentence scores above b's and c's, but each paper is cited first.
    assert answer.answer == (
        "Protein coronas form by adsorption [pa:1]. Serum protein binds to lipids [pb:1]. "
        "Corona size was measured [pc:1]."
    )
    roomy = offline_query_answer(QueryAnswerInput(question=question, evidence=evidence, words=40))
    # With words to spare, the rest of the passages follow, the unrelated sentence last.
    assert roomy.answer.endswith(
        "Coronas then form again in plasma [pa:1]. The weather was fine [pc:1]."
    )


def test_a_model_answer_over_the_budget_keeps_its_first_whole_sentences() -> None:
    text = "One two three [p1:1]. Four five six [p2:1]. Seven eight [p1:2]."
    assert within_words(text, 8) == text
    assert within_words(text, 7) == "One two three [p1:1]. Four five six [p2:1]."
    assert within_words(text, 2) == "One two three [p1:1]."


def test_every_citation_names_a_paper_of_its_question(
    offline_evaluation: ScholarQAEvaluation,
) -> None:
    examples = {e.id: e for e in read_examples(DATA)}
    assert offline_evaluation.examples == 20 and offline_evaluation.engine == "offline"
    for result in offline_evaluation.per_example:
        snippets = {(s.paper_id, s.number): s.text for s in collection(examples[result.id])}
        markers = _MARKER.findall(result.answer)
        assert markers, result.id
        for paper_id, number in markers:
            assert (paper_id, int(number)) in snippets
        # Offline, every sentence is a snippet's own words, cited with that snippet's marker.
        cited_sentences = re.findall(r"\s*(.+?) \[(p\d+):(\d+)\][.!?]?", result.answer)
        assert len(cited_sentences) == len(markers)
        for text, paper_id, number in cited_sentences:
            assert text in " ".join(snippets[(paper_id, int(number))].split())
        cited = set(result.cited_papers["litpipe"])
        gold = set(result.gold_papers)
        assert result.citations["litpipe"].recall == pytest.approx(len(cited & gold) / len(gold))


def test_rouge_of_litpipe_and_the_baselines_within_the_experts_words(
    offline_evaluation: ScholarQAEvaluation,
) -> None:
    for name in SYSTEMS:
        scores = offline_evaluation.means[name]
        assert 0.2 < scores.rouge1 < 0.8 and 0.0 < scores.rouge2 < scores.rouge1
        assert 0.0 < scores.rougeL <= scores.rouge1
        assert 0.5 < offline_evaluation.citations[name].recall <= 1.0
    for result in offline_evaluation.per_example:
        assert all(words <= result.budget_words for words in result.words.values())
        assert "[" not in result.outputs["litpipe"]
    # The one paper without a snippet and the one index past the list are not gold papers.
    unresolved = {r.id: r.unresolved_gold for r in offline_evaluation.per_example}
    assert unresolved["benjamin_bio_2"] == [3] and unresolved["norman_bio_6"] == [3]


def test_eval_scholarqa_command_writes_the_table_and_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    home = str(tmp_path / "home")
    arguments = ["--dataset", str(DATA), "--limit", "20", "--out", str(out), "--home", home]
    assert main(["eval", "scholarqa", *arguments]) == 0
    captured = capsys.readouterr()
    figures = json.loads(captured.out.strip().splitlines()[-1])
    assert figures["examples"] == 20 and figures["engine"] == "offline"
    for name in SYSTEMS:
        assert 0.0 < figures[f"{name}_rouge1"] <= 1.0
        assert 0.0 <= figures[f"{name}_citation_recall"] <= 1.0
    table = (out / "scholarqa_eval.md").read_text()
    assert table.startswith("ScholarQA") and "20 questions, writer offline" in table
    assert "| litpipe |" in table and "| textrank |" in table
    written = ScholarQAEvaluation.model_validate_json((out / "scholarqa_eval.json").read_text())
    assert [r.id for r in written.per_example][:2] == ["norman_bio_1", "norman_bio_2"]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "Expecting property name"),
        ('{"id": "q", "query": "Why?", "papers": []}', "gold_answer"),
        (
            '{"id": "q", "query": "Why?", "gold_answer": "G [0].", "papers": [{"text": null}]}',
            "no paper snippet",
        ),
        (
            '{"id": "q", "query": "Why?", "gold_answer": "[0]", "papers": [{"text": "A."}]}',
            "no words in gold_answer",
        ),
    ],
)
def test_a_bad_line_exits_2_naming_file_and_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, reason: str
) -> None:
    dataset = tmp_path / "bad.jsonl"
    good = DATA.read_text(encoding="utf-8").splitlines()[0]
    dataset.write_text(f"{good}\n{line}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"bad\.jsonl line 2: .*{reason}"):
        read_examples(dataset)
    out = tmp_path / "out"
    code = main(["eval", "scholarqa", "--dataset", str(dataset), "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("litpipe eval scholarqa: ") and "bad.jsonl line 2" in err
    assert not out.exists() or not any(out.iterdir())


def test_the_writer_routed_to_a_model_is_shown_the_question_and_snippets(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    (first,) = read_examples(DATA, limit=1)
    shown: list[str] = []

    def reply(body: dict[str, Any]) -> dict[str, str]:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        shown.append(user)
        passages = user[user.index("<paper>") : user.index("</paper>")]
        given = dict.fromkeys(f"[{p}:{n}]" for p, n in _MARKER.findall(passages))
        # Each passage cited once, and a marker naming no passage (to be removed).
        cited = " ".join(f"One finding {marker}." for marker in given)
        return {"answer": f"{cited} An invented claim [p99:1]."}

    stub_llm.respond("stub-qa", reply)
    settings = stub_settings(
        tmp_path, stub_llm, llm={"agents": {"query_answer": {"model": "openai/stub-qa"}}}
    )
    evaluation = evaluate_scholarqa(settings_groups(settings), DATA, limit=1)
    (result,) = evaluation.per_example
    (prompt,) = shown
    assert first.query in prompt and f"at most {result.budget_words} words" in prompt
    assert all(" ".join(s.text.split()) in prompt for s in collection(first))
    assert evaluation.engine == "openai/stub-qa" and evaluation.model == "openai/stub-qa"
    assert "[p99:1]" not in result.answer and result.answer.endswith("An invented claim.")
    # The stub cites every snippet: every paper of the question is cited, the expert's recalled.
    assert sorted(result.cited_papers["litpipe"]) == sorted({s.paper_id for s in collection(first)})
    assert result.citations["litpipe"].recall == 1.0
    assert result.words["litpipe"] <= result.budget_words
