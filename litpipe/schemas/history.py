"""A collection's synthesis history: each materialization of its `synthesis` and
`relationship_analysis` kept by data version (what changed between two: `changes`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from litpipe.schemas.relationships import RelationshipAnalysis
from litpipe.schemas.synthesis import Synthesis

HistoryAsset = Literal["synthesis", "relationship_analysis"]


class HistoryEntry(BaseModel):
    """One kept version: `HOME/history/<collection>/<asset>/<recorded>-<data_version>.json`."""

    collection: str
    asset: HistoryAsset
    recorded_at: str = Field(description="When it was materialized, UTC, ISO 8601.")
    data_version: str = Field(description="The hash of its output, as Dagster records it.")
    analysis_version: str | None = Field(
        default=None,
        description="A synthesis': the data version of the relationship analysis it was "
        "written from.",
    )
    synthesis: Synthesis | None = None
    analysis: RelationshipAnalysis | None = None
