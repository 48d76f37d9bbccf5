"""A home as the commands left it, opened as they open it."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from litpipe.runtime.runner import open_instance
from litpipe.settings import Settings


def home_instance(home: Path) -> dg.DagsterInstance:
    """`home`'s Dagster instance, as a command given `--home home` opens it: its `dagster_home`
    and the `llm` pool's limit resolved from the environment, litpipe.toml and the home's own
    settings."""
    settings = Settings(home=home)
    return open_instance(settings.llm, settings.paths)
