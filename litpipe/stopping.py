"""Stopping a command that starts runs one after another (`litpipe run`, `backfill`, `eval`) on
SIGINT/SIGTERM: the first signal asks it to start nothing more, a second stops it at once."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

# Ctrl-C and `kill`: the signals that ask a command to stop.
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
STOPPED_EXIT = 130  # the shell's code for a command stopped by Ctrl-C
# The longest the main thread waits on another thread or process before it wakes. The kernel may
# deliver SIGTERM to any thread of the process; Python runs the handler on the main thread only
# once that thread wakes, so an unbounded wait (for a model's reply, for a lock) would hold a stop
# until the wait ended on its own.
WAKE_S = 0.2

R = TypeVar("R")


def result_when_done(future: futures.Future[R]) -> R:
    """`future.result()`, waking every `WAKE_S` so that a signal is handled while it waits; if
    the wait is interrupted (a stop), the future is cancelled: nothing is left waiting on it."""
    try:
        while not future.done():
            futures.wait([future], timeout=WAKE_S)
    except BaseException:
        future.cancel()
        raise
    return future.result()


@contextmanager
def stop_on_signals(command: str) -> Iterator[Callable[[], bool]]:
    """While open, SIGINT/SIGTERM ask to stop: nothing more is started, and a second signal
    stops at once (KeyboardInterrupt). During a run Dagster handles the signal itself: in a
    step it interrupts the step (the runners read that from the run and stop too); between
    steps it only notes it, and forgets it when no step follows. Python writes the number of
    every signal it handles to the wakeup fd, whoever's handler runs, so each one is counted
    here all the same."""
    reader, writer = os.pipe()
    for fd in (reader, writer):
        os.set_blocking(fd, False)
    received = 0

    def signals_received() -> int:
        nonlocal received
        try:
            while numbers := os.read(reader, 64):
                received += sum(number in STOP_SIGNALS for number in numbers)
        except BlockingIOError:  # all read
            pass
        return received

    def ask_to_stop(number: int, frame: FrameType | None) -> None:
        if signals_received() > 1:  # this one is counted already
            raise KeyboardInterrupt
        print(
            f"litpipe {command}: {signal.Signals(number).name}: stopping, nothing more is started "
            "(send it again to stop now)",
            file=sys.stderr,
        )

    previous_fd = signal.set_wakeup_fd(writer, warn_on_full_buffer=False)
    previous = {number: signal.signal(number, ask_to_stop) for number in STOP_SIGNALS}
    try:
        yield lambda: signals_received() > 0
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(reader)
        os.close(writer)


def stop_line(command: str, done: str, left: str) -> str:
    """The last line of a command stopped on request (SIGINT/SIGTERM): what it finished, what it
    left, and that running it again continues (what was built is fresh, and skipped)."""
    return (
        f"litpipe {command}: stopped on request: {done}; {left}. Run the same command again to "
        "finish: what was built stays built."
    )
