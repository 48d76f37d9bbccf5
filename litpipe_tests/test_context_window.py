"""Every request fits the model's context window, and an item a model cannot serve loses nothing.

Each agent's stage runs (as in `test_agent_replies`) with only that agent routed to a "model"
whose client knows a small window and counts tokens: every conversation it is sent, plus the
reply's max_tokens, must fit. The LLM client itself is tested against the stub server: a reply
gets the room the prompt leaves, and a prompt that leaves none is never sent. Where a reply is
unusable the item is written offline, marked and counted, or fails alone as the user chooses.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import pytest
from pydantic import BaseModel, ValidationError

from litpipe.agents.answers import AnswersAgent, answer_questions
from litpipe.agents.asker import Asker
from litpipe.agents.base import ModelBatch
from litpipe.cli import main
from litpipe.llm.client import MIN_REPLY_TOKENS
from litpipe.llm.errors import ContextOverflowError, LLMError, ReplyValidationError
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.window import messages_tokens
from litpipe.schemas import Question, QuestionEvidence, RetrievedChunk
from litpipe.settings import AgentRoute, Route, Settings
from litpipe_tests.stub_llm import StubLLM, example_from_schema
from litpipe_tests.test_agent_replies import (
    CASES,
    MODEL,
    collection,
    each_or_its_error,
    offline_settings,
)
from litpipe_tests.test_llm_client import MESSAGES, Findings, make_client, route

T = TypeVar("T", bound=BaseModel)
_TOKEN = re.compile(r"\w{1,6}|[^\w\s]")


def tokens(text: str) -> int:
    """Words of at most six characters and single punctuation marks: a wordpiece-like count."""
    return len(_TOKEN.findall(text))


def reply_share(route: Route, window: int) -> int:
    """What the LLM client sets aside for the reply: its max_tokens, at most half the window."""
    return min(route.max_tokens, window // 2)


class WindowedClient:
    """Stands in for `LLMClient` with a context window of `window` tokens: records every
    conversation sent, and answers with the smallest reply its schema allows (or, where that
    does not validate, as a model whose reply stays unusable)."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.sent: list[tuple[Route, list[dict[str, str]]]] = []
        self.fallbacks: list[tuple[str, str]] = []

    def prompt_budget(self, route: Route, schema: type[BaseModel]) -> int | None:
        return self.window - reply_share(route, self.window)

    def count_tokens(self, route: Route, text: str) -> int:
        return tokens(text)

    def record_fallback(self, route: Route, reason: str) -> None:
        self.fallbacks.append((route.agent, reason))

    def complete_sync(self, route: Route, messages: list[dict[str, str]], schema: type[T]) -> T:
        self.sent.append((route, messages))
        try:
            return schema.model_validate(example_from_schema(schema.model_json_schema()))
        except ValidationError as error:
            raise ReplyValidationError(f"{route.agent}: unusable: {error.error_count()}") from None

    def complete_each_sync(
        self, route: Route, list_of_messages: Sequence[list[dict[str, str]]], schema: type[T]
    ) -> list[T | LLMError]:
        return each_or_its_error(self.complete_sync, route, list_of_messages, schema)

    def complete_many_sync(
        self, route: Route, list_of_messages: Sequence[list[dict[str, str]]], schema: type[T]
    ) -> list[T]:
        return [self.complete_sync(route, messages, schema) for messages in list_of_messages]

    def complete_batches_sync(
        self, batches: Sequence[ModelBatch]
    ) -> list[list[BaseModel | LLMError]]:
        return [list(self.complete_each_sync(*batch)) for batch in batches]


@pytest.mark.parametrize("window", [2048, 1024])
@pytest.mark.parametrize("agent", sorted(CASES))
def test_every_request_of_every_stage_fits_the_window(
    agent: str, window: int, tmp_path: Path
) -> None:
    """The issue's 2,048-token window (a llama.cpp server's default), and half of it: no
    request exceeds it, and the stage gives its result (items that cannot fit written
    offline)."""
    case = CASES[agent]
    settings = offline_settings(
        tmp_path,
        **case.settings,
        llm={"on_unusable": "offline", "agents": {agent: AgentRoute(model=MODEL)}},
    )
    client = WindowedClient(window)
    case.stage(collection(), settings, Asker(settings.llm, client, PromptLibrary()))
    assert client.sent or client.fallbacks, "the agent was neither asked nor replaced"
    for sent_route, messages in client.sent:
        # A revision request carries the first reply too: the client gives its reply what room
        # is left, which must be at least MIN_REPLY_TOKENS.
        revising = any(message["role"] == "assistant" for message in messages)
        room = MIN_REPLY_TOKENS if revising else reply_share(sent_route, window)
        assert messages_tokens(messages, tokens) + room <= window


def long_evidence(passages: int, words: int) -> QuestionEvidence:
    """A question of paper p1 with `passages` passages of about `words` words, best first."""
    sentence = "Protein {page} folds in {n} microseconds at room temperature."
    chunks = [
        RetrievedChunk(
            chunk_id=f"p1:{page}",
            paper_id="p1",
            section="Results",
            page_start=page,
            page_end=page,
            char_start=0,
            char_end=100,
            text=" ".join(sentence.format(page=page, n=n) for n in range(words // 9)),
            fused_rank=page,
            fused_score=1.0 / page,
        )
        for page in range(1, passages + 1)
    ]
    question = Question(
        question_id="p1-q1",
        paper_id="p1",
        text="How fast do proteins fold at room temperature?",
        style="broad",
    )
    return QuestionEvidence(question=question, chunks=chunks, reranked=False)


def test_an_answers_prompt_too_long_for_the_window_loses_its_last_passages_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Eight passages of 100 words at a 1,536-token window: the best passages are kept (they
    come first), the last are left out, and the log names how many."""
    settings = Settings(home=tmp_path, llm={"model": MODEL})
    client = WindowedClient(1536)
    with caplog.at_level(logging.WARNING, logger="litpipe.agents.base"):
        (answer,) = answer_questions(
            [long_evidence(8, 100)],
            settings.synthesis.answer_mode,
            Asker(settings.llm, client, PromptLibrary()),
        )
    ((sent_route, messages),) = client.sent
    prompt = messages[-1]["content"]
    assert "[p1:1]" in prompt and "[p1:8]" not in prompt
    assert messages_tokens(messages, tokens) + reply_share(sent_route, 1536) <= 1536
    (cut,) = [r.getMessage() for r in caplog.records if "cut to fit" in r.getMessage()]
    assert re.search(r"passages: \d of 8 parts left out", cut), cut
    assert answer.engine == MODEL


def test_an_item_whose_prompt_cannot_fit_is_written_offline_and_marked(tmp_path: Path) -> None:
    """A window too small for the prompt's own words: nothing is sent, the answer is the offline
    engine's, the output's engine says so, and the fallback is counted."""
    settings = Settings(home=tmp_path, llm={"model": MODEL})
    client = WindowedClient(AnswersAgent.reply_tokens + 20)
    (answer,) = answer_questions(
        [long_evidence(2, 50)],
        settings.synthesis.answer_mode,
        Asker(settings.llm, client, PromptLibrary()),
    )
    assert client.sent == []
    assert answer.engine.startswith(f"{MODEL}, offline fallback for 1 of 1: answers:")
    assert "[p1:" in answer.text  # the offline engine's cited sentence
    assert [agent for agent, _ in client.fallbacks] == ["answers"]


def test_with_on_unusable_fail_an_unusable_item_fails_alone(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, llm={"model": MODEL, "on_unusable": "fail"})
    client = WindowedClient(AnswersAgent.reply_tokens + 20)
    with pytest.raises(ContextOverflowError, match="does not fit"):
        answer_questions(
            [long_evidence(2, 50)],
            settings.synthesis.answer_mode,
            Asker(settings.llm, client, PromptLibrary()),
        )
    assert client.fallbacks == []


def test_a_reply_gets_the_room_the_prompt_leaves_in_the_window(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    client = make_client(tmp_path, stub_llm, llm={"context_tokens": 400})
    client.complete_sync(route(client), MESSAGES, Findings)
    (request,) = stub_llm.requests
    assert 64 <= request["max_tokens"] < 400
    window_route = route(client)
    prompt = messages_tokens(
        request["messages"], lambda text: client.count_tokens(window_route, text)
    )
    assert prompt + request["max_tokens"] <= 400


def test_a_prompt_that_leaves_no_room_for_a_reply_is_never_sent(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    client = make_client(tmp_path, stub_llm, llm={"context_tokens": 300})
    long = [MESSAGES[0], {"role": "user", "content": "Paper p1: " + "we measured things. " * 80}]
    with pytest.raises(ContextOverflowError, match="300-token window") as caught:
        client.complete_sync(route(client), long, Findings)
    assert stub_llm.request_count == 0
    assert "nothing was sent" in str(caught.value)


def test_an_unusable_reply_is_written_offline_marked_and_counted(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    """Through the real client: both the reply and its repair are unusable; the answer is the
    offline engine's, its engine names the fallback and why, and the usage counts it."""
    stub_llm.fail_next("invalid_json", 2)
    client = make_client(tmp_path, stub_llm)
    asker = Asker(client.llm, client, PromptLibrary())
    mode = "single"
    (answer,) = answer_questions([long_evidence(2, 50)], mode, asker)
    model = asker.route(AnswersAgent()).model
    assert answer.engine.startswith(f"{model}, offline fallback for 1 of 1: answers: {model}")
    assert "even after one repair" in answer.engine
    usage = client.usage.summary()
    assert (usage.failed, usage.fallbacks) == (1, 1)
    # Answered again, the question is asked again (a failure is never cached): the server
    # answers now, and the answer is the model's.
    (again,) = answer_questions([long_evidence(2, 50)], mode, asker)
    assert again.engine == model and stub_llm.request_count == 3
    # The next answer of the same agent is the model's again: the mark is per run.
    answer_questions([long_evidence(1, 20)], mode, asker)
    assert asker.engine(AnswersAgent()) == model


def test_status_says_each_models_window_and_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LITPIPE_LLM__AGENTS", '{"answers": {"context_tokens": 4096}}')
    assert main(["status", "--home", str(tmp_path), "--model", "openai/gpt-4o-mini"]) == 0
    shown = capsys.readouterr().out
    assert "model for every agent: openai/gpt-4o-mini; window 128,000 tokens (litellm" in shown
    assert "model for agent answers: openai/gpt-4o-mini; window 4,096 tokens (llm.context" in shown
