"""Model-call limits shared by every process: requests per minute per provider (`llm.rate_limits`)
counted in one database, SQLite on one machine or the instance's PostgreSQL; the nightly budget
across runs (`llm.nightly_budget_usd`) and the digest line that says when it was spent.

The window is shortened from a minute to WINDOW_S seconds so that the processes' calls take
seconds; the calls reach the stub model server of this process, which notes when each arrives.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import dagster as dg
import psycopg2
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from litpipe.defs.definitions import build_definitions
from litpipe.defs.llm_steps import model_limits_at
from litpipe.llm import shared_limits
from litpipe.llm.client import LLMClient
from litpipe.llm.errors import BudgetExceededError, NightlyBudgetExceededError
from litpipe.llm.shared_limits import SharedLimits, SqliteLimits, _wait_for_place
from litpipe.llm.usage import UsageLedger
from litpipe.report.digest import digest_markdown
from litpipe.runtime.runner import open_instance
from litpipe.settings import RateLimit, Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.postgres_server import (
    PostgresServer,
    postgres_for_a_test,
    template_instance_folder,
)
from litpipe_tests.rate_limit_worker import (
    CALLS_PER_PROCESS,
    REQUESTS_PER_WINDOW,
    Summary,
    limited_settings,
    reservations_file,
    send_calls,
)
from litpipe_tests.stub_llm import StubLLM, stub_settings

pytestmark = pytest.mark.xdist_group("test_rate_limit")

WINDOW_S = 2.0
PROCESSES = 3
# The clocks of the limiter (SQLite's is time.time, PostgreSQL's clock_timestamp) and of the
# stub are the machine's one clock, read to the microsecond.
CLOCK_RESOLUTION_S = 0.001
KNOWN_MODEL = "openai/gpt-4o-mini"  # litellm knows its price


class Calls(NamedTuple):
    """When the processes' calls took their places in the window, and when they arrived."""

    reserved: list[float]
    arrived: list[tuple[float, str]]


def arrivals_of_calls(stub: StubLLM) -> list[tuple[float, str]]:
    """The stub notes when each limited call arrives (not the warm-ups)."""
    arrived: list[tuple[float, str]] = []

    def note(body: dict[str, Any]) -> dict[str, str]:
        arrived.append((time.time(), body["messages"][-1]["content"]))
        return {"text": "ok"}

    stub.respond("call ", note)
    return arrived


def run_processes(stub: StubLLM, home: Path, limits_at: str | None) -> Calls:
    arrived = arrivals_of_calls(stub)
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(PROCESSES)
    tags = [str(n) for n in range(PROCESSES)]
    processes = [
        context.Process(
            target=send_calls, args=(stub.url, str(home), limits_at, tag, start, WINDOW_S)
        )
        for tag in tags
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=180)
    assert [process.exitcode for process in processes] == [0] * PROCESSES
    reserved = [at for tag in tags for at in json.loads(reservations_file(home, tag).read_text())]
    return Calls(sorted(reserved), sorted(arrived))


def most_in_any_window(times: list[float], window_s: float) -> int:
    return max(sum(1 for other in times if start <= other < start + window_s) for start in times)


def assert_limited_and_all_sent(calls: Calls) -> None:
    """The places the limiter gave never exceed the limit in any window, and no call reached
    the server before its place was taken. Arrivals are not counted per window themselves:
    on a loaded machine a call may wait between its place and the server, longer than any
    slack a window of seconds leaves (a minute's window, in use, makes that wait nothing)."""
    expected = {f"call {p}-{n}" for p in range(PROCESSES) for n in range(CALLS_PER_PROCESS)}
    assert sorted(content for _, content in calls.arrived) == sorted(expected)
    assert len(calls.reserved) == len(expected)  # one place each: the stub failed none
    assert most_in_any_window(calls.reserved, WINDOW_S) <= REQUESTS_PER_WINDOW
    # The calls waited for the limit: 18 calls at 5 a window span at least 3 windows.
    windows = math.ceil(len(calls.reserved) / REQUESTS_PER_WINDOW) - 1
    assert calls.reserved[-1] - calls.reserved[0] >= windows * WINDOW_S
    # The n-th call to arrive came no sooner than the n-th place was taken.
    for (arrived_at, _), reserved_at in zip(calls.arrived, calls.reserved, strict=True):
        assert arrived_at >= reserved_at - CLOCK_RESOLUTION_S


def test_processes_sharing_a_sqlite_limiter_never_exceed_it_and_all_calls_are_sent(
    tmp_path: Path,
) -> None:
    with StubLLM() as stub:
        calls = run_processes(stub, tmp_path / "home", None)
    assert_limited_and_all_sent(calls)
    assert (tmp_path / "home" / "model_limits.sqlite").is_file()


def test_without_limits_no_database_is_opened_and_calls_go_at_once(
    tmp_path: Path, stub_llm: StubLLM
) -> None:
    settings = limited_settings(tmp_path / "home", stub_llm.url)
    client = LLMClient(settings.llm, settings.paths, UsageLedger())
    conversations = [[{"role": "user", "content": f"paper {n}"}] for n in range(12)]
    client.complete_many_sync(settings.route("summary"), conversations, Summary)
    assert stub_llm.request_count == 12
    assert not settings.paths.model_limits_path.exists()


def test_a_call_that_must_wait_says_so_once_and_why(
    tmp_path: Path, stub_llm: StubLLM, caplog: pytest.LogCaptureFixture, monkeypatch: Any
) -> None:
    monkeypatch.setattr(shared_limits, "WINDOW_S", 1.0)
    rate = {"openai": {"requests_per_minute": 2}}
    # The four calls in flight at once, so that the two over the limit wait together (one
    # at a time, as the in-flight limit a silent server teaches sends them, each would wait
    # alone, and each say so).
    stub_llm.report_slots(4)
    settings = limited_settings(tmp_path / "home", stub_llm.url, rate_limits=rate)
    client = LLMClient(settings.llm, settings.paths, UsageLedger())
    conversations = [[{"role": "user", "content": f"paper {n}"}] for n in range(4)]
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="litpipe.llm.shared_limits"):
        client.complete_many_sync(settings.route("summary"), conversations, Summary)
    assert time.monotonic() - started >= 0.9  # the last two waited for the next window
    (waiting,) = [r.getMessage() for r in caplog.records if "wait" in r.getMessage()]
    assert waiting.startswith("model calls to openai wait: its allowance per minute")
    assert '"requests_per_minute":2' in waiting


def test_tokens_per_minute_hold_calls_back_until_replies_say_what_they_used(
    tmp_path: Path, stub_llm: StubLLM, monkeypatch: Any
) -> None:
    monkeypatch.setattr(shared_limits, "WINDOW_S", 4.0)
    stub_llm.latency_s = 0.3
    warm = limited_settings(tmp_path / "home", stub_llm.url)
    LLMClient(warm.llm, warm.paths, UsageLedger()).complete_sync(
        warm.route("summary"), [{"role": "user", "content": "warm-up"}], Summary
    )
    # Each request reserves its prompt and 100 tokens of reply: two fit in 300 tokens. Their
    # replies use some 20 tokens each, which frees the room for the next two at once.
    rate = {"openai": {"tokens_per_minute": 300}}
    settings = limited_settings(tmp_path / "home", stub_llm.url, rate_limits=rate, max_tokens=100)
    client = LLMClient(settings.llm, settings.paths, UsageLedger())
    conversations = [[{"role": "user", "content": f"paper {n}"}] for n in range(4)]
    started = time.monotonic()
    replies = client.complete_many_sync(settings.route("summary"), conversations, Summary)
    elapsed = time.monotonic() - started
    assert len(replies) == 4 and stub_llm.request_count == 5
    assert stub_llm.max_in_flight <= 2
    assert 0.6 <= elapsed < 3.5  # two rounds of 0.3 s, not a wait for the 4-second window


# The same on the throwaway PostgreSQL, found as the instance's database.


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with postgres_for_a_test() as server:
        yield server


def postgres_instance(
    tmp_path: Path, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> dg.DagsterInstance:
    """An instance from deploy/dagster.postgres.yaml on a database of its own."""
    folder = tmp_path / "dagster"
    for name, value in template_instance_folder(postgres, folder).items():
        monkeypatch.setenv(name, value)
    return dg.DagsterInstance.from_config(str(folder))


def test_processes_sharing_the_instances_postgresql_never_exceed_the_limit(
    tmp_path: Path, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = postgres_instance(tmp_path, postgres, monkeypatch)
    home = tmp_path / "home"
    rate = {"openai": {"requests_per_minute": REQUESTS_PER_WINDOW}}
    limits_at = model_limits_at(instance, limited_settings(home, "x", rate_limits=rate).llm)
    assert limits_at is not None and f":{postgres.port}/" in limits_at
    # Without a limit, the instance's database is not even looked up.
    assert model_limits_at(instance, limited_settings(home, "x").llm) is None
    with StubLLM() as stub:
        calls = run_processes(stub, home, limits_at)
    assert_limited_and_all_sent(calls)
    assert not (home / "model_limits.sqlite").exists()  # counted in PostgreSQL, not here
    connection = psycopg2.connect(limits_at.replace("+psycopg2", ""))
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM litpipe_rate_reservations")
        assert cursor.fetchone()[0] >= 1
    connection.close()
    instance.dispose()


# The sliding window, whatever the requests' order, sizes and timing.


@hypothesis_settings(max_examples=60, deadline=None)
@given(
    requests_per_minute=st.one_of(st.none(), st.integers(1, 6)),
    tokens_per_minute=st.one_of(st.none(), st.integers(50, 500)),
    requests=st.lists(
        st.tuples(st.floats(0, 2 * 60.0), st.integers(1, 700)), min_size=1, max_size=30
    ),
)
def test_no_sequence_of_reservations_exceeds_the_limit_in_any_window(
    requests_per_minute: int | None,
    tokens_per_minute: int | None,
    requests: list[tuple[float, int]],
) -> None:
    limit = RateLimit(requests_per_minute=requests_per_minute, tokens_per_minute=tokens_per_minute)
    clock = [1_000_000.0]
    with tempfile.TemporaryDirectory() as folder:
        limits = SharedLimits(SqliteLimits(Path(folder) / "limits.sqlite"), {"p": limit})
        original, shared_limits._clock = shared_limits._clock, lambda: clock[0]
        taken: list[tuple[float, int]] = []
        try:
            for gap, asked in requests:
                clock[0] += gap
                tokens = min(asked, tokens_per_minute) if tokens_per_minute else asked
                while True:
                    reservation, wait = limits._reserve("p", limit, tokens)
                    if reservation is not None:
                        taken.append((clock[0], tokens))
                        break
                    assert 0 < wait <= shared_limits.WINDOW_S
                    clock[0] += wait
        finally:
            shared_limits._clock = original
    assert len(taken) == len(requests)  # every request was eventually let through
    for start, _ in taken:
        inside = [t for at, t in taken if start <= at < start + shared_limits.WINDOW_S]
        assert requests_per_minute is None or len(inside) <= requests_per_minute
        assert tokens_per_minute is None or sum(inside) <= tokens_per_minute


def test_a_request_fits_an_empty_window_whatever_its_size() -> None:
    limit = RateLimit(requests_per_minute=1, tokens_per_minute=100)
    assert _wait_for_place([], 0.0, limit, 100) == 0
    assert _wait_for_place([(0.0, 10)], 1.0, limit, 10) == pytest.approx(59.0)


# The nightly budget across runs, and the digest's line.


def test_two_runs_share_the_nightly_budget_and_the_digest_says_when_it_was_spent(
    tmp_path: Path, stub_llm: StubLLM, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Late in the evening of yesterday (UTC): the day whose digest can be built.
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date()
    evening = datetime(yesterday.year, yesterday.month, yesterday.day, 22, 40, tzinfo=UTC)
    monkeypatch.setattr(shared_limits, "_clock", lambda: evening.timestamp())
    # Each reply fills max_tokens: a call costs about what was reserved for it (~$0.00006).
    stub_llm.respond("paper", lambda body: {"text": "x" * 400})
    home = tmp_path / "home"
    budget = 0.0004
    settings = stub_settings(
        home,
        stub_llm,
        llm={"cache": False, "max_tokens": 100, "nightly_budget_usd": budget},
        ingest={"embedder": str(tiny_model)},
    )
    route = settings.route("summary").model_copy(update={"model": KNOWN_MODEL})

    def ask(client: LLMClient, n: int) -> None:
        client.complete_sync(route, [{"role": "user", "content": f"paper {n}"}], Summary)

    first = LLMClient(settings.llm, settings.paths, UsageLedger(home / "usage" / "run-1.jsonl"))
    for n in range(4):
        ask(first, n)
    second = LLMClient(settings.llm, settings.paths, UsageLedger(home / "usage" / "run-2.jsonl"))
    made, refused = 0, 0
    for n in range(4, 10):
        try:
            ask(second, n)
            made += 1
            assert refused == 0, "a call was made after the budget was spent"
        except NightlyBudgetExceededError as error:
            assert isinstance(error, BudgetExceededError)  # what a run's own budget raises
            assert "over llm.nightly_budget_usd=$0.000400" in str(error)
            refused += 1

    spent = first.usage.summary().cost_usd + second.usage.summary().cost_usd
    assert first.usage.summary().made == 4 and 1 <= made < 6
    assert stub_llm.request_count == 4 + made  # nothing was sent once it was spent
    assert spent <= budget
    assert refused == 6 - made

    # The digest of that day, built by its Dagster asset (offline, no paper arrived).
    offline = Settings(
        home=home, llm={"nightly_budget_usd": budget}, ingest={"embedder": str(tiny_model)}
    )
    instance = open_instance(offline.llm, offline.paths)
    definitions = build_definitions(**settings_groups(offline))
    result = definitions.resolve_job_def("nightly_digest_job").execute_in_process(
        partition_key=yesterday.isoformat(), instance=instance
    )
    assert result.success
    markdown = digest_markdown(result.output_for_node("nightly_digest"))
    calls = "1 call after it was" if refused == 1 else f"{refused} calls after it were"
    assert (
        f"The nightly model budget ($0.0004) was spent at 22:40 UTC; {calls} not made." in markdown
    )
    written = home / "outputs" / "digests" / f"{yesterday.isoformat()}.md"
    assert written.read_text("utf-8") == markdown
    page = written.with_suffix(".html").read_text("utf-8")
    assert f"was spent at 22:40 UTC; {calls} not made." in page


def test_the_day_of_the_nightly_budget_starts_at_its_hour(tmp_path: Path) -> None:
    limits = SharedLimits(SqliteLimits(tmp_path / "limits.sqlite"), {}, 1.0, day_start_hour=12)
    night = datetime(2026, 3, 1, 23, 0, tzinfo=UTC).timestamp()
    morning = datetime(2026, 3, 2, 6, 0, tzinfo=UTC).timestamp()
    noon = datetime(2026, 3, 2, 12, 0, tzinfo=UTC).timestamp()
    assert limits.day(night) == limits.day(morning) == date(2026, 3, 1).isoformat()
    assert limits.day(noon) == "2026-03-02"
