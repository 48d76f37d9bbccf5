"""What a model call costs, and the budget (`llm.budget_usd`) that stops a run before a call
could take it over."""

from __future__ import annotations

import json
import logging
from typing import Any

import litellm

from litpipe.llm.client.model_facts import _ModelFacts
from litpipe.llm.client.structured import Messages
from litpipe.llm.errors import BudgetExceededError
from litpipe.llm.usage import UsageLedger
from litpipe.settings import Route

logger = logging.getLogger(__name__)


class _Budget:
    """Keeps a client's calls within `llm.budget_usd`: what the run's scope has recorded, plus
    what this client's unfinished calls have spent or may still spend, plus the next request's
    most (its prompt, and max_tokens of output), must not exceed it.

    Only touched from the model-call loop, so its arithmetic needs no lock.
    """

    def __init__(self, limit: float | None, usage: UsageLedger, estimate: bool = False) -> None:
        self.limit = limit
        self.usage = usage
        self.pending = 0.0
        # Whether requests are priced without a budget of the run's (the nightly budget's).
        self.estimate = estimate

    def admit(
        self,
        route: Route,
        messages: Messages,
        response_format: dict[str, Any] | None,
        facts: _ModelFacts,
    ) -> float:
        """The most the request may cost (0 where nothing limits it), once the run's budget
        admits it."""
        if self.limit is None:
            return _estimate_cost(route, messages, response_format, facts) if self.estimate else 0.0
        estimate = _estimate_cost(route, messages, response_format, facts)
        total = self.usage.scope_summary().cost_usd + self.pending + estimate
        if total > self.limit:
            raise BudgetExceededError(
                f"{route.agent}: the next call to {route.model} (up to ${estimate:.6f}) would take "
                f"the run to ${total:.6f}, over llm.budget_usd=${self.limit:.6f}; raise the budget "
                "(LITPIPE_LLM__BUDGET_USD), lower the agent's max_tokens or use a cheaper model"
            )
        self.pending += estimate
        return estimate

    def settle(self, estimate: float, cost: float) -> None:
        """A request is over: it cost `cost`, not yet in the ledger's file."""
        if self.limit is not None:
            self.pending += cost - estimate

    def recorded(self, cost: float) -> None:
        """A call's record, with its cost, is now in the ledger's file."""
        if self.limit is not None:
            self.pending -= cost


def _call_cost(response: litellm.ModelResponse, facts: _ModelFacts) -> float:
    if not facts.priced:
        return 0.0
    # litellm prices every reply it returns (its completion_cost, kept in the hidden params):
    # computing it again would double that work.
    known = getattr(response, "_hidden_params", {}).get("response_cost")
    if isinstance(known, int | float):
        return float(known)
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # a reply litellm cannot price (odd usage fields) costs what we know: 0
        logger.debug("litellm could not price a reply of %s", response.model, exc_info=True)
        return 0.0


def _estimate_cost(
    route: Route,
    messages: Messages,
    response_format: dict[str, Any] | None,
    facts: _ModelFacts,
) -> float:
    """The most one request may cost: its prompt, and max_tokens of output."""
    if not facts.priced:
        return 0.0
    prompt_tokens = litellm.token_counter(model=route.model, messages=messages)
    if response_format is not None:
        prompt_tokens += litellm.token_counter(model=route.model, text=json.dumps(response_format))
    prompt_cost, output_cost = litellm.cost_per_token(
        model=route.model, prompt_tokens=prompt_tokens, completion_tokens=route.max_tokens
    )
    return prompt_cost + output_cost
