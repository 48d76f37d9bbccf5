"""litpipe's model layer: structured calls through litellm, their cache, usage and errors.

`litpipe.llm.client` imports litellm (seconds): import it only where a model is configured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from litpipe.llm.client import LLMClient
    from litpipe.settings import Route, Settings


def client_unless_offline(settings: Settings, route: Route) -> LLMClient | None:
    """A client with a ledger of its own when `route` names a model; None when it is offline
    (the agent then runs its offline engine, and litellm is never imported)."""
    if route.offline:
        return None
    from litpipe.llm.client import LLMClient
    from litpipe.llm.usage import UsageLedger

    return LLMClient(settings, UsageLedger())
