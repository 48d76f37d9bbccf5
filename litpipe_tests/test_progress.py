"""What a person watching a command sees of its model calls: per stage, calls done of those
announced, cache hits and failures, tokens per second and the time left; plain lines off a
terminal, live bars on one that leave it as they found it."""

from __future__ import annotations

import io
import os
import pty
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

import pytest

from litpipe.llm.usage import CallRecord, UsageLedger, watch_calls
from litpipe.progress import (
    CallProgress,
    LineDisplay,
    LiveDisplay,
    calls_shown_on_stderr,
    display_for_stderr,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def made(agent: str, seconds: float, tokens_out: int) -> CallRecord:
    return CallRecord(agent=agent, model="m", seconds=seconds, tokens_in=50, tokens_out=tokens_out)


def test_plain_lines_count_cache_hits_failures_retries_and_fallbacks_against_the_calls() -> None:
    clock, out = Clock(), io.StringIO()
    progress = CallProgress(LineDisplay(out, interval_s=10.0, clock=clock), clock=clock)
    ledger = UsageLedger()
    with watch_calls(progress):
        ledger.expect("answers", 4)
        ledger.record(CallRecord(agent="answers", model="m", cached=True))
        clock.now += 2.0
        # Failed for good after three tries; answered on the second.
        failed = CallRecord(agent="answers", model="m", failed=True, seconds=2.0, requests=3)
        ledger.record(failed)
        clock.now += 2.0
        ledger.record(made("answers", 2.0, 80).model_copy(update={"requests": 2}))
        # The offline engine wrote the failed call's item: no call of its own.
        ledger.record(CallRecord(agent="answers", model="m", fallback=True, error="unusable"))
    progress.close()
    # The start, then nothing until the interval has passed, then the last state at the end.
    assert out.getvalue().splitlines() == [
        "answers: 0/4 model calls",
        "answers: 3/4 model calls, 1 cached, 1 failed, 3 requests sent again, 1 offline "
        "fallback, 20 tokens/s, 2s left",
    ]


def test_a_stage_repeats_its_line_once_per_interval_and_says_the_time_left() -> None:
    clock, out = Clock(), io.StringIO()
    progress = CallProgress(LineDisplay(out, interval_s=10.0, clock=clock), clock=clock)
    progress.expect("questions", 10)
    for _ in range(2):
        clock.now += 6.0
        progress.finished(made("questions", 6.0, 120))
    progress.close()
    # Two calls of 6 s one after the other: 8 more at that pace take 48 s.
    assert out.getvalue().splitlines() == [
        "questions: 0/10 model calls",
        "questions: 2/10 model calls, 20 tokens/s, 48s left",
    ]


def test_concurrent_calls_count_the_time_they_overlap_once() -> None:
    clock, out = Clock(), io.StringIO()
    progress = CallProgress(LineDisplay(out, interval_s=0.0, clock=clock), clock=clock)
    progress.expect("debate", 4)
    clock.now += 10.0
    # Two calls sent together, both taking the 10 s: the stage was busy 10 s, not 20.
    progress.finished(made("debate", 10.0, 100))
    progress.finished(made("debate", 10.0, 100))
    assert out.getvalue().splitlines()[-1] == "debate: 2/4 model calls, 20 tokens/s, 10s left"


def test_calls_of_a_stage_nobody_announced_are_counted_without_a_total() -> None:
    out = io.StringIO()
    progress = CallProgress(LineDisplay(out))
    progress.finished(CallRecord(agent="judge", model="m", cached=True))
    assert out.getvalue() == "judge: 1 model calls, 1 cached\n"


def test_calls_recorded_from_many_threads_are_all_counted() -> None:
    out = io.StringIO()
    progress = CallProgress(LineDisplay(out, interval_s=0.0))
    threads, calls = 8, 250
    ledger = UsageLedger()

    def record_calls() -> None:
        for number in range(calls):
            ledger.record(CallRecord(agent="answers", model="m", cached=number % 2 == 0))

    with watch_calls(progress):
        ledger.expect("answers", threads * calls)
        workers = [threading.Thread(target=record_calls) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    lines = out.getvalue().splitlines()
    assert len(lines) == threads * calls + 1  # the start, then one whole line per call
    assert lines[-1].startswith(f"answers: {threads * calls}/{threads * calls} model calls, ")
    assert f"{threads * calls // 2} cached" in lines[-1]


def test_a_failing_display_never_fails_the_call_it_shows() -> None:
    class Broken:
        def show(self, stage: object) -> None:
            raise RuntimeError("the terminal went away")

        def close(self) -> None:
            pass

    ledger = UsageLedger()
    with watch_calls(CallProgress(Broken())):
        ledger.expect("answers", 1)
        ledger.record(CallRecord(agent="answers", model="m"))
    assert ledger.summary().made == 1


def test_off_a_terminal_the_command_prints_plain_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ledger = UsageLedger()
    with calls_shown_on_stderr():
        ledger.expect("synthesis_writer", 1)
        ledger.record(made("synthesis_writer", 1.0, 30))
    ledger.record(made("synthesis_writer", 1.0, 30))  # after the command: nobody shows it
    assert capsys.readouterr().err.splitlines() == [
        "synthesis_writer: 0/1 model calls",
        "synthesis_writer: 1/1 model calls, 30 tokens/s",
    ]


@contextmanager
def stderr_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, TextIO]]:
    """sys.stderr on a pseudo-terminal, and the descriptor that reads what it shows (set in
    the test itself: pytest sets its own sys.stderr again between a fixture and the test)."""
    reader, writer = pty.openpty()
    with open(writer, "w", encoding="utf-8") as terminal:
        monkeypatch.setattr(sys, "stderr", terminal)
        monkeypatch.setenv("TERM", "xterm")
        monkeypatch.delenv("TTY_INTERACTIVE", raising=False)
        try:
            yield reader, terminal
        finally:
            monkeypatch.undo()
            os.close(reader)


def shown_on(reader: int) -> str:
    os.set_blocking(reader, False)
    chunks = []
    try:
        while chunk := os.read(reader, 65536):
            chunks.append(chunk)
    except (BlockingIOError, OSError):
        pass
    return b"".join(chunks).decode("utf-8", "replace")


def test_on_a_terminal_a_stopped_command_leaves_it_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ledger = UsageLedger()
    with stderr_on_a_terminal(monkeypatch) as (reader, terminal):
        with pytest.raises(KeyboardInterrupt), calls_shown_on_stderr():
            ledger.expect("answers", 3)
            ledger.record(made("answers", 1.0, 40))
            # The command's own lines are printed above the bars.
            print("[1/3] paper built", file=sys.stderr)
            raise KeyboardInterrupt
        assert sys.stderr is terminal  # given back, not rich's proxy
        shown = shown_on(reader)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)  # without colours and moves
    assert "[1/3] paper built" in text
    assert re.search(r"answers [━╺ ]+ 1/3 40 tokens/s, 2s left", text)
    # The cursor the bars hid is shown again, after the last time it was hidden.
    assert shown.rindex("\x1b[?25h") > shown.rindex("\x1b[?25l")


def test_on_a_terminal_a_command_without_model_calls_draws_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with stderr_on_a_terminal(monkeypatch) as (reader, _):
        with calls_shown_on_stderr():
            print("nothing to ask", file=sys.stderr)
        assert shown_on(reader).replace("\r", "") == "nothing to ask\n"


def test_the_live_display_is_chosen_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    with stderr_on_a_terminal(monkeypatch):
        assert isinstance(display_for_stderr(), LiveDisplay)
        monkeypatch.setenv("TERM", "dumb")
        assert isinstance(display_for_stderr(), LineDisplay)
    assert isinstance(display_for_stderr(), LineDisplay)  # pytest's capture: not a terminal
