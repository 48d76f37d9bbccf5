"""The `[operations]` settings: where the chunk tables live and how much runs at once."""

from __future__ import annotations

from pydantic import Field

from litpipe.settings.base import SettingsGroup


class OperationsSettings(SettingsGroup):
    """Scale-out: where the chunk tables live and how much runs at once."""

    lancedb_uri: str | None = Field(
        default=None,
        description="Where the chunk tables live: a folder, or an object-store URI "
        "(s3://bucket/path, gs://..., az://...); default HOME/lancedb.",
    )
    sensor_batch_size: int = Field(
        default=25, ge=1, description="New files the sensor registers per tick."
    )
    batch_size: int = Field(
        default=100,
        ge=1,
        description="Papers one run builds, each per-paper stage once for all of them: "
        "`litpipe run`'s batches, `litpipe backfill`'s, and a backfill launched from the Dagster "
        "UI (the per-paper assets' BackfillPolicy.multi_run).",
    )

    max_concurrent_steps: int = Field(
        default=4,
        ge=1,
        description="Steps of one run executing at once when Dagster launches it (the "
        "multiprocess executor's bound); `litpipe run` runs its steps in-process.",
    )
