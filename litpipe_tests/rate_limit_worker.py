"""One process's model calls under a shared rate limit, for test_rate_limit.py's spawned
processes: kept apart from the test module so that a child imports only the model client."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from litpipe.llm import shared_limits
from litpipe.llm.client import LLMClient
from litpipe.llm.usage import UsageLedger
from litpipe.settings import Settings

REQUESTS_PER_WINDOW = 5
CALLS_PER_PROCESS = 6


class Summary(BaseModel):
    text: str


def limited_settings(home: Path, api_base: str, **llm: Any) -> Settings:
    return Settings(
        home=home,
        llm={"model": "openai/stub", "api_base": api_base, "cache": False, "max_tokens": 64} | llm,
    )


def reservations_file(home: Path, tag: str) -> Path:
    return home / f"reservations-{tag}.json"


def noting_reservations() -> list[float]:
    """The moments, by the database's clock, at which this process's calls took a place in
    the window: what the limiter counts, free of the scheduling delay between a place taken
    and its request reaching the server."""
    taken: list[float] = []
    last_now = threading.local()
    for database in (shared_limits.SqliteLimits, shared_limits.PostgresLimits):

        def noted_now(self: Any, cursor: Any, now: Any = database.now) -> float:
            last_now.value = now(self, cursor)
            return float(last_now.value)

        database.now = noted_now  # type: ignore[method-assign]
    reserve = shared_limits.SharedLimits._reserve

    def noted_reserve(self: Any, *args: Any) -> tuple[int | None, float]:
        reservation, wait = reserve(self, *args)
        if reservation is not None:
            taken.append(last_now.value)
        return reservation, wait

    shared_limits.SharedLimits._reserve = noted_reserve  # type: ignore[method-assign]
    return taken


def send_calls(
    api_base: str, home: str, limits_at: str | None, tag: str, start: Any, window_s: float
) -> None:
    """One process's calls (spawned): litellm warmed up first, then, once every process is
    ready, CALLS_PER_PROCESS calls at once under the shared limit. The moments their places
    were taken are written to `reservations_file`."""
    shared_limits.WINDOW_S = window_s
    rate = {"openai": {"requests_per_minute": REQUESTS_PER_WINDOW}}
    unlimited = limited_settings(Path(home), api_base)
    LLMClient(unlimited.llm, unlimited.paths, UsageLedger()).complete_sync(
        unlimited.route("summary"), [{"role": "user", "content": "warm-up"}], Summary
    )
    settings = limited_settings(Path(home), api_base, rate_limits=rate)
    client = LLMClient(settings.llm, settings.paths, UsageLedger(), limits_at)
    taken = noting_reservations()
    start.wait(timeout=120)
    conversations = [
        [{"role": "user", "content": f"call {tag}-{n}"}] for n in range(CALLS_PER_PROCESS)
    ]
    client.complete_many_sync(settings.route("summary"), conversations, Summary)
    Path(home).mkdir(parents=True, exist_ok=True)  # counted in PostgreSQL, the home is unused
    reservations_file(Path(home), tag).write_text(json.dumps(taken))
