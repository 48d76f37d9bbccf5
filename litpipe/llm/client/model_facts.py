"""What litellm knows of a model: its provider, whether it takes a JSON-schema response format
(or a response format at all) and its price per token; learnt once per model and process."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache

import litellm

from litpipe.llm.errors import PermanentLLMError, one_line
from litpipe.llm.window import known_to_litellm

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _ModelFacts:
    provider: str
    known: bool  # litellm's model map has the model
    structured: bool  # litellm says the model takes a JSON-schema response format
    takes_response_format: bool  # litellm passes a response_format on to the model at all
    priced: bool  # litellm knows its price per token


@lru_cache(maxsize=256)
def _model_facts(model: str) -> _ModelFacts:
    try:
        name, provider, _, _ = litellm.get_llm_provider(model=model)
    except litellm.BadRequestError as error:
        raise PermanentLLMError(
            f"litellm does not know which provider serves {model!r}: name it provider/model "
            f"(e.g. openai/{model} with llm.api_base) — {one_line(str(error), 160)}"
        ) from error
    try:
        info = litellm.get_model_info(model=model)
        priced = bool(info.get("input_cost_per_token") or info.get("output_cost_per_token"))
    except Exception:  # litellm raises several kinds for a model it has no entry for
        priced = False
    if not priced:
        logger.info(
            "litellm knows no price for %s: its calls count as $0 and llm.budget_usd cannot "
            "limit them",
            model,
        )
    structured = litellm.supports_response_schema(model=model, custom_llm_provider=provider)
    known = known_to_litellm(model)
    # Asked of the provider's own name for the model (`gpt-4`, not `openai/gpt-4`), as litellm
    # asks when it sends the request.
    supported = litellm.get_supported_openai_params(model=name, custom_llm_provider=provider)
    return _ModelFacts(
        provider=provider,
        known=known,
        structured=structured,
        takes_response_format="response_format" in (supported or []),
        priced=priced,
    )
