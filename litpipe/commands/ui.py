"""`litpipe ui`: the Dagster UI (`dagster dev`) served on this litpipe home, with this
command's settings."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from litpipe.settings import Settings


def ui_command(settings: Settings, port: int) -> int:
    from litpipe.instance.sqlite_storage import enable_event_batches
    from litpipe.runtime.instance import write_instance_config

    write_instance_config(settings)  # the UI's runs get the `llm` pool's limit too
    enable_event_batches()  # and write a batch of papers' events together
    # The code server reads its settings from the environment: hand it this command's. The
    # runs it launches inherit them: the api base, its password hidden in their config, too.
    flags = {
        "LITPIPE_PRESET": settings.preset,
        "LITPIPE_LLM__MODEL": settings.llm.model,
        "LITPIPE_LLM__API_BASE": settings.llm.api_base,
        "LITPIPE_LLM__STRUCTURED_OUTPUT": settings.llm.structured_output,
    }
    env = {
        **os.environ,
        "DAGSTER_HOME": str(settings.dagster_home),
        "LITPIPE_HOME": str(settings.home),
        "LITPIPE_INGEST__EMBEDDER": settings.ingest.embedder,
        **{name: value for name, value in flags.items() if value is not None},
    }
    dagster = Path(sys.executable).with_name("dagster")
    command = [str(dagster), "dev", "-m", "litpipe.defs.definitions", "-p", str(port)]
    os.execve(dagster, command, env)
    return 0  # not reached: execve replaces this process
