"""What each model call cost, per step (in memory) and per run (a shared JSON-lines file).

Every step of a run appends its calls to the run's file, one `write` of one line each with
O_APPEND, so steps in several processes can share it without locks; summing the file gives the
run's usage (for `report.json` and the budget). Whoever watches the calls of this process as they
happen (the CLI's progress display) hears of them through `watch_calls`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, Field, ValidationError

from litpipe.schemas import LLMUsage
from litpipe.text import counted

logger = logging.getLogger(__name__)


class CallRecord(BaseModel):
    """One `LLMClient.complete`: served from the cache, made, or failed."""

    agent: str
    model: str
    cached: bool = False
    failed: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    requests: int = Field(default=0, description="HTTP requests sent: tries, retries, repair.")
    retries: int = 0
    repaired: bool = Field(default=False, description="The first reply was invalid.")
    fallback: bool = Field(
        default=False,
        description="Not a call: an item the agent's offline engine wrote because the model's "
        "reply could not be used (llm.on_unusable = offline); `error` says why.",
    )
    error: str | None = Field(default=None, description="Why it failed (one line, no keys).")
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))


def summarize(records: Iterable[CallRecord]) -> LLMUsage:
    usage = LLMUsage()
    for record in records:
        if record.fallback:
            usage.fallbacks += 1
            continue
        usage.made += int(not record.cached and not record.failed)
        usage.cached += int(record.cached)
        usage.failed += int(record.failed)
        usage.requests_sent += record.requests
        usage.tokens_in += record.tokens_in
        usage.tokens_out += record.tokens_out
        usage.cost_usd += record.cost_usd
    return usage


def calls_line(usage: LLMUsage) -> str:
    """The model calls and their cost as the commands print them: the calls (made, cached,
    failed for good) apart from the requests the servers received, retries included."""
    fallbacks = f", {counted(usage.fallbacks, 'offline fallback')}" if usage.fallbacks else ""
    return (
        f"{usage.made} made, {usage.cached} cached, {usage.failed} failed{fallbacks}; "
        f"{counted(usage.requests_sent, 'request')} sent, retries included; "
        f"${usage.cost_usd:.4f}"
    )


def calls_counts(usage: LLMUsage) -> dict[str, int]:
    """The calls as `report.json`'s `llm_calls` has them: `made`, `cached`, `failed` (for
    good, after their retries) and `requests_sent` (every try)."""
    return usage.model_dump(include={"made", "cached", "failed", "requests_sent"})


class CallObserver(Protocol):
    """Hears of model calls as they happen, from every ledger of the process: announced
    (`expect`), then each one finished (`finished`: made, served from the cache, or failed)."""

    def expect(self, agent: str, calls: int) -> None: ...

    def finished(self, call: CallRecord) -> None: ...


# The ledgers are made deep inside the steps (one per step), so the observers are the process's.
_observers: list[CallObserver] = []
_observers_lock = threading.Lock()


@contextmanager
def watch_calls(observer: CallObserver) -> Iterator[None]:
    """While open, `observer` hears of the calls every ledger of this process announces and
    records, from whichever thread records them."""
    with _observers_lock:
        _observers.append(observer)
    try:
        yield
    finally:
        with _observers_lock:
            _observers.remove(observer)


def _tell_observers(tell: Callable[[CallObserver], None]) -> None:
    with _observers_lock:
        observers = list(_observers)
    for observer in observers:
        try:
            tell(observer)
        except Exception:
            # Watching a call must never fail it, nor the step that made it.
            logger.debug("a call observer failed", exc_info=True)


class UsageLedger:
    """The calls made through this object, also appended to `path` (the run's scope) if given."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._records: list[CallRecord] = []
        # What scope_summary has read of the file so far: it only reads what was added since.
        self._scope_offset = 0
        self._scope_usage = LLMUsage()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    @property
    def records(self) -> list[CallRecord]:
        with self._lock:
            return list(self._records)

    def expect(self, agent: str, calls: int) -> None:
        """Announces that `agent` is about to ask for `calls` replies (those the cache holds
        included): what a progress display counts the stage's finished calls against."""
        _tell_observers(lambda observer: observer.expect(agent, calls))

    def record(self, call: CallRecord) -> None:
        line = (call.model_dump_json() + "\n").encode("utf-8")
        with self._lock:
            self._records.append(call)
            if self.path is not None:
                descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(descriptor, line)
                finally:
                    os.close(descriptor)
        _tell_observers(lambda observer: observer.finished(call))

    def summary(self) -> LLMUsage:
        """The calls made through this ledger object: what a step reports."""
        return summarize(self.records)

    def scope_summary(self) -> LLMUsage:
        """Every call of the scope's file, whoever wrote it (this ledger alone without a file)."""
        if self.path is None:
            return self.summary()
        with self._lock:
            try:
                with self.path.open("rb") as file:
                    file.seek(self._scope_offset)
                    added = file.read()
            except FileNotFoundError:
                return self._scope_usage.model_copy()
            # A line another process is still writing has no newline yet: read it next time.
            complete = added[: added.rfind(b"\n") + 1]
            self._scope_offset += len(complete)
            self._scope_usage += summarize(_parse_lines(complete, self.path))
            return self._scope_usage.model_copy()

    def scope_by_agent(self) -> dict[str, LLMUsage]:
        """Every call of the scope's file summed per agent: what each stage of a run cost."""
        if self.path is None:
            records = self.records
        else:
            with self._lock:
                data = self.path.read_bytes() if self.path.is_file() else b""
            records = list(_parse_lines(data[: data.rfind(b"\n") + 1], self.path))
        by_agent: dict[str, list[CallRecord]] = {}
        for record in records:
            by_agent.setdefault(record.agent, []).append(record)
        return {agent: summarize(calls) for agent, calls in sorted(by_agent.items())}


def _parse_lines(data: bytes, path: Path) -> Iterable[CallRecord]:
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            yield CallRecord.model_validate_json(line)
        except ValidationError:
            logger.warning("skipping an unreadable line of %s", path)
