"""`litpipe ui`: the Dagster UI (`dagster dev`) served on this litpipe home, with this
command's settings."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from litpipe.settings import Settings, served_settings_environment


def ui_command(settings: Settings, port: int) -> int:
    dagster = Path(sys.executable).with_name("dagster")
    command = [str(dagster), "dev", "-m", "litpipe.defs.definitions", "-p", str(port)]
    os.execve(dagster, command, code_server_environment(settings))
    return 0  # not reached: execve replaces this process


def code_server_environment(settings: Settings) -> dict[str, str]:
    """The environment `dagster dev` starts with to serve `settings`, the instance's
    dagster.yaml written for them.

    The code server reads the whole settings from the file `LITPIPE_SETTINGS_FILE` names
    (`litpipe.settings.resolved`), written now from this command's (resolved as every command
    resolves them: flags, environment, litpipe.toml, the home's, the preset, defaults); the runs,
    sensors and backfills it launches inherit the variable, and so read the same file. An api
    base's password is kept out of the file: it travels in `LITPIPE_LLM__API_BASE`."""
    from litpipe.instance.sqlite_storage import enable_event_batches
    from litpipe.runtime.instance import write_instance_config

    # The UI's runs get the `llm` pool's limit too.
    write_instance_config(settings.llm, settings.paths)
    enable_event_batches()  # and write a batch of papers' events together
    return {
        **os.environ,
        "DAGSTER_HOME": str(settings.dagster_home),
        **served_settings_environment(settings),
    }
