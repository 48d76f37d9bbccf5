"""MASS-RAG multi-view answering: the three views and their reconciliation, offline (verbatim,
cited) and through a model (the local stub): each prompt used, the views reaching the reconciler."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from litpipe.agents.answering import NO_ANSWER, AnswerInput
from litpipe.agents.answers import answer_questions
from litpipe.agents.massrag import (
    NO_INFERENCE,
    VIEW_AGENTS,
    ReasonerAgent,
    ReconcileInput,
    offline_reconcile,
)
from litpipe.llm.client import LLMClient
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import QuestionEvidence
from litpipe.settings import Settings
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_answers import (
    EVIDENCE,
    GROWTH,
    REV1,
    SENSITIVITY,
    TLS,
    asked_question,
    assert_verbatim_and_cited,
    cited_units,
    question,
)

VIEWS = {"summarizer", "extractor", "reasoner"}
# A phrase of each prompt's system message, found in no other prompt.
SYSTEM_LINES = {
    "summarizer": "You are the summarizer among three readers",
    "extractor": "You are the extractor among three readers",
    "reasoner": "You are the reasoner among three readers",
    "reconcile": "You reconcile three readings of the same evidence",
}


def offline_multi_view(tmp_path: Path, items: list[QuestionEvidence]) -> list[Any]:
    settings = Settings(home=tmp_path, synthesis={"answer_mode": "multi_view"})
    return answer_questions(items, settings, PromptLibrary(None), None)


def test_offline_multi_view_answers_are_verbatim_cited_and_keep_their_views(
    tmp_path: Path,
) -> None:
    items = [QuestionEvidence(question=SENSITIVITY, chunks=EVIDENCE, reranked=True)]
    (answer,) = offline_multi_view(tmp_path, items)
    assert set(answer.views) == VIEWS
    assert answer.engine == "offline"
    assert_verbatim_and_cited(answer.text, EVIDENCE)
    for text in answer.views.values():
        assert_verbatim_and_cited(text, EVIDENCE)
    assert {c.paper_id for c in answer.citations} == {"smith2023", "lee2024"}
    # Every view holds the answering sentence: it leads the reconciled answer.
    assert cited_units(answer.text)[0][0] == REV1
    assert GROWTH not in answer.text


def test_the_offline_reasoner_pairs_sentences_of_different_papers_sharing_terms() -> None:
    reply = ReasonerAgent().offline(AnswerInput(question=SENSITIVITY, evidence=EVIDENCE))
    units = cited_units(reply.text)
    assert len(units) % 2 == 0
    first, second = units[0], units[1]
    # Both about alkylation damage, one from each paper.
    assert {first[0], second[0]} == {REV1, TLS}
    assert first[1] != second[1]


def test_offline_reconciliation_orders_by_support_across_views() -> None:
    once = f"{TLS} [lee2024:3]"
    thrice = f"{REV1} [smith2023:5]"
    views = {"summarizer": f"{once} {thrice}", "extractor": thrice, "reasoner": thrice}
    reply = offline_reconcile(ReconcileInput(question=SENSITIVITY, evidence=EVIDENCE, views=views))
    assert reply.answer == f"{thrice} {once}"
    nothing = dict.fromkeys(VIEWS, NO_ANSWER)
    empty = ReconcileInput(question=SENSITIVITY, evidence=EVIDENCE, views=nothing)
    assert offline_reconcile(empty).answer == NO_ANSWER


def test_offline_multi_view_says_so_when_the_passages_do_not_answer(tmp_path: Path) -> None:
    unrelated = question("How does photosynthetic carbon fixation vary with latitude?")
    items = [QuestionEvidence(question=unrelated, chunks=EVIDENCE, reranked=True)]
    (answer,) = offline_multi_view(tmp_path, items)
    assert answer.text == NO_ANSWER and answer.citations == []
    assert answer.views == {
        "summarizer": NO_ANSWER,
        "extractor": NO_ANSWER,
        "reasoner": NO_INFERENCE,
    }


# Through a model.


def view_replies(stub: StubLLM) -> None:
    """Each view answers with text naming its view and the question it was asked."""
    stub.respond(
        SYSTEM_LINES["summarizer"],
        lambda body: {"text": f"Summary of {asked_question(body)} [smith2023:5]"},
    )
    stub.respond(
        SYSTEM_LINES["extractor"],
        lambda body: {
            "spans": [
                {"marker": "[smith2023:5]", "quote": REV1},
                {"marker": "[lee2024:3]", "quote": "Polymerases cure all damage."},
            ]
        },
    )
    stub.respond(
        SYSTEM_LINES["reasoner"],
        lambda body: {"text": f"Inference on {asked_question(body)} [smith2023:5; lee2024:3]"},
    )
    stub.respond(
        SYSTEM_LINES["reconcile"],
        lambda body: {"answer": f"Reconciled {asked_question(body)} [lee2024:3]"},
    )


def test_each_view_prompt_is_used_and_the_reconciler_reads_the_three_views(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [SENSITIVITY.text, "Which polymerases tolerate alkylation damage?"]
    items = [
        QuestionEvidence(question=question(text, index), chunks=EVIDENCE, reranked=True)
        for index, text in enumerate(texts)
    ]
    with StubLLM(latency_s=0.2) as stub:
        settings = stub_settings(tmp_path, stub, synthesis={"answer_mode": "multi_view"})
        view_replies(stub)
        client = LLMClient(settings, UsageLedger())
        with caplog.at_level(logging.WARNING):
            answers = answer_questions(items, settings, PromptLibrary(None), client)
        requests = stub.requests
        # The three views of both questions were in flight together.
        assert stub.max_in_flight > len(texts)

    def system(body: dict[str, Any]) -> str:
        return body["messages"][0]["content"]

    for line in SYSTEM_LINES.values():
        assert sum(line in system(body) for body in requests) == len(texts)
    assert len(requests) == 4 * len(texts)

    for text, answer in zip(texts, answers, strict=True):
        assert answer.text == f"Reconciled {text} [lee2024:3]"
        assert answer.engine == "openai/stub"
        assert answer.views == {
            "summarizer": f"Summary of {text} [smith2023:5]",
            # The paraphrase passed off as a quote is dropped.
            "extractor": f"{REV1} [smith2023:5]",
            "reasoner": f"Inference on {text} [smith2023:5; lee2024:3]",
        }
        (reconcile,) = [
            body
            for body in requests
            if SYSTEM_LINES["reconcile"] in system(body) and asked_question(body) == text
        ]
        user = next(m["content"] for m in reconcile["messages"] if m["role"] == "user")
        for view_text in answer.views.values():
            assert f"<view>\n{view_text}\n</view>" in user
    assert "extractor quoted words no passage holds" in caplog.text


def test_view_agents_cover_the_three_views() -> None:
    assert set(VIEW_AGENTS) == VIEWS
    assert {agent.name for agent in VIEW_AGENTS.values()} == {
        "massrag_summarizer",
        "massrag_extractor",
        "massrag_reasoner",
    }
