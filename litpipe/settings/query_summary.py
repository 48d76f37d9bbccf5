"""The `[query_summary]` settings: query-focused summaries (the MAIS loop)."""

from __future__ import annotations

from pydantic import Field

from litpipe.settings.base import SettingsGroup


class QuerySummarySettings(SettingsGroup):
    """Query-focused summaries of one paper (the MAIS loop)."""

    max_iterations: int = Field(
        default=15,
        ge=1,
        description="Summarize, answer, judge: passes of the loop at most before it stops "
        "unapproved (status `max_iterations_reached`).",
    )
    questions: int = Field(
        default=7, ge=1, le=7, description="Diagnostic questions written per request, at most."
    )
    context_tokens: int = Field(
        default=12_000,
        ge=500,
        description="A paper whose whole text fits this (estimated tokens) is read whole by the "
        "summarizer and the judge (Self-Route); a longer one, through its evidence for the "
        "query and the questions, and the judge checks it whole in parts this long.",
    )
    judge_parts: int = Field(
        default=8,
        ge=1,
        description="A paper longer than context_tokens is judged in parts of that size, one "
        "judge call each per pass: at most this many parts (those holding the most passages "
        "retrieved for the query and the questions, then the earliest).",
    )
    acus: int = Field(
        default=10,
        ge=0,
        le=30,
        description="Atomic content units (ACUs) written per request, at most: each pass's "
        "summary is checked against them (one call) for its ACU accuracy; 0 writes none and "
        "checks nothing.",
    )
