"""LLMClient against the local stub server, through litellm's real OpenAI code path: structured
output both ways, the one repair, retries, permanent errors, the concurrency bound, and API keys
kept out of everything litpipe writes."""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
import time
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from litpipe.llm.client import PLACEHOLDER_API_KEY, LLMClient, model_call_loop
from litpipe.llm.errors import (
    PermanentLLMError,
    ReplyValidationError,
    TransientLLMError,
    one_line,
)
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import LLMUsage
from litpipe.settings import Route
from litpipe_tests.stub_llm import StubLLM, example_from_schema, stub_settings


class Finding(BaseModel):
    claim: str
    confidence: int = Field(ge=1, le=100)
    kind: Literal["method", "result"]


class Findings(BaseModel):
    paper: str
    findings: list[Finding] = Field(min_length=2)
    note: str | None = None


MESSAGES = [
    {"role": "system", "content": "You extract findings from papers."},
    {"role": "user", "content": "Paper p1: we measured things."},
]
# litellm knows this model's price and that it takes a JSON-schema response format.
KNOWN_MODEL = "openai/gpt-4o-mini"


def make_client(home: Path, stub: StubLLM, **overrides: Any) -> LLMClient:
    settings = stub_settings(home, stub, **overrides)
    client = LLMClient(settings.llm, settings.paths, UsageLedger(home / "usage.jsonl"))
    client.backoff_base_s = 0.01  # retries in milliseconds, not seconds
    return client


def route(client: LLMClient, model: str | None = None) -> Route:
    default = client.llm.route("findings")
    return default if model is None else default.model_copy(update={"model": model})


# litellm knows this model, and that it takes no JSON-schema response format.
UNSTRUCTURED_MODEL = "openai/gpt-4"


def test_a_model_without_structured_output_is_told_the_schema(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    client = make_client(tmp_path, stub_llm)
    result = client.complete_sync(route(client, UNSTRUCTURED_MODEL), MESSAGES, Findings)
    assert isinstance(result, Findings) and len(result.findings) == 2
    (request,) = stub_llm.requests
    assert request["model"] == "gpt-4" and "response_format" not in request
    system = request["messages"][0]["content"]
    assert system.startswith("You extract findings from papers.\n\n")
    assert '"Findings"' in system and "```json" in system
    assert request["messages"][1:] == MESSAGES[1:]
    assert (request["temperature"], request["max_tokens"]) == (0.0, 2048)


def test_a_model_with_structured_output_gets_the_json_schema_format(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    client = make_client(tmp_path, stub_llm)
    result = client.complete_sync(route(client, KNOWN_MODEL), MESSAGES, Findings)
    assert isinstance(result, Findings)
    (request,) = stub_llm.requests
    assert request["messages"] == MESSAGES
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "Findings",
            "schema": Findings.model_json_schema(),
            "strict": False,
        },
    }


def test_replies_in_fences_or_prose_are_parsed(tmp_path: Path, stub_llm: StubLLM) -> None:
    value = example_from_schema(Findings.model_json_schema())
    value["paper"] = "p1"
    body = Findings.model_validate(value).model_dump_json()
    stub_llm.script("p1", f"```json\n{body}\n```", f"Here you are: {body} Hope it helps.")
    client = make_client(tmp_path, stub_llm, llm={"cache": False})
    for _ in range(2):
        assert client.complete_sync(route(client), MESSAGES, Findings).paper == "p1"
    assert stub_llm.request_count == 2  # no repair needed


def test_an_invalid_reply_is_repaired_once_quoting_the_error(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    stub_llm.fail_next("invalid_json")
    client = make_client(tmp_path, stub_llm)
    assert isinstance(client.complete_sync(route(client), MESSAGES, Findings), Findings)
    first, repair = stub_llm.requests
    assert repair["messages"][: len(first["messages"])] == first["messages"]
    assistant, user = repair["messages"][-2:]
    assert assistant == {"role": "assistant", "content": '{"this is": not JSON'}
    assert "Invalid JSON" in user["content"]
    (record,) = client.usage.records
    assert record.repaired and not record.failed and record.requests == 2


def test_a_reply_still_invalid_after_the_repair_fails_clearly(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    stub_llm.fail_next("invalid_schema", 2)
    client = make_client(tmp_path, stub_llm)
    with pytest.raises(ReplyValidationError) as caught:
        client.complete_sync(route(client), MESSAGES, Findings)
    message = str(caught.value)
    assert "findings: openai/stub gave no valid Findings even after one repair" in message
    assert message.endswith("even after one repair: Input should be an object")
    assert stub_llm.request_count == 2
    assert client.usage.summary().failed == 1
    # Asked again, the same request is sent again: the failure was not cached, and the server
    # (fixed meanwhile) now answers.
    assert client.complete_sync(route(client), MESSAGES, Findings) is not None
    assert stub_llm.request_count == 3
    last = client.usage.records[-1]
    assert (last.cached, last.failed) == (False, False)


def test_rate_limits_wait_as_long_as_retry_after_says(tmp_path: Path, stub_llm: StubLLM) -> None:
    client = make_client(tmp_path, stub_llm, llm={"cache": False})
    # The first call asks the server what it is (its window, its slots) once: not timed.
    client.complete_sync(route(client), MESSAGES, Findings)
    stub_llm.fail_next("rate_limit", retry_after=1)
    started = time.perf_counter()
    client.complete_sync(route(client), MESSAGES, Findings)
    waited = time.perf_counter() - started
    assert 1.0 <= waited < 1.6  # Retry-After (plus up to 10%), not the 10 ms backoff
    (_, record) = client.usage.records
    assert (record.retries, record.requests, record.failed) == (1, 2, False)


def test_a_retry_after_beyond_the_cap_fails_at_once(tmp_path: Path, stub_llm: StubLLM) -> None:
    client = make_client(tmp_path, stub_llm)
    # A first call loads what any first call loads (litellm's tokenizers): not what is timed.
    client.complete_sync(route(client), MESSAGES, Findings)
    stub_llm.fail_next("rate_limit", retry_after=120)
    started = time.perf_counter()
    with pytest.raises(TransientLLMError, match=r"asks to wait 120 s .*\(Retry-After\)"):
        client.complete_sync(
            route(client), [*MESSAGES, {"role": "user", "content": "again"}], Findings
        )
    assert time.perf_counter() - started < 1 and stub_llm.request_count == 2


def test_server_errors_and_dropped_connections_are_retried(
    tmp_path: Path, stub_llm: StubLLM, caplog: pytest.LogCaptureFixture
) -> None:
    stub_llm.fail_next("server_error", 2)
    stub_llm.fail_next("drop")
    client = make_client(tmp_path, stub_llm)
    with caplog.at_level(logging.INFO, logger="litpipe.llm"):
        assert isinstance(client.complete_sync(route(client), MESSAGES, Findings), Findings)
    assert stub_llm.request_count == 4
    (record,) = client.usage.records
    assert (record.retries, record.failed) == (3, False)
    retries = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage().split("; retry ")[1][:3] for r in retries] == ["1/5", "2/5", "3/5"]
    (done,) = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert done.startswith("llm call findings openai/stub: made,") and "3 retries" in done


def test_a_request_that_hangs_times_out_and_is_retried(tmp_path: Path, stub_llm: StubLLM) -> None:
    stub_llm.fail_next("hang", seconds=30)
    client = make_client(tmp_path, stub_llm, llm={"timeout_s": 0.3})
    started = time.perf_counter()
    assert isinstance(client.complete_sync(route(client), MESSAGES, Findings), Findings)
    assert time.perf_counter() - started < 2
    assert client.usage.records[0].retries == 1


def test_retries_are_bounded(tmp_path: Path, stub_llm: StubLLM) -> None:
    stub_llm.fail_next("server_error", 10)
    client = make_client(tmp_path, stub_llm, llm={"max_retries": 2})
    with pytest.raises(TransientLLMError, match="still failing after 3 tries") as caught:
        client.complete_sync(route(client), MESSAGES, Findings)
    assert "llm.max_retries=2" in str(caught.value)
    assert stub_llm.request_count == 3
    assert client.usage.summary() == LLMUsage(failed=1, requests_sent=3)


@pytest.mark.parametrize(
    ("kind", "fix"),
    [
        ("unauthorized", "refused the key (401): set OPENAI_API_KEY in the environment"),
        ("bad_request", "rejected the request (400): check the model name and the agent's temp"),
        ("not_found", "has no such model (404): check llm.model, or llm.agents.findings.model"),
    ],
)
def test_permanent_errors_fail_at_once_saying_what_to_fix(
    tmp_path: Path, stub_llm: StubLLM, monkeypatch: pytest.MonkeyPatch, kind: str, fix: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    stub_llm.fail_next(kind)  # type: ignore[arg-type]
    client = make_client(tmp_path, stub_llm)
    with pytest.raises(PermanentLLMError) as caught:
        client.complete_sync(route(client), MESSAGES, Findings)
    assert str(caught.value).startswith(f"findings: openai/stub: the provider {fix}")
    assert "\n" not in str(caught.value)
    assert stub_llm.request_count == 1


def test_requests_in_flight_never_exceed_the_concurrency_bound(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    stub_llm.latency_s = 0.05
    stub_llm.report_slots(8)  # more than the bound: the bound holds
    client = make_client(tmp_path, stub_llm, llm={"concurrency": 4})
    conversations = [[{"role": "user", "content": f"paper {n}"}] for n in range(20)]

    async def twenty_at_once() -> list[Findings]:
        calls = (client.complete(route(client), messages, Findings) for messages in conversations)
        return await asyncio.gather(*calls)

    assert len(asyncio.run(twenty_at_once())) == 20
    assert stub_llm.request_count == 20 and stub_llm.max_in_flight == 4


def test_synchronous_callers_in_threads_share_the_bound(tmp_path: Path, stub_llm: StubLLM) -> None:
    stub_llm.latency_s = 0.05
    stub_llm.report_slots(8)
    client = make_client(tmp_path, stub_llm, llm={"concurrency": 2})

    def call(n: int) -> None:
        client.complete_sync(route(client), [{"role": "user", "content": f"paper {n}"}], Findings)

    threads = [threading.Thread(target=call, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert stub_llm.request_count == 8 and stub_llm.max_in_flight == 2


def test_complete_many_answers_in_order(tmp_path: Path, stub_llm: StubLLM) -> None:
    def echo_paper(body: dict[str, Any]) -> dict[str, Any]:
        value = example_from_schema(Findings.model_json_schema())
        return value | {"paper": body["messages"][-1]["content"]}

    stub_llm.respond("stub", echo_paper)
    client = make_client(tmp_path, stub_llm)
    papers = [f"p{n}" for n in range(6)]
    results = client.complete_many_sync(
        route(client), [[{"role": "user", "content": p}] for p in papers], Findings
    )
    assert [r.paper for r in results] == papers


def test_complete_many_raises_the_first_failure_after_all_calls_end(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    stub_llm.fail_next("not_found", marker="p1")
    client = make_client(tmp_path, stub_llm)
    with pytest.raises(PermanentLLMError):
        client.complete_many_sync(
            route(client), [[{"role": "user", "content": f"p{n}"}] for n in range(3)], Findings
        )
    assert client.usage.summary().model_dump(include={"made", "failed"}) == {
        "made": 2,
        "failed": 1,
    }


def test_a_model_without_a_provider_fails_at_once(tmp_path: Path, stub_llm: StubLLM) -> None:
    client = make_client(tmp_path, stub_llm)
    with pytest.raises(PermanentLLMError, match="litellm does not know which provider serves"):
        client.complete_sync(route(client, "no-provider-model"), MESSAGES, Findings)
    assert stub_llm.request_count == 0 and client.usage.summary().failed == 1


def test_callers_on_short_lived_loops_share_the_model_call_loop(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    # litellm keeps an HTTP client per event loop: one closed by asyncio.run must not be reused.
    client = make_client(tmp_path, stub_llm, llm={"cache": False})
    for _ in range(3):
        assert isinstance(asyncio.run(client.complete(route(client), MESSAGES, Findings)), Findings)
    assert stub_llm.request_count == 3


def test_a_synchronous_call_from_the_model_call_loop_is_refused(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    client = make_client(tmp_path, stub_llm, llm={"cache": False})

    async def blocking_call() -> Findings:
        return client.complete_sync(route(client), MESSAGES, Findings)

    future = asyncio.run_coroutine_threadsafe(blocking_call(), model_call_loop())
    with pytest.raises(RuntimeError, match="would wait for itself"):
        future.result(timeout=10)
    assert stub_llm.request_count == 0


def test_an_offline_route_is_refused(tmp_path: Path, stub_llm: StubLLM) -> None:
    client = make_client(tmp_path, stub_llm)
    with pytest.raises(ValueError, match="runs offline"):
        client.complete_sync(route(client, "offline"), MESSAGES, Findings)


def test_the_environment_key_wins_over_the_placeholder(
    tmp_path: Path, stub_llm: StubLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_client(tmp_path, stub_llm, llm={"cache": False})
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client.complete_sync(route(client), MESSAGES, Findings)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    client.complete_sync(route(client), MESSAGES, Findings)
    assert [h["authorization"] for h in stub_llm.request_headers] == [
        f"Bearer {PLACEHOLDER_API_KEY}",
        "Bearer sk-from-the-environment",
    ]


def test_the_api_key_is_never_written_or_logged(
    tmp_path: Path,
    stub_llm: StubLLM,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    secret = "sk-test-SECRET-123"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    caplog.set_level(logging.DEBUG)  # every logger, litellm's and the HTTP clients' included
    client = make_client(tmp_path, stub_llm)
    stub_llm.fail_next("rate_limit", retry_after=0.01)
    stub_llm.fail_next("invalid_json")
    for model in ("openai/stub", KNOWN_MODEL):
        client.complete_sync(route(client, model), MESSAGES, Findings)
        client.complete_sync(route(client, model), MESSAGES, Findings)  # a cache hit
    stub_llm.fail_next("unauthorized")
    with pytest.raises(PermanentLLMError) as caught:
        client.complete_sync(route(client), [{"role": "user", "content": "new"}], Findings)
    assert stub_llm.request_headers[0]["authorization"] == f"Bearer {secret}"  # it was used

    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert any(path.suffix == ".jsonl" for path in written)
    assert len([path for path in written if path.suffix == ".json"]) == 2
    for path in written:
        assert secret not in path.read_text("utf-8"), path
    captured = capfd.readouterr()
    for text in (caplog.text, captured.out, captured.err, str(caught.value)):
        assert secret not in text
    assert client.usage.summary() == client.usage.scope_summary()
    assert all(secret not in record.model_dump_json() for record in client.usage.records)


def test_credentials_in_the_api_base_go_as_basic_auth_and_messages_hide_the_password(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    """A server behind basic auth named `http://user:password@host/v1`, as HTTP clients take
    it (the password percent-encoded); litellm's async calls refuse such a URL as it is."""
    api_base = stub_llm.url.replace("http://", "http://canaryuser:CANARY%40SECRET@")
    client = make_client(tmp_path, stub_llm, llm={"api_base": api_base})

    client.complete_sync(route(client), MESSAGES, Findings)

    basic_auth = "Basic " + base64.b64encode(b"canaryuser:CANARY@SECRET").decode()
    assert [h["authorization"] for h in stub_llm.request_headers] == [basic_auth]
    # A provider's message naming the api base, as an error or a log line passes it on.
    message = f"Cannot connect to {api_base}/chat/completions; or to https://ghp_t0ken@git.example"
    shown = stub_llm.url.replace("http://", "http://canaryuser:***@")
    assert one_line(message) == (
        f"Cannot connect to {shown}/chat/completions; or to https://***@git.example"
    )


class Nested(BaseModel):
    tags: list[str] = Field(min_length=3, max_length=5)
    score: float = Field(gt=0.5, le=0.9)
    labels: dict[str, int]
    child: Finding | None
    choice: Literal["a", "b"] = "b"


def test_the_stub_writes_replies_valid_against_the_schema() -> None:
    assert Nested.model_validate(example_from_schema(Nested.model_json_schema()))
    assert Findings.model_validate(example_from_schema(Findings.model_json_schema()))


def test_the_stub_scripts_replies_per_marker(tmp_path: Path, stub_llm: StubLLM) -> None:
    scripted = example_from_schema(Findings.model_json_schema()) | {"paper": "scripted"}
    stub_llm.script("Paper p2", scripted)
    client = make_client(tmp_path, stub_llm, llm={"cache": False})
    other = [{"role": "user", "content": "Paper p2: another"}]
    assert client.complete_sync(route(client), MESSAGES, Findings).paper != "scripted"
    assert client.complete_sync(route(client), other, Findings).paper == "scripted"
    assert client.complete_sync(route(client), other, Findings).paper != "scripted"  # used up


def test_a_reply_cut_off_at_max_tokens_is_not_sent_back_for_a_repair(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    """Under the same limit, with the whole runaway reply in its prompt, a repair would run out
    too: one request, and the error says to raise max_tokens."""
    stub_llm.fail_next("cut_off")
    client = make_client(tmp_path, stub_llm)
    with pytest.raises(ReplyValidationError, match="cut off at max_tokens=2048"):
        client.complete_sync(route(client), MESSAGES, Findings)
    assert stub_llm.request_count == 1
    (record,) = client.usage.records
    assert (record.failed, record.repaired) == (True, False)
