"""What a person watching a command sees of its model calls, stage by stage (a stage is an
agent): the calls finished of those announced, the tokens the model writes per second and the
time left. On a terminal, one live bar per stage (rich); elsewhere (CI, a pipe), plain lines.

It hears of the calls through the usage ledgers (`litpipe.llm.usage.watch_calls`): the client
announces each batch (`UsageLedger.expect`) and records each call as it finishes, cache hits and
failures included, from whichever thread made it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TextIO

from litpipe.llm.usage import CallRecord, watch_calls
from litpipe.text import counted

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

# How often a plain line repeats a stage that is still running.
LINE_INTERVAL_S = 10.0


@dataclass
class StageProgress:
    """The calls of one stage so far."""

    agent: str
    expected: int = 0
    done: int = 0
    cached: int = 0
    failed: int = 0
    # Requests sent again for the calls (a transient error, an invalid reply repaired).
    retries: int = 0
    fallbacks: int = 0
    tokens_out: int = 0
    busy_s: float = 0.0
    # The latest end of a call counted in busy_s.
    busy_until: float = 0.0

    def add(self, call: CallRecord, now: float) -> None:
        """Counts a call that finished `now` (a monotonic time), or an item the offline engine
        wrote after its call's reply proved unusable (not a call of its own)."""
        if call.fallback:
            self.fallbacks += 1
            return
        self.done += 1
        self.cached += call.cached
        self.failed += call.failed
        self.retries += max(0, call.requests - 1)
        self.tokens_out += call.tokens_out
        # Calls run concurrently: the stage was busy for the union of their spans, not for the
        # sum of their times. Calls end in the order they are counted, so the union grows by
        # what this call ran past the latest end so far.
        self.busy_s += max(0.0, now - max(now - call.seconds, self.busy_until))
        self.busy_until = max(self.busy_until, now)

    @property
    def total(self) -> int | None:
        """The calls announced (or finished, if more), None while none were announced."""
        return max(self.expected, self.done) if self.expected else None

    def tokens_per_second(self) -> float | None:
        """Tokens the model wrote per second while the stage was busy."""
        return self.tokens_out / self.busy_s if self.tokens_out and self.busy_s > 0 else None

    def seconds_left(self) -> float | None:
        """The time the calls not finished yet will take at the pace of those that went to the
        model (the client looks up the cache before it asks: what is left is not in it)."""
        asked = self.done - self.cached
        if self.total is None or self.total == self.done or not asked:
            return None
        return (self.total - self.done) * self.busy_s / asked

    def details(self) -> str:
        """What follows the calls done: cache hits, failures, requests sent again (retries,
        repairs), offline fallbacks, speed and time left."""
        parts = []
        if self.cached:
            parts.append(f"{self.cached} cached")
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.retries:
            parts.append(f"{counted(self.retries, 'request')} sent again")
        if self.fallbacks:
            parts.append(counted(self.fallbacks, "offline fallback"))
        speed = self.tokens_per_second()
        if speed is not None:
            parts.append(f"{speed:.0f} tokens/s")
        left = self.seconds_left()
        if left is not None:
            parts.append(f"{_duration(left)} left")
        return ", ".join(parts)

    def line(self) -> str:
        """The stage as a plain line: `answers: 12/40 model calls, 3 cached, 29 tokens/s, ...`."""
        total = "" if self.total is None else f"/{self.total}"
        details = self.details()
        return f"{self.agent}: {self.done}{total} model calls" + (f", {details}" if details else "")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class StageDisplay(Protocol):
    """Shows stages; called under `CallProgress`'s lock, one call at a time."""

    def show(self, stage: StageProgress) -> None: ...

    def close(self) -> None: ...


class CallProgress:
    """Counts every stage's calls, from any thread, and shows each change (a `CallObserver`)."""

    def __init__(self, display: StageDisplay, clock: Callable[[], float] = time.monotonic) -> None:
        self._display = display
        self._clock = clock
        self._lock = threading.Lock()
        self._stages: dict[str, StageProgress] = {}

    def expect(self, agent: str, calls: int) -> None:
        with self._lock:
            stage = self._stages.setdefault(agent, StageProgress(agent))
            stage.expected += calls
            self._display.show(stage)

    def finished(self, call: CallRecord) -> None:
        with self._lock:
            stage = self._stages.setdefault(call.agent, StageProgress(call.agent))
            stage.add(call, self._clock())
            self._display.show(stage)

    def close(self) -> None:
        with self._lock:
            self._display.close()


class LineDisplay:
    """A plain line per stage (CI, a pipe): when it starts, then at most every `interval_s`
    while it runs, and its last state at the end if that was not shown yet."""

    def __init__(
        self,
        stream: TextIO,
        interval_s: float = LINE_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._interval_s = interval_s
        self._clock = clock
        self._shown: dict[str, tuple[float, str]] = {}
        self._latest: dict[str, str] = {}

    def show(self, stage: StageProgress) -> None:
        line = stage.line()
        self._latest[stage.agent] = line
        now = self._clock()
        shown = self._shown.get(stage.agent)
        if shown is None or now - shown[0] >= self._interval_s:
            self._write(line)
            self._shown[stage.agent] = (now, line)

    def close(self) -> None:
        for agent, line in self._latest.items():
            if self._shown[agent][1] != line:
                self._write(line)
        self._latest.clear()

    def _write(self, line: str) -> None:
        print(line, file=self._stream, flush=True)


class LiveDisplay:
    """One bar per stage on a terminal (rich), drawn from the first call on: a command that
    calls no model draws nothing. Whatever else the command writes to sys.stderr (and to
    sys.stdout, when that is the same terminal) is printed above the bars; at the end the bars
    stay, in their last state, and the cursor is given back, whether the command ended well or
    not."""

    def __init__(self, terminal: TextIO, redirect_stdout: bool) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self._progress: Progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[details]}"),
            console=Console(file=terminal),
            redirect_stdout=redirect_stdout,
        )
        self._tasks: dict[str, TaskID] = {}
        self._started = False

    def show(self, stage: StageProgress) -> None:
        if not self._started:
            self._progress.start()
            self._started = True
        task = self._tasks.get(stage.agent)
        if task is None:
            task = self._progress.add_task(stage.agent, total=stage.total, details="")
            self._tasks[stage.agent] = task
        self._progress.update(
            task, completed=stage.done, total=stage.total, details=stage.details()
        )

    def close(self) -> None:
        if self._started:
            self._progress.stop()
            self._started = False


def display_for_stderr() -> StageDisplay:
    """Live bars when stderr is a terminal that can redraw lines, plain lines otherwise: a
    pipe, a file, CI (even where FORCE_COLOR makes rich colour it). Called before any run: a
    Dagster run points descriptors 1 and 2 at its step's log file while it runs."""
    from rich.console import Console

    stream = _beside_run_capture(sys.stderr)
    if stream.isatty() and Console(file=stream).is_interactive:
        return LiveDisplay(stream, redirect_stdout=sys.stdout.isatty())
    return LineDisplay(stream)


def _beside_run_capture(stream: TextIO) -> TextIO:
    """`stream` on a descriptor of its own. While a run executes in-process, Dagster points
    descriptors 1 and 2 at the step's log file and copies that file back to the terminal from
    a `tail` process: the bars drawn there would land in the step's log, and reach the terminal
    late, between their own redraws. Left open: rich's proxy of sys.stderr, kept by whoever took
    sys.stderr while the bars were drawn, still writes to it (it is closed with the last)."""
    try:
        descriptor = os.dup(stream.fileno())
    except (OSError, ValueError):  # none to copy (pytest's capture)
        return stream
    return open(descriptor, "w", buffering=1, encoding=stream.encoding, errors="replace")


@contextmanager
def calls_shown_on_stderr() -> Iterator[None]:
    """While open, this process's model calls are shown on stderr, stage by stage; the display
    is closed however the block ends (an error, Ctrl-C), so the terminal is left as it was."""
    progress = CallProgress(display_for_stderr())
    try:
        with watch_calls(progress):
            yield
    finally:
        progress.close()
