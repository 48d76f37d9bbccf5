"""Model servers as they fail in use (issue 43, point 3): one that accepts and never answers, one
that decodes one request at a time without saying so, one whose window shows only when it
refuses a request.

- A hung server ends a `litpipe run` within its breaker's few timeouts, not the hour its retry
  settings would give: every paper built on the offline engine, the output marked `model
  unreachable`, the terminal saying it once.
- llama-cpp-python's server (one slot, no `/props`, a 2,048-token window it states only in
  refusing a longer request): the three bundled PDFs are built with never more than one request
  held by the server, no timeout, no reply decoded for a client that had gone, and one refusal,
  the one that teaches the window.
- A server that says nothing of itself and decodes one at a time: the in-flight limit learnt
  from latency goes back to one after its first probe.
- The in-flight limit, the breaker and the reading of providers' refusals, on their own.
"""

from __future__ import annotations

import asyncio
import csv
import itertools
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import litellm
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from litpipe.agents.answers import AnswersAgent, answer_questions
from litpipe.agents.asker import Asker
from litpipe.cli import main
from litpipe.llm.client.provider_errors import window_refusal
from litpipe.llm.client.routes import (
    PROBE_AFTER,
    Breaker,
    InFlightLimit,
    Ticket,
    WaitBudget,
)
from litpipe.llm.errors import ModelUnreachableError
from litpipe.llm.prompts import PromptLibrary
from litpipe.llm.window import PROBE_TIMEOUT_S
from litpipe.schemas import RunReport
from litpipe_tests.bundled import PDFS_BY_SIZE
from litpipe_tests.llama_server import LlamaServer
from litpipe_tests.stub_agents import serve_every_agent
from litpipe_tests.stub_llm import StubLLM, llama_cpp_python_like, prompt_tokens
from litpipe_tests.test_context_window import long_evidence
from litpipe_tests.test_llm_client import make_client

pytestmark = pytest.mark.xdist_group("model_server_faults")

DEMO = Path(__file__).parents[1] / "corpora" / "iclr-abstracts-demo" / "iclr_abstracts_demo.csv"
# A model name of these tests alone: what the process learns of its server stays theirs.
SMALL_MODEL = "openai/smollm2-135m"


def small_table(path: Path, papers: int) -> Path:
    with DEMO.open(newline="", encoding="utf-8") as demo:
        rows = list(csv.DictReader(demo))[:papers]
    with path.open("w", newline="", encoding="utf-8") as table:
        writer = csv.DictWriter(table, fieldnames=["id", "title", "abstract"])
        writer.writeheader()
        for row in rows:
            writer.writerow({name: row[name] for name in ("id", "title", "abstract")})
    return path


def run(
    home: Path, source: Path, stub: StubLLM, embedder: Path, model: str = "openai/stub"
) -> tuple[int, float]:
    """`litpipe run` of `source` against the stub: its exit status and how long it took."""
    arguments = ["run", str(source), "--home", str(home), "--embedder", str(embedder)]
    started = time.monotonic()
    code = main([*arguments, "--model", model, "--api-base", stub.url])
    return code, time.monotonic() - started


def report_of(home: Path, collection: str) -> RunReport:
    return RunReport.model_validate_json(
        (home / "outputs" / collection / "report.json").read_text("utf-8")
    )


def timeouts_in(log: str) -> int:
    """The requests the client gave up waiting for, as its retry warnings say."""
    return len(re.findall(r"Timeout|timed out", log))


# ---------------------------------------------------------------------------------------------
# A server that accepts and never answers.
# ---------------------------------------------------------------------------------------------

TIMEOUT_S = 5.0
BREAKER = 3
# What the run does besides waiting on its model (two abstracts, a tiny embedder): measured at
# 25-30 s here, bounded generously.
PIPELINE_S = 90.0


@pytest.mark.slow
def test_a_hung_server_ends_the_run_within_its_breaker_every_paper_written_offline(
    tmp_path: Path,
    tiny_model: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LITPIPE_LLM__TIMEOUT_S", str(TIMEOUT_S))
    monkeypatch.setenv("LITPIPE_LLM__BREAKER_FAILURES", str(BREAKER))
    home, table = tmp_path / "home", small_table(tmp_path / "hung.csv", 2)
    with StubLLM(hung=True, lifetime_s=600) as stub:
        code, seconds = run(home, table, stub, tiny_model)
        asked = stub.request_count
    printed = capsys.readouterr().err

    assert code == 0, printed
    # The retry settings (5 retries, 2 step retries) would have had each of the run's 30-odd
    # calls wait 18 timeouts: 45 minutes. The breaker opened after BREAKER, and nothing was
    # asked of the server after them.
    print(f"hung server: the run took {seconds:.0f} s, {asked} requests")
    assert asked == BREAKER
    assert seconds < BREAKER * TIMEOUT_S + PROBE_TIMEOUT_S + PIPELINE_S
    report = report_of(home, "hung")
    assert report.papers == 2 and report.failed_papers == [] and report.synthesis is not None
    # Every call became an item written offline.
    assert report.llm_calls["made"] == 0
    synthesis = (home / "outputs" / "hung" / "synthesis.md").read_text("utf-8")
    engine = re.search(r"written by (openai/stub, offline fallback for [^*]+)", synthesis)
    assert engine is not None, synthesis
    assert f"model unreachable: openai/stub at {stub.url} timed out" in engine.group(1)
    # One line says the server is unreachable, naming it; no line per item.
    said = [line for line in printed.splitlines() if line.startswith("model unreachable:")]
    assert said == [
        f"model unreachable: openai/stub at {stub.url} timed out, {BREAKER} times in a row "
        f"(llm.breaker_failures={BREAKER}); not asked again for 5 minutes: each item still to "
        "ask it is written without it"
    ]
    assert "offline fallback for one item" not in printed


@pytest.mark.slow
def test_a_step_retried_after_a_timeout_does_not_wait_again_on_the_unreachable_server(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No retry of its own (llm.max_retries 0), the first paper's call fails as transient and
    its step is retried by Dagster; meanwhile the second paper's call opened the breaker (two
    timeouts in a row). The retried step asks nothing: its items are written offline at once."""
    monkeypatch.setenv("LITPIPE_LLM__TIMEOUT_S", "2")
    monkeypatch.setenv("LITPIPE_LLM__MAX_RETRIES", "0")
    monkeypatch.setenv("LITPIPE_LLM__BREAKER_FAILURES", "2")
    monkeypatch.setenv("LITPIPE_LLM__STEP_RETRY_DELAY_S", "0")
    home, table = tmp_path / "home", small_table(tmp_path / "retried.csv", 2)
    with StubLLM(hung=True, lifetime_s=600) as stub:
        code, _ = run(home, table, stub, tiny_model)
        asked = stub.request_count
    assert code == 0
    assert asked == 2
    records = [
        json.loads(line)
        for ledger in (home / "usage").glob("*.jsonl")
        for line in ledger.read_text("utf-8").splitlines()
    ]
    (transient,) = [r for r in records if "still failing after 1 tries" in (r["error"] or "")]
    assert transient["agent"] == "paper_questions"
    # Without the step retry, that paper would have failed.
    report = report_of(home, "retried")
    assert report.papers == 2 and report.failed_papers == []


# ---------------------------------------------------------------------------------------------
# llama-cpp-python's server, and one that decodes one at a time without saying anything.
# ---------------------------------------------------------------------------------------------


def assert_built_without_queueing(home: Path, collection: str, papers: int, log: str) -> None:
    report = report_of(home, collection)
    assert report.papers == papers and report.failed_papers == [], log
    assert report.synthesis is not None
    assert (home / "outputs" / collection / "synthesis.md").exists()
    assert timeouts_in(log) == 0, log


@pytest.mark.slow
def test_llama_cpp_pythons_server_gets_one_request_at_a_time_and_teaches_its_window_once(
    tmp_path: Path,
    tiny_model: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's run: three bundled PDFs against SmolLM2 on llama-cpp-python's server (one
    slot, no `/props`, a 2,048-token window, replies taking their time)."""
    folder = tmp_path / "three-pdfs"
    folder.mkdir()
    for pdf in PDFS_BY_SIZE[:3]:
        (folder / pdf.name).write_bytes(pdf.read_bytes())
    home = tmp_path / "home"
    with llama_cpp_python_like(context_tokens=2048, decode_s=0.2) as stub:
        serve_every_agent(stub)
        code, seconds = run(home, folder, stub, tiny_model, SMALL_MODEL)
    printed = capsys.readouterr().err
    print(f"llama-cpp-python's server: {stub.request_count} requests in {seconds:.0f} s")

    assert code == 0, printed
    assert_built_without_queueing(home, "three-pdfs", 3, printed)
    assert stub.max_in_flight == 1
    assert stub.abandoned_decodes == 0
    assert stub.window_refusals == 1
    assert "its window is 2048 tokens, as the server said" in printed
    # Every request after the refusal fits the window by the server's own count.
    refused = next(
        index
        for index, body in enumerate(stub.requests)
        if prompt_tokens(body) + body["max_tokens"] > 2048
    )
    for body in stub.requests[refused + 1 :]:
        assert prompt_tokens(body) + body["max_tokens"] <= 2048


@pytest.mark.slow
def test_a_server_that_says_nothing_and_decodes_one_at_a_time_gets_one_request_at_a_time(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No `/props`, no `/openapi.json`: the limit learnt from latency probes two requests once,
    finds the second slower by the first's decoding, and goes back to one."""
    with llama_cpp_python_like(context_tokens=8192, decode_s=0.3) as stub:
        stub.pages = {}  # it says nothing of itself
        serve_every_agent(stub)
        code, _ = run(
            tmp_path / "home",
            small_table(tmp_path / "silent.csv", 3),
            stub,
            tiny_model,
            SMALL_MODEL,
        )
    printed = capsys.readouterr().err
    assert code == 0, printed
    assert_built_without_queueing(tmp_path / "home", "silent", 3, printed)
    assert stub.max_in_flight <= 2
    assert stub.abandoned_decodes == 0 and stub.window_refusals == 0


def test_a_prompt_too_long_for_a_window_the_server_states_only_in_refusing_is_cut_and_asked_again(
    tmp_path: Path,
) -> None:
    """Eight passages of 100 words to a 1,536-token window nothing reported: the server refuses
    the first request, stating its window; the answer's prompt is cut to it (its best passages
    kept) and asked once more, and the answer is the model's."""
    with llama_cpp_python_like(context_tokens=1536, decode_s=0.0) as stub:
        client = make_client(tmp_path, stub, llm={"model": SMALL_MODEL})
        asker = Asker(client.llm, client, PromptLibrary())
        (answer,) = answer_questions([long_evidence(8, 100)], "single", asker)
        asked = stub.requests
    assert stub.window_refusals == 1
    assert answer.engine == SMALL_MODEL
    chat = [body for body in asked if body.get("response_format", {}).get("type") != "json_schema"]
    first, *again = chat
    assert prompt_tokens(first) + first["max_tokens"] > 1536
    assert again and all(prompt_tokens(body) + body["max_tokens"] <= 1536 for body in again)
    assert "[p1:1]" in again[0]["messages"][-1]["content"]
    assert "[p1:8]" not in again[0]["messages"][-1]["content"]
    assert client.window(asker.route(AnswersAgent())).describe() == (
        "1,536 tokens (the server's refusal of a longer request)"
    )


def test_whatever_the_model_replies_after_the_window_is_learnt_the_item_is_answered_or_marked(
    tmp_path: Path,
) -> None:
    """The same, the server's replies generated from the schema alone (any value it allows):
    the answer is the model's, or the offline engine's with why; the window is refused once."""
    with llama_cpp_python_like(context_tokens=1536, decode_s=0.0) as stub:
        stub.schema_driven = True
        client = make_client(tmp_path, stub, llm={"model": SMALL_MODEL})
        asker = Asker(client.llm, client, PromptLibrary())
        answers = answer_questions(
            [long_evidence(8, 100), long_evidence(6, 120)],
            "single",
            asker,
        )
    assert stub.window_refusals == 1
    for answer in answers:
        assert answer.engine == SMALL_MODEL or answer.engine.startswith(
            f"{SMALL_MODEL}, offline fallback for "
        )


# ---------------------------------------------------------------------------------------------
# The in-flight limit, on its own: requests sent as it allows to a server modelled in turns.
# ---------------------------------------------------------------------------------------------


def sent_with(
    limit: InFlightLimit, requests: int, latency: Callable[[int], float]
) -> tuple[list[int], list[int]]:
    """Sends `requests` requests at once through `limit`, answering them first come, first
    served, each after `latency(requests in flight when it was sent)` seconds (reported, not
    waited): the requests in flight at each send, and the limit at each."""
    in_flight: list[int] = []
    limits: list[int] = []

    async def send_all() -> None:
        held: asyncio.Queue[tuple[Ticket, int]] = asyncio.Queue()

        async def request() -> None:
            ticket = await limit.acquire()
            in_flight.append(limit.in_flight)
            limits.append(limit.limit)
            held.put_nowait((ticket, limit.in_flight))

        tasks = [asyncio.create_task(request()) for _ in range(requests)]
        for _ in range(requests):
            ticket, crowd = await held.get()
            limit.finished(ticket, "answered", "answers", latency(crowd))
        await asyncio.gather(*tasks)

    asyncio.run(send_all())
    return in_flight, limits


def test_the_limit_starts_at_one_and_grows_to_the_ceiling_while_replies_come_as_fast() -> None:
    in_flight, limits = sent_with(InFlightLimit(ceiling=4, timeout_s=120), 40, lambda _: 1.0)
    assert limits[0] == 1 and in_flight[0] == 1
    assert max(in_flight) == 4 and limits[-1] == 4
    assert limits == sorted(limits)  # only ever raised


def test_on_a_server_decoding_one_at_a_time_the_limit_probes_rarely_and_stays_at_one() -> None:
    """Each request waits for those before it: two in flight take twice as long."""
    in_flight, limits = sent_with(
        InFlightLimit(ceiling=8, timeout_s=120), 4 * PROBE_AFTER, lambda crowd: 1.0 * crowd
    )
    assert max(in_flight) == 2
    # A probe of two, then one after PROBE_AFTER calm replies, then after twice as many.
    probes = sum(1 for before, now in itertools.pairwise(limits) if now > before)
    assert probes <= 3
    assert limits[-1] == 1


def test_the_limit_is_not_raised_where_the_requests_decoded_one_at_a_time_would_time_out() -> None:
    """Replies of 4 s against a 10 s timeout: two requests in a row fit it, three would not."""
    in_flight, limits = sent_with(InFlightLimit(ceiling=8, timeout_s=10), 30, lambda _: 4.0)
    assert max(limits) == 2 and max(in_flight) == 2


def test_a_timeout_drops_the_limit_to_one_and_the_retry_waits_for_every_request_in_flight() -> None:
    limit = InFlightLimit(ceiling=4, timeout_s=120)
    sent_with(limit, 20, lambda _: 1.0)
    assert limit.limit == 4

    async def scenario() -> list[str]:
        events: list[str] = []
        tickets = [await limit.acquire() for _ in range(4)]
        limit.finished(tickets[0], "timed_out", "answers", 120.0)
        assert limit.limit == 1

        async def retry() -> None:
            await limit.acquire()
            events.append("retry sent")

        waiting = asyncio.create_task(retry())
        for ticket in tickets[1:]:
            await asyncio.sleep(0)
            events.append("one in flight ended")
            limit.finished(ticket, "answered", "answers", 1.0)
        await waiting
        return events

    assert asyncio.run(scenario()) == ["one in flight ended"] * 3 + ["retry sent"]


def test_a_server_that_says_its_slots_keeps_them() -> None:
    limit = InFlightLimit(ceiling=8, timeout_s=120, slots=2)
    in_flight, limits = sent_with(limit, 20, lambda crowd: 5.0 * crowd)
    assert set(limits) == {2} and max(in_flight) == 2


def test_a_server_that_answers_slowly_gets_the_time_a_whole_reply_takes_it_within_a_bound() -> None:
    """A small model on a busy CPU writes a token a second: a 120 s timeout would give up on
    replies the server goes on decoding, and the retry would wait behind them."""
    limit = InFlightLimit(ceiling=1, timeout_s=120, slots=1)
    assert limit.timeout_for(512) == 120  # nothing answered yet: the setting, for the breaker

    async def answered(seconds: float, written: int) -> None:
        limit.finished(await limit.acquire(), "answered", "answers", seconds, written)

    asyncio.run(answered(2.0, 100))  # fast: the setting holds
    assert limit.timeout_for(512) == 120
    asyncio.run(answered(90.0, 100))  # 0.9 s a token: a 150-token reply takes 135 s
    assert limit.timeout_for(150) == pytest.approx(1.5 * 0.9 * 150)
    assert limit.timeout_for(4096) == 4 * 120  # never more than four times the setting
    # A short reply's time is mostly its prompt's: counted over at least 32 tokens.
    slow_prompt = InFlightLimit(ceiling=1, timeout_s=10, slots=1)
    slow_prompt.finished(asyncio.run(slow_prompt.acquire()), "answered", "answers", 16.0, 2)
    assert slow_prompt.timeout_for(32) == pytest.approx(1.5 * 16.0)


# ---------------------------------------------------------------------------------------------
# The breaker.
# ---------------------------------------------------------------------------------------------


def test_the_breaker_opens_after_failures_in_a_row_and_any_answer_closes_it(
    tmp_path: Path,
) -> None:
    state = tmp_path / "usage" / "run.routes" / "route.json"
    breaker = Breaker(3, "openai/stub at http://127.0.0.1:9/v1", state)
    assert breaker.failed("timed out") is None
    breaker.answered()  # the count starts again
    assert breaker.failed("timed out") is None and breaker.failed("timed out") is None
    opened = breaker.failed("timed out")
    assert isinstance(opened, ModelUnreachableError)
    assert str(opened).startswith(
        "model unreachable: openai/stub at http://127.0.0.1:9/v1 timed out, 3 times in a row"
    )
    with pytest.raises(ModelUnreachableError, match="model unreachable"):
        breaker.check()
    # A step retried in another process of the run finds it open.
    retried = Breaker(3, "openai/stub at http://127.0.0.1:9/v1", state)
    with pytest.raises(ModelUnreachableError, match="3 times in a row"):
        retried.check()
    retried.answered()
    assert not Breaker(3, "openai/stub at http://127.0.0.1:9/v1", state).is_open()


def test_a_waiting_request_fails_as_soon_as_the_breaker_opens() -> None:
    limit = InFlightLimit(ceiling=4, timeout_s=120)
    breaker = Breaker(1, "openai/stub at http://127.0.0.1:9/v1")

    async def scenario() -> None:
        await limit.acquire(breaker)
        waiting = asyncio.create_task(limit.acquire(breaker))
        await asyncio.sleep(0)
        assert breaker.failed("timed out") is not None
        limit.wake_all()
        with pytest.raises(ModelUnreachableError):
            await waiting

    asyncio.run(scenario())


def test_through_the_client_an_unreachable_server_is_asked_as_often_as_the_breaker_says(
    tmp_path: Path,
) -> None:
    """Nothing listens at the address: three calls, each refused at once once the breaker is
    open; the first call made all three tries."""
    with StubLLM() as stub:
        url = stub.url
    client = make_client(tmp_path, stub, llm={"api_base": url, "breaker_failures": 3})
    route = client.llm.route("findings")
    messages = [{"role": "user", "content": "Paper p1."}]
    failures = client.complete_each_sync(route, [messages] * 3, _Findings)
    assert all(isinstance(failure, ModelUnreachableError) for failure in failures)
    assert {str(failure) for failure in failures} == {
        f"model unreachable: openai/stub at {url} could not be reached, 3 times in a row "
        "(llm.breaker_failures=3); not asked again for 5 minutes"
    }
    assert sum(record.requests for record in client.usage.records) == 3


class _Findings(BaseModel):
    paper: str


def test_once_the_runs_time_for_waiting_on_models_is_spent_no_call_waits_any_more(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    """`llm.run_deadline_s` 2 s, the first request never answered (a 60 s timeout): it is given
    up at 2 s, and the next call of the run fails at once; a timeout the deadline cut short
    is not the server's, so the breaker (one failure here) stays closed."""
    stub_llm.fail_next("hang", seconds=30)
    client = make_client(
        tmp_path,
        stub_llm,
        llm={"run_deadline_s": 2, "timeout_s": 60, "breaker_failures": 1, "max_retries": 0},
    )
    route = client.llm.route("findings")
    started = time.monotonic()
    with pytest.raises(ModelUnreachableError, match="model unreachable in time") as first:
        client.complete_sync(route, [{"role": "user", "content": "Paper p1."}], _Findings)
    with pytest.raises(ModelUnreachableError, match=r"llm\.run_deadline_s"):
        client.complete_sync(route, [{"role": "user", "content": "Paper p2."}], _Findings)
    assert time.monotonic() - started < 4
    assert f"openai/stub at {stub_llm.url} was not asked" in str(first.value)
    assert stub_llm.request_count == 1


def test_the_runs_waiting_counts_concurrent_waits_once() -> None:
    budget = WaitBudget(10.0)

    async def two_at_once() -> None:
        async def wait() -> None:
            with budget.waiting():
                await asyncio.sleep(0.3)

        await asyncio.gather(wait(), wait())

    asyncio.run(two_at_once())
    assert 9.45 < budget.left() <= 9.7  # 0.3 s, not 0.6


# ---------------------------------------------------------------------------------------------
# Reading a provider's refusal of a request too long for its window.
# ---------------------------------------------------------------------------------------------

# How providers word it: (template, whether it states the prompt's tokens).
REFUSALS = [
    (
        "This model's maximum context length is {w} tokens. However, you requested {r} tokens "
        "({p} in the messages, {c} in the completion). Please reduce the length of the "
        "messages or completion.",
        True,
    ),
    (
        "This model's maximum context length is {w} tokens, however you requested {r} tokens "
        "({p} in your prompt; {c} for the completion). Please reduce your prompt; or "
        "completion length.",
        True,
    ),
    (
        "This model's maximum context length is {w} tokens. However, your messages resulted "
        "in {p} tokens. Please reduce the length of the messages.",
        True,
    ),
    (
        "'max_tokens' or 'max_completion_tokens' is too large: {c}. This model's maximum "
        "context length is {w} tokens and your request has {p} input tokens ({c} > {w} - {p}).",
        True,
    ),
    ("Input prompt ({p} tokens) is too long and exceeds limit of {w}", True),
    ("The prompt (total length {p}) is too long to fit into the model (context length {w}).", True),
    (
        "{{'error': {{'code': 400, 'message': 'the request exceeds the available context size, "
        "try increasing it', 'type': 'exceed_context_size_error', 'n_prompt_tokens': {p}, "
        "'n_ctx': {w}}}}}",
        True,
    ),
    (
        "request ({p} tokens) exceeds the available context size ({w} tokens), try increasing it",
        True,
    ),
    ("prompt is too long: {p} tokens > {w} maximum", True),
    (
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= {w}. Given: {p} "
        "`inputs` tokens and {c} `max_new_tokens`",
        True,
    ),
    (
        "Prompt contains {p} tokens and 0 draft tokens, too large for model with {w} maximum "
        "context length",
        True,
    ),
    ("The input token count ({p}) exceeds the maximum number of tokens allowed ({w}).", True),
    (
        "Trying to keep the first {p} tokens when context the overflows. However, the model is "
        "loaded with context length of only {w} tokens, which is not enough.",
        False,
    ),
]
# What litellm and the OpenAI SDK put around a server's message.
WRAPPINGS = [
    "{}",
    "litellm.ContextWindowExceededError: litellm.BadRequestError: OpenAIException - {}",
    "Error code: 400 - {{'error': {{'message': \"{}\", 'type': 'invalid_request_error'}}}}",
    "litellm.BadRequestError: Hosted_vllmException - {}\nReceived Model Group=x",
]


@given(
    window=st.integers(min_value=256, max_value=2_000_000),
    prompt=st.integers(min_value=1, max_value=4_000_000),
    completion=st.integers(min_value=1, max_value=200_000),
    refusal=st.sampled_from(REFUSALS),
    wrapping=st.sampled_from(WRAPPINGS),
    separated=st.booleans(),
)
def test_a_refusal_is_read_for_the_window_and_the_prompts_tokens_however_it_is_worded(
    window: int,
    prompt: int,
    completion: int,
    refusal: tuple[str, bool],
    wrapping: str,
    separated: bool,
) -> None:
    template, states_prompt = refusal

    def shown(number: int) -> str:
        return f"{number:,}" if separated else str(number)

    message = wrapping.format(
        template.format(
            w=shown(window), p=shown(prompt), c=shown(completion), r=shown(prompt + completion)
        )
    )
    read = window_refusal(message)
    assert read is not None, message
    assert read.window == window, message
    assert read.prompt == (prompt if states_prompt else None), message


@pytest.mark.slow
def test_llama_servers_own_refusal_is_read_for_its_window_and_the_prompts_tokens(
    llama_server: LlamaServer,
) -> None:
    """The real llama.cpp server (2,048 tokens of context), refusing a prompt of ~2,400."""
    with pytest.raises(litellm.ContextWindowExceededError) as refused:
        litellm.completion(
            model=llama_server.model,
            api_base=llama_server.api_base,
            api_key="not-needed",
            messages=[{"role": "user", "content": "soil bacteria " * 1200}],
            max_tokens=8,
        )
    read = window_refusal(str(refused.value))
    assert read is not None and read.window == 2048, str(refused.value)
    assert read.prompt is not None and read.prompt > 2048


@pytest.mark.parametrize(
    "message",
    [
        "Invalid value for 'temperature'.",
        "1 validation error: response_format.type Input should be 'text' or 'json_object'",
        "The model `stub` does not exist or you do not have access to it.",
        "Rate limit reached; please retry later.",
    ],
)
def test_other_refusals_state_no_window(message: str) -> None:
    assert window_refusal(message) is None
