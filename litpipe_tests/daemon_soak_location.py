"""The code location `daemon_soak` serves to the Dagster daemon: litpipe's graph with its settings
from the environment, as `litpipe.defs.definitions` is, each launched run executing its steps
in its own process (`LITPIPE_SOAK_EXECUTOR=in_process`, one import of the graph and one load
of the embedder a run) or, by default, litpipe's own executor (a process per step)."""

import os

import dagster as dg

from litpipe.defs.definitions import build_definitions
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups

EXECUTOR_VARIABLE = "LITPIPE_SOAK_EXECUTOR"

defs = build_definitions(
    **settings_groups(Settings()),
    executor=dg.in_process_executor if os.environ.get(EXECUTOR_VARIABLE) == "in_process" else None,
)
