"""Comparative questions across a collection: offline pairs by shared words, covering the
papers; a model's paper ids checked (through the local stub)."""

from __future__ import annotations

import random
from itertools import combinations
from pathlib import Path

import pytest

from litpipe.agents.asker import Asker
from litpipe.agents.cross_paper_questions import comparative_questions
from litpipe.extractive import cross_paper_questions as cross_paper_module
from litpipe.extractive.cross_paper_questions import (
    ComparedPaper,
    CrossPaperQuestionsInput,
    offline_cross_paper_questions,
)
from litpipe.llm.client import LLMClient
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import PaperAbstract
from litpipe.settings import Settings
from litpipe_tests.stub_llm import StubLLM, stub_settings


def abstract(paper_id: str, title: str, text: str) -> PaperAbstract:
    return PaperAbstract(
        paper_id=paper_id, title=title, abstract=text, source="parsed", engine="parsed"
    )


ABSTRACTS = [
    abstract(
        "base",
        "Base editing corrects sickle cell disease",
        "We correct the sickle mutation of the HBB gene with adenine base editing in "
        "haematopoietic stem cells.",
    ),
    abstract(
        "microcins",
        "Class II microcins in Enterobacterales",
        "Genome mining reveals widespread class II microcins across Enterobacterales genomes.",
    ),
    abstract(
        "prime",
        "Prime editing of the HBB gene",
        "Prime editing of the HBB gene in haematopoietic stem cells corrects the sickle "
        "mutation with few indels.",
    ),
]


def test_offline_questions_compare_papers_that_share_words_and_cover_all(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, synthesis={"cross_paper_questions": 4})
    questions = comparative_questions(
        "col", ABSTRACTS, settings.synthesis.cross_paper_questions, Asker(settings.llm)
    )
    assert [q.question_id for q in questions] == [f"col:x{i:02d}" for i in range(4)]
    assert all(q.style == "comparative" and q.paper_id == "" for q in questions)
    assert all(q.text.endswith("?") for q in questions)
    # The most alike pair first; every paper compared at least once.
    assert set(questions[0].papers) == {"base", "prime"}
    assert {paper for q in questions for paper in q.papers} == {"base", "microcins", "prime"}
    titles = {a.paper_id: a.title for a in ABSTRACTS}
    for question in questions:
        assert len(question.papers) == 2
        for paper in question.papers:
            assert f'"{titles[paper]}"' in question.text
    assert len({q.text for q in questions}) == 4


def test_a_single_paper_has_nothing_to_compare(tmp_path: Path, stub_llm: StubLLM) -> None:
    settings = stub_settings(tmp_path, stub_llm, synthesis={"cross_paper_questions": 4})
    client = LLMClient(settings.llm, settings.paths, UsageLedger())
    assert (
        comparative_questions(
            "col",
            ABSTRACTS[:1],
            settings.synthesis.cross_paper_questions,
            Asker(settings.llm, client),
        )
        == []
    )
    assert stub_llm.request_count == 0


def test_by_default_none_are_asked_and_no_call_is_made(tmp_path: Path, stub_llm: StubLLM) -> None:
    # An extra beyond X-Sum's pipeline 2 (docs/how-to/models.md, "What a run costs"): off unless
    # asked for.
    settings = stub_settings(tmp_path, stub_llm)
    assert settings.synthesis.cross_paper_questions == 0
    client = LLMClient(settings.llm, settings.paths, UsageLedger())
    assert (
        comparative_questions(
            "col", ABSTRACTS, settings.synthesis.cross_paper_questions, Asker(settings.llm, client)
        )
        == []
    )
    assert stub_llm.request_count == 0


@pytest.mark.parametrize("count", [1, 2, 6])
def test_a_count_other_than_none_or_three_to_five_is_refused(tmp_path: Path, count: int) -> None:
    with pytest.raises(ValueError, match="cross_paper_questions"):
        Settings(home=tmp_path, synthesis={"cross_paper_questions": count})


def test_unknown_paper_ids_from_a_model_are_dropped(tmp_path: Path, stub_llm: StubLLM) -> None:
    stub_llm.script(
        "stub-cross",
        {
            "questions": [
                {"papers": ["base", "prime", "ghost"], "text": "How do the editors differ?"},
                {"papers": ["base", "ghost"], "text": "Does ghost agree with base?"},
                {"papers": ["microcins", "base"], "text": "What links microcins and editing?"},
            ]
        },
    )
    settings = stub_settings(
        tmp_path,
        stub_llm,
        llm={"agents": {"cross_paper_questions": {"model": "openai/stub-cross"}}},
        synthesis={"cross_paper_questions": 4},  # none are asked by default
    )
    client = LLMClient(settings.llm, settings.paths, UsageLedger())
    questions = comparative_questions(
        "col", ABSTRACTS, settings.synthesis.cross_paper_questions, Asker(settings.llm, client)
    )
    assert [(q.question_id, q.papers, q.text) for q in questions] == [
        ("col:x00", ["base", "prime"], "How do the editors differ?"),
        ("col:x01", ["microcins", "base"], "What links microcins and editing?"),
    ]
    (request,) = stub_llm.requests
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    for one in ABSTRACTS:
        assert one.paper_id in user and one.abstract in user


def test_a_large_collection_gets_the_questions_that_comparing_every_pair_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past a few papers the pairs come from each paper's nearest neighbours by shared words,
    not from every pair (12.5 million at 5,000 papers); the questions are the same. Here the
    second pair chosen, (near2, near3), is neither paper's nearest: both are nearer to the
    first pair's papers, already covered."""
    shared = [f"shared{number}" for number in range(10)]
    close = {
        "near0": shared,
        "near1": shared,
        "near2": [*shared, "extra2"],
        "near3": [*shared, "extra3"],
    }
    shuffle = random.Random(7)
    vocabulary = [f"term{number}" for number in range(200)]
    others = {f"other{number}": shuffle.sample(vocabulary, 12) for number in range(30)}
    papers = [
        ComparedPaper(paper_id=paper_id, title=paper_id, abstract=" ".join(terms) + ".")
        for paper_id, terms in {**close, **others}.items()
    ]
    inputs = CrossPaperQuestionsInput(collection="c", papers=papers, count=3)
    neighbours = offline_cross_paper_questions(inputs)
    monkeypatch.setattr(
        cross_paper_module,
        "_candidate_pairs",
        lambda profiles, count: list(combinations(profiles, 2)),
    )
    every_pair = offline_cross_paper_questions(inputs)
    assert neighbours == every_pair
    assert [question.papers for question in neighbours.questions][:2] == [
        ["near0", "near1"],
        ["near2", "near3"],
    ]
