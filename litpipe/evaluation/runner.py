"""What every dataset evaluation shares: the `Asker` its agents are asked through, and the facts
of its run that name what wrote the outputs (the engines) and the models.

An evaluation is given a client when it runs as its asset (the step's, so that its model calls
count in the run's usage) and none when it is called directly: it then builds one of its own,
or none when all its agents run offline."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from litpipe.agents.asker import Asker
from litpipe.llm import model_client
from litpipe.settings import HomePaths, LLMSettings

if TYPE_CHECKING:
    from litpipe.agents.base import ModelClient
    from litpipe.llm.usage import UsageLedger


def evaluation_asker(
    llm: LLMSettings,
    home: HomePaths,
    agents: Iterable[str],
    client: ModelClient | None = None,
    ledger: UsageLedger | None = None,
) -> Asker:
    """The evaluation's agents bound to their models, asked through `client`, or, when none is
    given, through a client of its own for the models `agents` are routed to (their usage kept
    in `ledger`; no client when they all run offline)."""
    asker = Asker(llm, client)
    if client is None:
        # For the routes the asker resolved, which it asks by.
        asker.client = model_client(llm, home, [asker.route(agent) for agent in agents], ledger)
    return asker


def engines(asker: Asker, agents: Sequence[str]) -> str:
    """What wrote the outputs: each agent's engine (`offline`, or its model with the items its
    last run wrote offline), once each, comma-separated."""
    return ", ".join(dict.fromkeys(asker.engine(agent) for agent in agents))


def models(asker: Asker, agents: Sequence[str]) -> str | None:
    """The models `agents` are routed to, once each, comma-separated; None when they all run
    offline."""
    routed = (asker.route(agent) for agent in agents)
    return (
        ", ".join(dict.fromkeys(str(route.model) for route in routed if not route.offline)) or None
    )
