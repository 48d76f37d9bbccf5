"""The `[operations]` settings: where the chunk tables live and how much runs at once."""

from __future__ import annotations

import warnings
from typing import Any

from pydantic import Field, model_validator

from litpipe.settings.base import FlatSettingWarning, SettingsGroup


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

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, values: Any) -> Any:
        """`backfill_batch_size`, its old name, still works (with a warning) for now."""
        if isinstance(values, dict) and "backfill_batch_size" in values:
            warnings.warn(
                "set operations.batch_size (operations.backfill_batch_size is its old name)",
                FlatSettingWarning,
                stacklevel=2,
            )
            values = dict(values)
            old = values.pop("backfill_batch_size")
            values.setdefault("batch_size", old)
        return values

    max_concurrent_steps: int = Field(
        default=4,
        ge=1,
        description="Steps of one run executing at once when Dagster launches it (the "
        "multiprocess executor's bound); `litpipe run` runs its steps in-process.",
    )
