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
    from litpipe.settings import Settings


def model_client(
    settings: Settings,
    agents: Iterable[str],
    ledger: UsageLedger | None = None,
    limits_at: str | Path | None = None,
) -> LLMClient | None:
    """The one way a client is built: for the models `agents` are routed to, their usage kept
    in `ledger` (default: a ledger of its own), the rate limits and nightly budget shared with
    other processes counted at `limits_at` (the instance's PostgreSQL URL; default the home's
    SQLite file); None when every one of them runs offline (each then runs its offline engine,
    and litellm, seconds to import, is never loaded)."""
    if all(settings.route(agent).offline for agent in agents):
        return None
    from litpipe.llm.client import LLMClient
    from litpipe.llm.usage import UsageLedger

    return LLMClient(settings, ledger if ledger is not None else UsageLedger(), limits_at)
