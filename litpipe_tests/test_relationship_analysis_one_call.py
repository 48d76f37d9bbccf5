"""The relationship analysis in one model call (the `analysis` agent), as X-Sum's pipeline 2
makes it, where it fits; in two steps (`insights` per paper, then `relationships`) where it does
not fit the window or the agents go to different models. Through the local stub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from litpipe.agents.asker import Asker
from litpipe.llm.client import LLMClient
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import (
    Answer,
    CitationContext,
    CitedRelationship,
    CrossPaperQuestions,
    PaperAbstract,
    PaperAnswers,
    Question,
)
from litpipe.settings import Settings
from litpipe.workflows.relationship_analysis import analyse
from litpipe_tests.stub_agents import serve_every_agent
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_insights import ANSWERS

TITLES = {"alpha": "Base editing of HBB", "beta": "Prime editing of HBB"}


# Beta extends alpha, as its own sentence on its page 5 says.
EXTENDS = CitedRelationship(
    citing="beta",
    cited="alpha",
    type="extension",
    context=CitationContext(
        reference_index=0,
        marker="[1]",
        marker_start=40,
        sentence="We extend the base editor of [1] to prime editing.",
        char_start=10,
        char_end=60,
        page=5,
        section="Results",
    ),
    why="extends: 'We extend' next to the marker",
)


def _analyse(settings: Settings, cited: list[CitedRelationship] | None = None) -> Any:
    answers = {
        paper: PaperAnswers(
            paper_id=paper,
            mode="single",
            engine="openai/stub",
            answers=[a for a in ANSWERS if a.question.paper_id == paper],
        )
        for paper in TITLES
    }
    comparative = CrossPaperQuestions(
        collection="col",
        engine="openai/stub",
        answers=[a for a in ANSWERS if a.question.style == "comparative"],
    )
    abstracts = {
        paper: PaperAbstract(
            paper_id=paper, title=title, abstract="An abstract.", source="parsed", engine="parsed"
        )
        for paper, title in TITLES.items()
    }

    def no_follow_ups(paper_id: str, questions: list[Question]) -> list[Answer]:
        raise AssertionError("no follow-up questions are asked by default")

    return analyse(
        "col",
        answers,
        comparative,
        abstracts,
        no_follow_ups,
        settings.synthesis,
        Asker(settings.llm, LLMClient(settings.llm, settings.paths, UsageLedger())),
        cited=cited or [],
    )


def _user(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")


def _schema_title(request: dict[str, Any]) -> str:
    format_ = request.get("response_format") or {}
    schema = format_.get("json_schema", {}).get("schema", {})
    return str(schema.get("title", ""))


def test_one_model_makes_the_whole_analysis_in_one_call(tmp_path: Path, stub_llm: StubLLM) -> None:
    # Pairs i01, i02 (alpha), i03 (beta), i04 (comparative).
    stub_llm.script(
        "stub",
        {
            "insights": [
                {"insight_id": "i01", "text": "Base editing corrected 80% of cells [alpha:2]."},
                {"insight_id": "i03", "text": "Prime editing made fewer indels [beta:5] [x:9]."},
                {"insight_id": "i04", "text": "They trade correction for indels [alpha:2]."},
                {"insight_id": "i07", "text": "An insight about no pair [beta:5]."},
            ],
            "relationships": [
                {"source": "i01", "target": "i03", "type": "improvement", "explanation": "Kept."},
                {"source": "i01", "target": "i02", "type": "parallel", "explanation": "Same."},
                {"source": "i01", "target": "i09", "type": "parallel", "explanation": "Who?"},
            ],
            "theme": "Editing the HBB gene.",
            "narrative": "Base editing [alpha:2] and prime editing [beta:5] edit HBB [beta:99].",
        },
    )
    analysis = _analyse(stub_settings(tmp_path, stub_llm))

    (request,) = stub_llm.requests
    assert _schema_title(request) == "AnalysisReply"
    user = _user(request)
    for pair_id, one in zip(("i01", "i02", "i03", "i04"), ANSWERS, strict=True):
        assert f"Pair {pair_id} (" in user and one.question.text in user
    assert "Pair i04 (comparative: P1, P2)" in user

    assert [i.insight_id for i in analysis.insights] == ["i01", "i02", "i03", "i04"]
    by_id = {i.insight_id: i for i in analysis.insights}
    assert by_id["i01"].text == "Base editing corrected 80% of cells [alpha:2]."
    # The marker the pair's evidence does not hold is removed; the missing insight is offline's.
    assert by_id["i03"].text == "Prime editing made fewer indels [beta:5]."
    assert by_id["i02"].question_ids == ["alpha:q01"] and by_id["i02"].text
    assert by_id["i04"].paper_id == "" and by_id["i04"].papers == ["alpha"]
    assert [(r.source, r.target) for r in analysis.relationships] == [("i01", "i03")]
    assert analysis.narrative == "Base editing [alpha:2] and prime editing [beta:5] edit HBB."
    assert analysis.engine == "openai/stub"
    assert analysis.follow_ups == []


def test_a_window_too_small_for_one_call_makes_it_in_two_steps(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    serve_every_agent(stub_llm)
    # The one call's reply alone (4,096 tokens) fills the window; each step's call fits.
    settings = stub_settings(tmp_path, stub_llm, llm={"context_tokens": 4096})
    analysis = _analyse(settings)
    titles = [_schema_title(request) for request in stub_llm.requests]
    assert sorted(titles) == ["InsightsReply"] * 3 + ["RelationsReply"]
    assert [i.insight_id for i in analysis.insights] == ["i01", "i02", "i03", "i04"]


@pytest.mark.parametrize("agent", ["insights", "relationships"])
def test_an_agent_routed_to_its_own_model_keeps_the_two_steps(
    tmp_path: Path, stub_llm: StubLLM, agent: str
) -> None:
    serve_every_agent(stub_llm)
    settings = stub_settings(
        tmp_path, stub_llm, llm={"agents": {agent: {"model": "openai/stub-own"}}}
    )
    _analyse(settings)
    titles = [_schema_title(request) for request in stub_llm.requests]
    assert "AnalysisReply" not in titles and "RelationsReply" in titles


def test_the_default_analysis_makes_no_more_calls_than_x_sum(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    # X-Sum's pipeline 2 analyses a collection in one call; so does litpipe by default, with
    # no refinement pass (follow-up questions are an extra: docs/how-to/models.md, "What a
    # run costs").
    serve_every_agent(stub_llm)
    settings = stub_settings(tmp_path, stub_llm)
    assert settings.synthesis.follow_up_questions == 0
    analysis = _analyse(settings)
    assert stub_llm.request_count == 1
    assert json.dumps(analysis.model_dump())  # a whole analysis, serializable


@pytest.mark.parametrize("window", [None, 4096], ids=["one call", "two steps"])
def test_the_model_is_given_the_citing_sentences_between_the_papers_as_evidence(
    tmp_path: Path, stub_llm: StubLLM, window: int | None
) -> None:
    serve_every_agent(stub_llm)
    settings = stub_settings(
        tmp_path, stub_llm, llm={"context_tokens": window} if window is not None else {}
    )
    analysis = _analyse(settings, [EXTENDS])
    [request] = [
        request
        for request in stub_llm.requests
        if _schema_title(request) in ("AnalysisReply", "RelationsReply")
    ]
    user = _user(request)
    # Alpha is P1, beta P2: the sentence is fenced as the papers' own text.
    assert "- P2 cites P1 (page 5, extension):" in user
    assert "We extend the base editor of [1] to prime editing." in user
    assert analysis.cited_relationships == [EXTENDS]


def test_without_citations_between_the_papers_the_prompt_says_so(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    serve_every_agent(stub_llm)
    _analyse(stub_settings(tmp_path, stub_llm))
    [request] = stub_llm.requests
    assert "(none: no paper of the collection cites another)" in _user(request)
