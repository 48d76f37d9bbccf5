"""What every settings group shares: unknown keys refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SettingsGroup(BaseModel):
    # A misspelt key in a `[group]` table or a LITPIPE_GROUP__NAME is an error, not ignored.
    model_config = ConfigDict(extra="forbid")
