"""Usage per step and per run, cost from litellm's prices, and the budget that stops a run."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import litellm
import pytest
from pydantic import BaseModel

from litpipe.llm.client import LLMClient
from litpipe.llm.errors import BudgetExceededError, TransientLLMError
from litpipe.llm.usage import CallRecord, UsageLedger, calls_counts, calls_line
from litpipe.schemas import LLMUsage
from litpipe.settings import Route
from litpipe_tests.stub_llm import StubLLM, stub_settings

MESSAGES = [{"role": "user", "content": "Summarise paper p1."}]
KNOWN_MODEL = "openai/gpt-4o-mini"  # litellm knows its price


class Summary(BaseModel):
    text: str


RECORDS = [
    CallRecord(agent="a", model="m", tokens_in=100, tokens_out=20, cost_usd=0.5),
    CallRecord(agent="a", model="m", cached=True),
    CallRecord(agent="b", model="m", failed=True, tokens_in=7, error="no"),
    CallRecord(agent="b", model="m", tokens_in=1, tokens_out=2, cost_usd=0.25),
]


def test_a_ledger_sums_its_calls(tmp_path: Path) -> None:
    ledger = UsageLedger()
    for record in RECORDS:
        ledger.record(record)
    expected = LLMUsage(made=2, cached=1, failed=1, tokens_in=108, tokens_out=22, cost_usd=0.75)
    assert ledger.summary() == expected == ledger.scope_summary()


def test_ledgers_sharing_a_file_sum_the_scope(tmp_path: Path) -> None:
    path = tmp_path / "usage" / "run-1.jsonl"
    first, second = UsageLedger(path), UsageLedger(path)
    first_records, second_records = RECORDS[:2], RECORDS[2:]
    for record in first_records:
        first.record(record)
    assert first.scope_summary() == first.summary()  # read so far: only the first's
    for record in second_records:
        second.record(record)
    assert first.summary().made == 1 and second.summary().made == 1
    assert first.scope_summary() == second.scope_summary() == UsageLedger(path).scope_summary()
    assert first.scope_summary().cost_usd == 0.75
    lines = path.read_text("utf-8").splitlines()
    assert [CallRecord.model_validate_json(line) for line in lines] == RECORDS


def test_a_line_still_being_written_counts_once_it_is_whole(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ledger = UsageLedger(path)
    line = CallRecord(agent="a", model="m", cost_usd=1.0).model_dump_json()
    path.write_text(line[:20])
    assert ledger.scope_summary() == LLMUsage()
    with path.open("a") as file:
        file.write(line[20:] + "\n")
    assert ledger.scope_summary() == LLMUsage(made=1, cost_usd=1.0)


APPEND_MANY = """
import sys
from pathlib import Path
from litpipe.llm.usage import CallRecord, UsageLedger
ledger = UsageLedger(Path(sys.argv[1]))
for n in range(200):
    ledger.record(CallRecord(agent=sys.argv[2], model="m", tokens_in=n, error="x" * n))
"""


def test_processes_appending_to_one_file_lose_no_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    processes = [
        subprocess.Popen([sys.executable, "-c", APPEND_MANY, str(path), f"agent-{n}"])
        for n in range(3)
    ]
    assert [process.wait(timeout=60) for process in processes] == [0, 0, 0]
    lines = path.read_text("utf-8").splitlines()
    assert len(lines) == 600
    assert all(CallRecord.model_validate_json(line) for line in lines)
    assert UsageLedger(path).scope_summary() == LLMUsage(made=600, tokens_in=3 * sum(range(200)))


def make_client(home: Path, stub: StubLLM, **overrides: object) -> LLMClient:
    settings = stub_settings(home, stub, **overrides)
    return LLMClient(settings.llm, settings.paths, UsageLedger(home / "usage" / "run.jsonl"))


def known_route(client: LLMClient) -> Route:
    return client.llm.route("summary").model_copy(update={"model": KNOWN_MODEL})


def test_a_priced_model_costs_what_litellm_says(tmp_path: Path, stub_llm: StubLLM) -> None:
    client = make_client(tmp_path, stub_llm)
    client.complete_sync(known_route(client), MESSAGES, Summary)
    client.complete_sync(known_route(client), MESSAGES, Summary)  # cached: free
    made, cached = client.usage.records
    assert made.tokens_in > 0 and made.tokens_out > 0
    prompt_cost, output_cost = litellm.cost_per_token(
        model=KNOWN_MODEL, prompt_tokens=made.tokens_in, completion_tokens=made.tokens_out
    )
    assert made.cost_usd > 0 and made.cost_usd == pytest.approx(prompt_cost + output_cost)
    assert cached.cached and cached.cost_usd == 0
    assert client.usage.summary() == LLMUsage(
        made=1,
        cached=1,
        requests_sent=1,  # the cached call sent none
        tokens_in=made.tokens_in,
        tokens_out=made.tokens_out,
        cost_usd=made.cost_usd,
    )


def test_an_unpriced_model_costs_nothing_and_says_so_once(
    tmp_path: Path, stub_llm: StubLLM, caplog: pytest.LogCaptureFixture
) -> None:
    client = make_client(tmp_path, stub_llm, llm={"budget_usd": 0.01, "cache": False})
    route = client.llm.route("summary").model_copy(update={"model": "openai/unpriced-1"})
    with caplog.at_level(logging.INFO, logger="litpipe.llm"):
        for _ in range(2):
            client.complete_sync(route, MESSAGES, Summary)
    assert client.usage.summary().cost_usd == 0 and client.usage.summary().made == 2
    notes = [r.getMessage() for r in caplog.records if "knows no price" in r.getMessage()]
    assert notes == [
        "litellm knows no price for openai/unpriced-1: its calls count as $0 and "
        "llm.budget_usd cannot limit them"
    ]


def test_the_budget_stops_a_call_that_could_exceed_it(tmp_path: Path, stub_llm: StubLLM) -> None:
    client = make_client(tmp_path, stub_llm, llm={"budget_usd": 0.01, "max_tokens": 1000})
    # Another step of the same run has spent almost all of it.
    UsageLedger(client.usage.path).record(CallRecord(agent="x", model="m", cost_usd=0.0098))
    with pytest.raises(BudgetExceededError) as caught:
        client.complete_sync(known_route(client), MESSAGES, Summary)
    message = str(caught.value)
    assert message.startswith(f"summary: the next call to {KNOWN_MODEL} (up to $0.0006")
    assert "would take the run to $0.0104" in message
    assert "over llm.budget_usd=$0.010000; raise the budget" in message
    assert stub_llm.request_count == 0
    assert client.usage.summary() == LLMUsage(failed=1)


def test_calls_in_flight_count_against_the_budget(tmp_path: Path, stub_llm: StubLLM) -> None:
    # Long enough that every call is admitted (or refused) before the first reply settles its
    # cost: each call first asks the server what it is and counts its prompt, on other threads.
    stub_llm.latency_s = 1.0
    # Each call may cost up to ~$0.0006 (1000 output tokens): two fit, a third could not.
    client = make_client(tmp_path, stub_llm, llm={"budget_usd": 0.0015, "max_tokens": 1000})
    conversations = [[{"role": "user", "content": f"paper {n}"}] for n in range(5)]
    with pytest.raises(BudgetExceededError):
        client.complete_many_sync(known_route(client), conversations, Summary)
    assert stub_llm.request_count == 2
    usage = client.usage.summary()
    assert (usage.made, usage.failed) == (2, 3) and 0 < usage.cost_usd < 0.0015
    assert client.usage.scope_summary() == usage


def test_the_requests_sent_are_counted_apart_from_the_calls_that_failed_for_good(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    """A call answered on its third try, and one failing on each of its three: two calls, one
    failed for good, and every request the server received counted as sent."""
    client = make_client(tmp_path, stub_llm, llm={"max_retries": 2, "cache": False})
    client.backoff_base_s = 0.01  # retries in milliseconds, not seconds
    route = client.llm.route("summary")
    stub_llm.fail_next("server_error", 2)
    client.complete_sync(route, MESSAGES, Summary)
    stub_llm.fail_next("server_error", 3)
    with pytest.raises(TransientLLMError, match="still failing after 3 tries"):
        client.complete_sync(route, [{"role": "user", "content": "Summarise p2."}], Summary)

    usage = client.usage.summary()
    assert (
        (usage.made, usage.failed, usage.requests_sent)
        == (1, 1, 6)
        == (
            1,
            1,
            stub_llm.request_count,
        )
    )
    assert calls_counts(usage) == {"made": 1, "cached": 0, "failed": 1, "requests_sent": 6}
    assert calls_line(usage) == (
        "1 made, 0 cached, 1 failed; 6 requests sent, retries included; $0.0000"
    )
    # A call served from the cache sends nothing; the counts of a run add up.
    cached = LLMUsage(cached=1)
    assert calls_counts(usage + cached)["requests_sent"] == 6
    assert calls_line(LLMUsage(made=1, requests_sent=1, fallbacks=1)) == (
        "1 made, 0 cached, 0 failed, 1 offline fallback; 1 request sent, retries included; $0.0000"
    )
