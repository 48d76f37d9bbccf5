"""The `[llm]` settings: the default model and server, sampling, the window, concurrency,
retries, the cache, the budget, the per-agent routes and the `llm` pool."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from litpipe.settings.base import SettingsGroup
from litpipe.settings.routes import (
    DEFAULT_REPLY_TOKENS,
    OFFLINE,
    AgentRoute,
    Route,
    StructuredOutput,
    agent_names,
)
from litpipe.settings.sources import did_you_mean, nearest


class RateLimit(BaseModel):
    """One provider's allowance per minute, shared by every process using the same database
    (`litpipe.llm.shared_limits`); an unset field does not limit."""

    model_config = ConfigDict(extra="forbid")

    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(
        default=None,
        ge=1,
        description="Prompt plus reply tokens; a request counts its prompt and max_tokens "
        "until its reply says what it used.",
    )


class LLMSettings(SettingsGroup):
    """The LLM layer. No model: every agent runs on the offline extractive engine."""

    model: str | None = Field(
        default=None,
        description="Default litellm model string (`gpt-4o-mini`, `ollama/llama3.1`, "
        "`openai/<name>` with llm.api_base); unset (or `offline`) means the offline engine.",
    )
    api_base: str | None = Field(
        default=None,
        description="Base URL of an OpenAI-compatible server (vLLM, a stub). Credentials in it "
        "(`http://user:password@host/v1`) go as HTTP basic auth; Dagster's run config holds the "
        "URL as `user:***@`.",
    )
    structured_output: StructuredOutput = Field(
        default="auto",
        description="How a reply's JSON schema reaches the model: `auto` (a json_schema "
        "response_format where litellm says the model takes one, else the schema in the system "
        "message), `json_schema` (that response_format whatever litellm knows of the model: "
        "vLLM, llama.cpp's server, Ollama, LM Studio), `json_object` (JSON mode, and the schema "
        "in the system message) or `prompt` (the schema in the system message only).",
    )
    temperature: float = Field(
        default=0.0,
        ge=0,
        le=2,
        description="Sampling temperature of every agent (0: the same prompt gives the same "
        "reply, which the reply cache relies on); `llm.agents` may set one per agent.",
    )
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Most tokens of one reply; unset, each agent's own size for its reply "
        "(a few questions get a few hundred tokens, a synthesis a few thousand).",
    )
    context_tokens: int | None = Field(
        default=None,
        ge=256,
        description="The model's context window in tokens (prompt plus reply); unset, what "
        "litellm knows of the model, else what its server reports (llama.cpp's /props, vLLM's "
        "/v1/models). Every request is fitted to it.",
    )
    on_unusable: Literal["offline", "fail"] = Field(
        default="offline",
        description="What becomes of an item whose reply is still unusable after one repair, or "
        "that cannot fit the window: `offline` writes it with the offline engine, marked "
        "`offline fallback` and counted in report.json; `fail` fails it alone.",
    )
    concurrency: int = Field(
        default=8,
        ge=1,
        description="Model calls in flight at most, per model. To a server that says how many "
        "it decodes at once (llama.cpp's /props total_slots; one for llama-cpp-python's "
        "server), no more than that; to another at llm.api_base serving a model litellm does "
        "not know, a number learnt from its latency: one at first, one more while replies "
        "come as fast, fewer once they slow down or time out.",
    )
    timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="Seconds one request may take, in the server's queue and for its reply; a "
        "small model on a CPU may need 900.",
    )
    max_retries: int = Field(
        default=5, ge=0, description="Retries of a transient failure (429, 5xx, timeout)."
    )
    breaker_failures: int = Field(
        default=3,
        ge=1,
        description="Timeouts or refused connections in a row after which a model's server "
        "counts as unreachable for the run: every item still to ask it is written offline at "
        "once, marked `model unreachable` (or fails, as llm.on_unusable says), a step retry "
        "does not wait on it again, and the next run asks it afresh (a long run, after five "
        "minutes).",
    )
    run_deadline_s: float | None = Field(
        default=None,
        gt=0,
        description="Seconds a run (a `litpipe run`, or each process of a launched run) may "
        "spend waiting on models in all; once spent, its remaining items are written offline "
        "as for an unreachable model. Unset: no limit (a collection of thousands of papers "
        "waits on its model for hours; a dead server is found by llm.breaker_failures).",
    )
    cache: bool = Field(default=True, description="Reuse validated replies from HOME/cache.")
    budget_usd: float | None = Field(
        default=None, gt=0, description="Stop a run before its model calls cost more than this."
    )
    rate_limits: dict[str, RateLimit] = Field(
        default_factory=dict,
        description="Requests and tokens per minute per litellm provider (`openai`, "
        "`anthropic`, `hosted_vllm`, ...), across every process sharing the instance: e.g. "
        '{"openai": {"requests_per_minute": 500, "tokens_per_minute": 200000}}. A call waits '
        "while its provider's minute is spent. Counted in the instance's PostgreSQL, else in "
        "HOME/model_limits.sqlite (one machine). Unset: no limit, nothing counted.",
    )
    nightly_budget_usd: float | None = Field(
        default=None,
        gt=0,
        description="Stop every run's model calls once the calls of all runs of the day "
        "(llm.nightly_budget_day_start) cost this much; the nightly digest says when. Counted "
        "where llm.rate_limits are.",
    )
    nightly_budget_day_start: int = Field(
        default=0,
        ge=0,
        le=23,
        description="The UTC hour at which llm.nightly_budget_usd's day starts (0: midnight UTC; "
        "e.g. 12 counts a night's runs in one day).",
    )
    agents: dict[str, AgentRoute] = Field(
        default_factory=dict,
        description="Per-agent model, sampling and structured-output overrides, e.g. "
        '{"paper_questions": {"model": "gpt-4o", "temperature": 0.3}}.',
    )
    prompts_dir: Path | None = Field(
        default=None,
        description="A folder of `<agent>.md` files that replace the packaged prompts, per file.",
    )
    pool_limit: int = Field(
        default=4,
        ge=1,
        description="Steps calling a model that run at once across all runs: the limit of "
        "Dagster's `llm` pool in the dagster.yaml litpipe writes.",
    )
    slot_wait_seconds: float = Field(
        default=1800.0,
        gt=0,
        description="How long a model-calling step waits for a slot of the `llm` pool before "
        "its run fails, naming the runs that hold the slots.",
    )
    step_retries: int = Field(
        default=2,
        ge=0,
        description="Dagster retries of a model-calling step that failed on a transient error "
        "(its client's own retries exhausted).",
    )
    step_retry_delay_s: float = Field(
        default=30.0,
        ge=0,
        description="Wait before the first step retry; doubled each time, with jitter.",
    )

    @field_validator("agents", mode="after")
    @classmethod
    def _known_agents(cls, agents: dict[str, AgentRoute]) -> dict[str, AgentRoute]:
        """A route for no agent (a misspelt name, or one an agent had before) is refused: it
        would route nothing, and the agent meant would run on the default model."""
        names = agent_names()
        unknown = [
            f"no agent is named {name!r}"
            + (did_you_mean(nearest(name, names)) or f" (the agents: {', '.join(names)})")
            for name in agents
            if name not in names
        ]
        if unknown:
            raise ValueError("; ".join(unknown))
        return agents

    def route(self, agent: str, reply_tokens: int = DEFAULT_REPLY_TOKENS) -> Route:
        """The agent's model, sampling and window; `reply_tokens` is the agent's own size for
        its reply, its max_tokens where the settings set none."""
        override = self.agents.get(agent, AgentRoute())
        return Route(
            agent=agent,
            model=override.model or self.model or OFFLINE,
            api_base=self.api_base,
            temperature=(
                override.temperature if override.temperature is not None else self.temperature
            ),
            max_tokens=override.max_tokens or self.max_tokens or reply_tokens,
            context_tokens=override.context_tokens or self.context_tokens,
            structured_output=override.structured_output or self.structured_output,
        )
