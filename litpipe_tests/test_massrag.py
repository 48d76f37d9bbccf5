"""MASS-RAG multi-view answering: the three views and their reconciliation, offline (verbatim,
cited) and through a model (the local stub): each prompt used, the views reaching the reconciler.
The optional answer agent (`multi_view_answers`): a candidate answer from each view and their
comparison, offline, through the stub, and with any reply the schemas allow."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from litpipe.agents.answers import answer_questions
from litpipe.agents.asker import Asker
from litpipe.agents.massrag import VIEW_AGENTS, ReasonerAgent
from litpipe.citations import citations, resolve
from litpipe.extractive.answering import NO_ANSWER, AnswerInput
from litpipe.extractive.massrag import (
    NO_INFERENCE,
    CompareInput,
    ReconcileInput,
    offline_compare,
    offline_reconcile,
)
from litpipe.llm.client import LLMClient
from litpipe.llm.errors import ReplyValidationError
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import QuestionEvidence
from litpipe.settings import AgentRoute, Settings
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_agent_replies import MODEL, SEED, GeneratedClient
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
    "candidate": "You write one candidate answer to a question from one reader's view",
    "compare": "You compare three candidate answers to one question",
}


def offline_multi_view(
    tmp_path: Path, items: list[QuestionEvidence], mode: str = "multi_view"
) -> list[Any]:
    settings = Settings(home=tmp_path, synthesis={"answer_mode": mode})
    return answer_questions(items, settings.synthesis.answer_mode, Asker(settings.llm))


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
    once = f"{TLS[:-1]} [lee2024:3]."
    thrice = f"{REV1[:-1]} [smith2023:5]."
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
        stub.report_slots(8)
        settings = stub_settings(tmp_path, stub, synthesis={"answer_mode": "multi_view"})
        view_replies(stub)
        client = LLMClient(settings.llm, settings.paths, UsageLedger())
        with caplog.at_level(logging.WARNING):
            answers = answer_questions(
                items, settings.synthesis.answer_mode, Asker(settings.llm, client)
            )
        requests = stub.requests
        # The three views of both questions were in flight together.
        assert stub.max_in_flight > len(texts)

    def system(body: dict[str, Any]) -> str:
        return body["messages"][0]["content"]

    for view in ("summarizer", "extractor", "reasoner", "reconcile"):
        assert sum(SYSTEM_LINES[view] in system(body) for body in requests) == len(texts)
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


# The optional answer agent: a candidate answer from each view, then their comparison.


def test_offline_multi_view_answers_pick_a_candidate_written_from_a_view(tmp_path: Path) -> None:
    items = [QuestionEvidence(question=SENSITIVITY, chunks=EVIDENCE, reranked=True)]
    (answer,) = offline_multi_view(tmp_path, items, "multi_view_answers")
    assert set(answer.views) == VIEWS and set(answer.candidates) == VIEWS
    assert answer.engine == "offline"
    for candidate in answer.candidates.values():
        assert_verbatim_and_cited(candidate, EVIDENCE)
    # The final answer is one of the candidates, whole: extractive, every sentence cited.
    assert answer.text in answer.candidates.values()
    assert cited_units(answer.text)[0][0] == REV1
    assert {c.paper_id for c in answer.citations} == {"smith2023", "lee2024"}


def test_the_offline_comparison_picks_the_candidate_its_passages_bear_out() -> None:
    right = f"{REV1} [smith2023:5]"
    # The same words cited to a passage that does not hold them, and a partial, off-topic one.
    miscited = f"{REV1} [lee2024:3]"
    off_topic = f"{GROWTH} [smith2023:5]"
    candidates = {"summarizer": off_topic, "extractor": miscited, "reasoner": right}
    inputs = CompareInput(question=SENSITIVITY, evidence=EVIDENCE, candidates=candidates)
    assert offline_compare(inputs).answer == right
    # A tie goes to the first view; no supported candidate gives the fixed sentence.
    tied = CompareInput(
        question=SENSITIVITY, evidence=EVIDENCE, candidates=dict.fromkeys(VIEWS, right)
    )
    assert offline_compare(tied).answer == right
    nothing = {"summarizer": NO_ANSWER, "extractor": "Uncited words.", "reasoner": off_topic}
    unsupported = CompareInput(question=SENSITIVITY, evidence=EVIDENCE, candidates=nothing)
    assert offline_compare(unsupported).answer == NO_ANSWER


def test_a_candidate_from_each_view_reaches_the_comparison_through_a_model(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [SENSITIVITY.text, "Which polymerases tolerate alkylation damage?"]
    items = [
        QuestionEvidence(question=question(text, index), chunks=EVIDENCE, reranked=True)
        for index, text in enumerate(texts)
    ]

    def candidate(body: dict[str, Any]) -> dict[str, str]:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        view = re.search(r"The (\w+)'s view:", user).group(1)  # type: ignore[union-attr]
        return {"answer": f"From the {view}: {asked_question(body)} [smith2023:5]"}

    with StubLLM() as stub:
        settings = stub_settings(tmp_path, stub, synthesis={"answer_mode": "multi_view_answers"})
        view_replies(stub)
        stub.respond(SYSTEM_LINES["candidate"], candidate)
        stub.respond(
            SYSTEM_LINES["compare"],
            lambda body: {"answer": f"Compared {asked_question(body)} [lee2024:3] [nowhere:9]"},
        )
        client = LLMClient(settings.llm, settings.paths, UsageLedger())
        with caplog.at_level(logging.WARNING):
            answers = answer_questions(
                items, settings.synthesis.answer_mode, Asker(settings.llm, client)
            )
        requests = stub.requests

    def system(body: dict[str, Any]) -> str:
        return body["messages"][0]["content"]

    # Per question: three views, a candidate from each, one comparison; no reconciliation.
    assert len(requests) == 7 * len(texts)
    assert sum(SYSTEM_LINES["candidate"] in system(body) for body in requests) == 3 * len(texts)
    assert sum(SYSTEM_LINES["compare"] in system(body) for body in requests) == len(texts)
    assert not any(SYSTEM_LINES["reconcile"] in system(body) for body in requests)
    for text, answer in zip(texts, answers, strict=True):
        # The marker naming no passage given is removed.
        assert answer.text == f"Compared {text} [lee2024:3]"
        assert answer.engine == "openai/stub"
        assert answer.candidates == {
            view: f"From the {view}: {text} [smith2023:5]" for view in VIEWS
        }
        (compare,) = [
            body
            for body in requests
            if SYSTEM_LINES["compare"] in system(body) and asked_question(body) == text
        ]
        user = next(m["content"] for m in compare["messages"] if m["role"] == "user")
        for candidate_text in answer.candidates.values():
            assert f"<candidate>\n{candidate_text}\n</candidate>" in user
        # Each candidate was written from its own view.
        for view, view_text in answer.views.items():
            (written,) = [
                body
                for body in requests
                if SYSTEM_LINES["candidate"] in system(body)
                and asked_question(body) == text
                and f"The {view}'s view:" in body["messages"][1]["content"]
            ]
            assert f"<view>\n{view_text}\n</view>" in written["messages"][1]["content"]
    assert "[nowhere:9]" in caplog.text


@pytest.mark.parametrize("agent", ["massrag_candidate", "massrag_compare"])
def test_any_candidate_or_comparison_reply_keeps_every_citation_valid(
    agent: str, tmp_path: Path
) -> None:
    settings = Settings(
        home=tmp_path,
        corpus_roots=[],
        synthesis={"answer_mode": "multi_view_answers"},
        llm={"model": None, "agents": {agent: AgentRoute(model=MODEL)}},
    )
    items = [
        QuestionEvidence(question=SENSITIVITY, chunks=EVIDENCE, reranked=True),
        QuestionEvidence(
            question=question("Which polymerases tolerate alkylation damage?", 1),
            chunks=EVIDENCE,
            reranked=True,
        ),
    ]
    prompts = PromptLibrary(None)
    results: list[str] = []

    @seed(SEED)
    @hypothesis_settings(
        max_examples=40,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        try:
            answers = answer_questions(
                items,
                settings.synthesis.answer_mode,
                Asker(settings.llm, GeneratedClient(data), prompts),
            )
        except ReplyValidationError as error:
            assert str(error) and "\n" not in str(error)
            results.append("reason")
            return
        results.append("result")
        for answer in answers:
            # A reply of blanks or of markers naming nothing given leaves no empty answer.
            assert any(char.isalnum() for char in answer.text), answer.text
            for text in (answer.text, *answer.candidates.values()):
                # Whatever the model wrote, every marker left names a passage given.
                _, unresolved = citations(text, EVIDENCE)
                assert unresolved == [], text
            for cited in answer.citations:
                assert resolve(cited.paper_id, cited.page, EVIDENCE) is not None

    run()
    assert results.count("result") >= len(results) // 2
