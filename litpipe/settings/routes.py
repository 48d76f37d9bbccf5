"""What one agent's calls resolve to (`Route`: its model, sampling, window and structured
output), the per-agent overrides of `llm.agents`, and the agents' names."""

from __future__ import annotations

import functools
from importlib import resources
from typing import Literal

from pydantic import BaseModel, Field

OFFLINE = "offline"
# How a reply's JSON schema reaches the model (`Settings.llm.structured_output`).
StructuredOutput = Literal["auto", "json_schema", "json_object", "prompt"]
# max_tokens of an agent that names no size for its reply (`Agent.reply_tokens`).
DEFAULT_REPLY_TOKENS = 2048


class AgentRoute(BaseModel):
    """Per-agent overrides of the default model, sampling and structured output (unset fields
    fall back)."""

    model: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    context_tokens: int | None = Field(default=None, ge=256)
    # Per agent too: one server (a LiteLLM proxy, OpenRouter) can serve models that differ in
    # what they take, and an agent can already be given a model of its own.
    structured_output: StructuredOutput | None = None


class Route(BaseModel):
    """What one agent's calls resolve to: `model` is a litellm model string or `offline`."""

    agent: str
    model: str
    api_base: str | None
    temperature: float
    max_tokens: int
    # The model's context window where the settings give it (else litellm or the server tells).
    context_tokens: int | None = None
    # Not in the agents' code_version (which takes only the model and sampling from the route):
    # a reply is validated against the same schema whichever way the schema reached the model,
    # and the reply cache ignores the mode too, so a rerun for it would only replay the cache.
    structured_output: StructuredOutput

    @property
    def offline(self) -> bool:
        return self.model == OFFLINE


@functools.cache
def agent_names() -> tuple[str, ...]:
    """Every agent's name: each has one packaged prompt, `litpipe/prompts/[<stage>/]<agent>.md`
    (`litpipe.llm.prompts`)."""
    root = resources.files("litpipe").joinpath("prompts")
    folders = [root, *(entry for entry in root.iterdir() if entry.is_dir())]
    return tuple(
        sorted(
            entry.name.removesuffix(".md")
            for folder in folders
            for entry in folder.iterdir()
            if entry.is_file() and entry.name.endswith(".md")
        )
    )
