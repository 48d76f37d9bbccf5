"""One process's model calls under a shared rate limit, for test_rate_limit.py's spawned
processes: kept apart from the test module so that a child imports only the model client."""

from __future__ import annotations

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


def send_calls(
    api_base: str, home: str, limits_at: str | None, tag: str, start: Any, window_s: float
) -> None:
    """One process's calls (spawned): litellm warmed up first, then, once every process is
    ready, CALLS_PER_PROCESS calls at once under the shared limit."""
    shared_limits.WINDOW_S = window_s
    rate = {"openai": {"requests_per_minute": REQUESTS_PER_WINDOW}}
    unlimited = limited_settings(Path(home), api_base)
    LLMClient(unlimited.llm, unlimited.paths, UsageLedger()).complete_sync(
        unlimited.route("summary"), [{"role": "user", "content": "warm-up"}], Summary
    )
    settings = limited_settings(Path(home), api_base, rate_limits=rate)
    client = LLMClient(settings.llm, settings.paths, UsageLedger(), limits_at)
    start.wait(timeout=120)
    conversations = [
        [{"role": "user", "content": f"call {tag}-{n}"}] for n in range(CALLS_PER_PROCESS)
    ]
    client.complete_many_sync(settings.route("summary"), conversations, Summary)
