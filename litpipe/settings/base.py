"""What every settings group shares: unknown keys refused, and the warning an old name
raises."""

from __future__ import annotations

import warnings

from pydantic import BaseModel, ConfigDict


class SettingsGroup(BaseModel):
    # A misspelt key in a `[group]` table or a LITPIPE_GROUP__NAME is an error, not ignored.
    model_config = ConfigDict(extra="forbid")


class FlatSettingWarning(DeprecationWarning):
    """A setting given by an old name (a flat one, `llm_model`, or an agent's old name in
    `llm.agents`), which still works, for now."""


# Python hides a DeprecationWarning raised outside __main__: this one is the user's to act on
# (their environment, litpipe.toml or code), so it is shown. Python counts "default" per code
# line and forgets whenever a library changes the filters, so a command that reads its settings
# twice (its own, and the code location's at import) may show one name twice.
warnings.filterwarnings("default", category=FlatSettingWarning)
