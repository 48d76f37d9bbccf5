"""litpipe's model layer: structured calls through litellm, their cache, usage and errors.

`litpipe.llm.client` imports litellm (seconds): import it only where a model is configured.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from litpipe.llm.client import LLMClient
    from litpipe.llm.usage import UsageLedger
    from litpipe.settings import HomePaths, LLMSettings, Route


def model_client(
    llm: LLMSettings,
    home: HomePaths,
    routes: Iterable[Route],
    ledger: UsageLedger | None = None,
    limits_at: str | Path | None = None,
) -> LLMClient | None:
    """The one way a client is built: for the calls of `routes` (each resolved once, by the
    asker of the step that asks), their usage kept in `ledger` (default: a ledger of its own),
    the rate limits and nightly budget shared with other processes counted at `limits_at` (the
    instance's PostgreSQL URL; default the home's SQLite file); None when every one of them
    runs offline (each then runs its offline engine, and litellm, seconds to import, is never
    loaded)."""
    if all(route.offline for route in routes):
        return None
    from litpipe.llm.client import LLMClient
    from litpipe.llm.usage import UsageLedger

    return LLMClient(llm, home, ledger if ledger is not None else UsageLedger(), limits_at)
