"""The `[related_work]` settings: related-work generation (LitLLM)."""

from __future__ import annotations

from pydantic import Field, field_validator

from litpipe.settings.base import SettingsGroup


class RelatedWorkSettings(SettingsGroup):
    """Related-work generation (LitLLM)."""

    sentences: int = Field(
        default=8, ge=1, description="Sentences of a related-work section, at most (N)."
    )
    words: int = Field(
        default=250,
        ge=1,
        description="Words of a related-work section, at most, citations not counted (W).",
    )
    top_k: int = Field(
        default=5, ge=1, description="Best-scored references the writer gets, each cited."
    )
    candidates: int = Field(
        default=20,
        ge=1,
        description="Abstracts retrieved for the idea (fused, diversified by MMR) that the "
        "debate agent scores; at least top_k are.",
    )
    context_tokens: int = Field(
        default=8_000,
        ge=500,
        description="The writer's context (estimated tokens): a research idea longer than "
        "this is refused.",
    )
    search_queries: int = Field(
        default=3,
        ge=0,
        le=10,
        description="Search queries written from the idea (the `search_queries` agent; "
        "offline: the idea's key phrases), each searched besides the idea itself and the "
        "rankings fused by RRF; 0 searches with the idea alone.",
    )
    plan: str = Field(
        default="none",
        description="The sentence plan the writer writes to: `none` (it plans for itself), "
        "`auto` (the `related_work_plan` agent writes one first; offline: the references "
        "spread over the sentences, the last motivating the idea) or a plan of your own, "
        "given as written. The offline writer follows no plan.",
    )

    @field_validator("plan")
    @classmethod
    def _blank_plan_is_none(cls, plan: str) -> str:
        return plan.strip() or "none"
