"""The refinement pass: which papers are thin, and follow-up questions that never repeat one
already asked (offline and from a model, through the local stub)."""

from __future__ import annotations

from pathlib import Path

from litpipe.agents.asker import Asker
from litpipe.agents.relationship_analysis.followups import follow_up_questions, thin_papers
from litpipe.extractive.paper_questions import QuestionsInput, offline_questions
from litpipe.llm.client import LLMClient
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import Insight, PaperAbstract, Question
from litpipe.settings import Settings
from litpipe_tests.passages import insight
from litpipe_tests.stub_llm import StubLLM, stub_settings

ABSTRACT = PaperAbstract(
    paper_id="rev1",
    title="REV1 Coordinates a Tolerance Response to DNA Alkylation Damage in Drosophila",
    abstract="When replication forks encounter damaged DNA, cells use damage tolerance "
    "mechanisms. Here we show that REV1 coordinates translesion synthesis polymerases in "
    "Drosophila larvae treated with methyl methanesulfonate. Loss of REV1 caused chromosome "
    "shattering in mitotic cells, revealing its role in preventing genome instability.",
    source="parsed",
    engine="parsed",
)


def asked_questions() -> list[Question]:
    """The questions the paper was first asked: the offline questions agent's."""
    inputs = QuestionsInput(paper_id="rev1", title=ABSTRACT.title, abstract=ABSTRACT.abstract)
    return [
        Question(question_id=f"rev1:q{i:02d}", paper_id="rev1", style=d.style, text=d.text)
        for i, d in enumerate(offline_questions(inputs).questions)
    ]


def test_thin_papers_have_too_few_cited_insights_or_no_name_in_the_narrative() -> None:
    uncited = insight("i05", "sparse", "Nothing answered").model_copy(update={"citations": []})
    insights: list[Insight] = [
        *(insight(f"i0{n}", "rich", f"Finding {n}") for n in range(1, 4)),
        insight("i04", "sparse", "One finding"),
        uncited,
        *(insight(f"i1{n}", "unnamed", f"Result {n}") for n in range(1, 4)),
    ]
    thin = thin_papers(["rich", "sparse", "unnamed"], insights, {"rich", "sparse"}, minimum=3)
    assert set(thin) == {"sparse", "unnamed"}
    assert thin["sparse"] == "only 1 of its insights cite its text (at least 3 wanted)"
    assert thin["unnamed"] == "the synthesis narrative does not name it"


def test_offline_follow_ups_are_new_questions(tmp_path: Path) -> None:
    asked = asked_questions()
    settings = Settings(home=tmp_path, synthesis={"follow_up_questions": 3})
    questions = follow_up_questions(
        ABSTRACT,
        asked,
        "too few insights",
        settings.synthesis.follow_up_questions,
        Asker(settings.llm),
    )
    assert [q.question_id for q in questions] == ["rev1:f00", "rev1:f01", "rev1:f02"]
    assert all(q.style == "follow_up" and q.paper_id == "rev1" for q in questions)
    asked_texts = {q.text.casefold() for q in asked}
    assert not asked_texts & {q.text.casefold() for q in questions}
    assert len({q.text for q in questions}) == 3


def test_a_model_repeating_an_asked_question_is_not_kept(tmp_path: Path, stub_llm: StubLLM) -> None:
    asked = asked_questions()
    stub_llm.script(
        "stub-followups",
        {
            "questions": [
                {"text": asked[0].text.upper()},
                {"text": "How long do REV1-deficient larvae survive?"},
                {"text": "Which lesions does REV1 bypass?"},
            ]
        },
    )
    settings = stub_settings(
        tmp_path,
        stub_llm,
        llm={"agents": {"followups": {"model": "openai/stub-followups"}}},
        synthesis={"follow_up_questions": 2},  # the refinement pass is off by default
    )
    client = LLMClient(settings.llm, settings.paths, UsageLedger())
    questions = follow_up_questions(
        ABSTRACT,
        asked,
        "not named",
        settings.synthesis.follow_up_questions,
        Asker(settings.llm, client),
    )
    assert [q.text for q in questions] == [
        "How long do REV1-deficient larvae survive?",
        "Which lesions does REV1 bypass?",
    ]
    (request,) = stub_llm.requests
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    assert "not named" in user and all(q.text in user for q in asked)
