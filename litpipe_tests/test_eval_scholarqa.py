"""`litpipe eval scholarqa`: the expert's citations read from the answer, citation precision and
recall, and the command: each question's snippets ingested as a collection of their own and the
question asked of it through `collection_answer` (as `litpipe ask --collection`), offline and
with the writer routed to a model (the local stub), next to the baselines. The tiny local
embedder stands in for MiniLM."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litpipe.agents.query_answer import within_words
from litpipe.catalog import Catalog
from litpipe.cli import main
from litpipe.evaluation.citation_accuracy import citation_accuracy, mean_accuracy
from litpipe.evaluation.scholarqa import (
    ScholarQAEvaluation,
    ScholarQAExample,
    collection,
    gold_citations,
    gold_papers,
    prepared_question,
    question_collection,
    read_examples,
    row_id,
    scholarqa_result,
)
from litpipe.extractive.query_answer import QueryAnswerInput, offline_query_answer
from litpipe.schemas import (
    NOT_ANSWERED,
    Citation,
    CollectionAnswer,
    CollectionAnswerRequest,
    Question,
)
from litpipe_tests.homes import home_instance
from litpipe_tests.passages import retrieved_chunk
from litpipe_tests.stub_agents import answer_as_agent
from litpipe_tests.stub_llm import StubLLM

# One worker builds this module's shared fixtures (`make test` runs pytest-xdist).
pytestmark = pytest.mark.xdist_group("test_eval_scholarqa")

DATA = Path(__file__).parent / "data" / "scholarqa" / "scholarqa_multi_first20.jsonl"
SYSTEMS = ("litpipe", "lead", "lexrank", "textrank")
# The questions the command is run on: ingesting each one's snippets costs seconds.
ASKED = 3
_MARKER = re.compile(r"\[(p\d+):(\d+)\]")


class CommandRun:
    """What `litpipe eval scholarqa --limit ASKED` printed and wrote, in its home."""

    def __init__(self, home: Path, out: Path, printed: str, errors: str) -> None:
        self.home, self.out, self.printed, self.errors = home, out, printed, errors
        self.evaluation = ScholarQAEvaluation.model_validate_json(
            (out / "scholarqa_eval.json").read_text()
        )


def run_command(home: Path, tiny_model: Path, *extra: str) -> tuple[int, Path]:
    out = home / "out"
    arguments = ["--dataset", str(DATA), "--limit", str(ASKED), "--out", str(out)]
    model = ["--home", str(home), "--embedder", str(tiny_model)]
    return main(["eval", "scholarqa", *arguments, *model, *extra]), out


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> CommandRun:
    home = tmp_path_factory.mktemp("home")
    printed, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
        code, out = run_command(home, tiny_model)
    assert code == 0, errors.getvalue()
    return CommandRun(home, out, printed.getvalue(), errors.getvalue())


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


@pytest.mark.slow
def test_every_question_is_a_collection_of_its_snippets_asked_as_ask_collection_asks(
    offline_run: CommandRun,
) -> None:
    catalog = Catalog(offline_run.home / "catalog.sqlite")
    instance = home_instance(offline_run.home)
    asked = set(instance.get_dynamic_partitions("collection_questions"))
    for example in read_examples(DATA, limit=ASKED):
        # One paper per snippet, in a collection of the question's own.
        assert len(catalog.papers(question_collection(example))) == len(collection(example))
    # One `collection_answer` partition per question, and the figures a materialization.
    assert len(asked) == ASKED
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("eval_scholarqa")), 5
    ).records
    assert len(records) == 1 and records[0].asset_materialization.metadata["examples"].value == 3


@pytest.mark.slow
def test_every_citation_names_a_snippet_of_its_question_and_a_decline_cites_none(
    offline_run: CommandRun,
) -> None:
    evaluation = offline_run.evaluation
    examples = {e.id: e for e in read_examples(DATA)}
    assert evaluation.examples == ASKED and evaluation.engine == "offline"
    assert evaluation.declined == sum(not r.answered for r in evaluation.per_example)
    assert any(r.answered for r in evaluation.per_example)
    for result in evaluation.per_example:
        snippets = {(s.paper_id, s.number): s.text for s in collection(examples[result.id])}
        markers = _MARKER.findall(result.answer)
        if not result.answered:
            assert result.answer == NOT_ANSWERED and result.cited_papers["litpipe"] == []
            continue
        assert markers, result.id
        # Offline, every sentence is a snippet's own words, cited with that snippet's marker.
        for sentence in re.findall(r"\s*(.+?) \[p\d+:\d+\][.!?]?", result.answer):
            assert any(sentence in " ".join(text.split()) for text in snippets.values())
        for paper_id, number in markers:
            assert (paper_id, int(number)) in snippets
        cited = set(result.cited_papers["litpipe"])
        assert cited == {paper_id for paper_id, _ in markers}
        gold = set(result.gold_papers)
        assert result.citations["litpipe"].recall == pytest.approx(len(cited & gold) / len(gold))


@pytest.mark.slow
def test_every_system_is_scored_within_the_experts_words(offline_run: CommandRun) -> None:
    evaluation = offline_run.evaluation
    for name in SYSTEMS:
        scores = evaluation.means[name]
        assert 0.0 < scores.rouge1 < 0.8 and 0.0 <= scores.rouge2 < scores.rouge1
        assert 0.0 < scores.rougeL <= scores.rouge1
    for result in evaluation.per_example:
        assert all(words <= result.budget_words for words in result.words.values())
        assert "[" not in result.outputs["litpipe"]


def test_a_paper_without_a_snippet_and_an_index_past_the_list_are_not_gold() -> None:
    unresolved = {
        example.id: gold_papers(example, collection(example))[1] for example in read_examples(DATA)
    }
    assert unresolved["benjamin_bio_2"] == [3] and unresolved["norman_bio_6"] == [3]


@pytest.mark.slow
def test_the_command_prints_the_table_and_the_figures_and_a_repeat_is_served(
    offline_run: CommandRun, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = json.loads(offline_run.printed.strip().splitlines()[-1])
    assert figures["examples"] == ASKED and figures["engine"] == "offline"
    assert figures["declined"] == offline_run.evaluation.declined
    for name in SYSTEMS:
        assert 0.0 < figures[f"{name}_rouge1"] <= 1.0
        assert 0.0 <= figures[f"{name}_citation_recall"] <= 1.0
    # The report keeps every field it had when the snippets were answered in memory.
    written = json.loads((offline_run.out / "scholarqa_eval.json").read_text())
    assert set(written) >= {
        *("dataset", "examples", "engine", "model", "embedder", "budget", "means"),
        *("mean_words", "citations", "seconds", "per_example"),
    }
    assert set(written["per_example"][0]) >= {
        *("id", "subject", "papers", "snippets", "budget_words", "words", "scores"),
        *("gold_papers", "cited_papers", "citations", "answer", "outputs", "unresolved_gold"),
    }
    table = (offline_run.out / "scholarqa_eval.md").read_text()
    assert table.startswith("ScholarQA") and f"{ASKED} questions, writer offline" in table
    assert "| litpipe |" in table and "| textrank |" in table
    assert f"litpipe declined {offline_run.evaluation.declined} of {ASKED} questions" in table
    assert [r.id for r in offline_run.evaluation.per_example][:2] == [
        "norman_bio_1",
        "norman_bio_2",
    ]
    # Asked again: every answer is served from its materialization, the figures the same.
    code, out = run_command(offline_run.home, tiny_model)
    assert code == 0
    assert capsys.readouterr().err.count(": up to date") == ASKED
    again = ScholarQAEvaluation.model_validate_json((out / "scholarqa_eval.json").read_text())
    assert again.means == offline_run.evaluation.means


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


@pytest.mark.slow
def test_the_writer_routed_to_a_model_is_shown_the_question_and_snippets(
    tmp_path: Path,
    tiny_model: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (first,) = read_examples(DATA, limit=1)
    shown: list[str] = []

    def reply(body: dict[str, Any]) -> dict[str, str]:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        shown.append(user)
        given = re.findall(r"^(\[[^\]\s]+:\d+\]) \(", user, re.M)
        # Each passage cited once, and a marker naming no passage (to be removed).
        cited = " ".join(f"One finding {marker}." for marker in given)
        return {"answer": f"{cited} An invented claim [nowhere.p9:1]."}

    stub_llm.respond("stub-qa", reply)
    # Every other agent (the claim judge among them) answers as `answer_as_agent` does.
    stub_llm.respond("stub", answer_as_agent)
    monkeypatch.setenv(
        "LITPIPE_LLM__AGENTS", json.dumps({"query_answer": {"model": "openai/stub-qa"}})
    )
    home = tmp_path / "home"
    out = tmp_path / "out"
    arguments = ["--dataset", str(DATA), "--limit", "1", "--out", str(out), "--home", str(home)]
    model = ["--embedder", str(tiny_model), "--model", "openai/stub", "--api-base", stub_llm.url]
    assert main(["eval", "scholarqa", *arguments, *model]) == 0
    evaluation = ScholarQAEvaluation.model_validate_json((out / "scholarqa_eval.json").read_text())
    (result,) = evaluation.per_example
    (prompt,) = shown
    assert first.query in prompt
    assert evaluation.engine == "openai/stub-qa" and "openai/stub-qa" in str(evaluation.model)
    assert result.answered and "nowhere" not in result.answer
    # The stub cites every passage it was given: their snippets' papers, as `p<k>`.
    papers = {s.paper_id for s in collection(first)}
    assert set(result.cited_papers["litpipe"]) <= papers and result.cited_papers["litpipe"]
    assert all(marker in papers for marker, _ in _MARKER.findall(result.answer))
    assert result.words["litpipe"] <= result.budget_words


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=20),
            st.text(alphabet=st.characters(categories=("L", "N", "Zs")), max_size=60),
        ),
        max_size=8,
    )
)
def test_any_cited_answer_names_only_its_questions_snippets_within_the_budget(
    sentences: list[tuple[int, str]],
) -> None:
    (first,) = read_examples(DATA, limit=1)
    question = prepared_question(first)
    # The ingested papers' ids, as `ask_collections` finds them: one per snippet's row.
    snippet_of = {f"scholarqa-q.{row_id(s)}": s for s in question.snippets}
    ingested = list(snippet_of)
    cited = [(ingested[index % len(ingested)], words.strip() or "A") for index, words in sentences]
    answer = CollectionAnswer(
        request=CollectionAnswerRequest(collection="scholarqa-q", question=first.query),
        answered=bool(cited),
        text=" ".join(f"{words} [{paper}:1]." for paper, words in cited) or NOT_ANSWERED,
        citations=[
            Citation(marker=f"[{paper}:1]", paper_id=paper, page=1, chunk_ids=[f"{paper}:0"])
            for paper in dict.fromkeys(paper for paper, _ in cited)
        ],
        passages=[],
        papers=ingested,
        mode="single",
        engine="openai/generated",
    )
    result = scholarqa_result(question, answer, snippet_of)
    papers = {s.paper_id for s in question.snippets}
    assert set(result.cited_papers["litpipe"]) <= papers
    assert "scholarqa-q." not in result.answer
    assert result.words["litpipe"] <= result.budget_words
    for paper_id, number in _MARKER.findall(result.answer):
        assert any(s.paper_id == paper_id and s.number == int(number) for s in question.snippets)
