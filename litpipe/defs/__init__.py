"""The Dagster graph: its assets, checks, jobs, resources, sensors, schedules and IO manager.

The instance's plumbing it runs on (event log storages, the pool-slot wait, run liveness, why a
run failed) is `litpipe.instance`."""

import warnings

import dagster as dg

# Content-hash data versions are how litpipe stops recomputation where outputs did not change
# (docs/design.md, "Rules"); Dagster marks the parameter beta, and the warning would repeat per
# step.
warnings.filterwarnings("ignore", message=r"Parameter `data_version`", category=dg.BetaWarning)
# Tokenizing and embedding run a backfill's batch of papers per run, the model-calling stages
# one paper per run (BackfillPolicy); a job holding both, like `paper_pipeline`, then backfills
# one paper per run, which is what Dagster's warnings about either would say.
warnings.filterwarnings("ignore", message=r"Parameter `backfill_policy`", category=dg.BetaWarning)
warnings.filterwarnings("ignore", message=r"Asset job .* with varying BackfillPolicies")
# A collection's (or a request's) check results belong to its partition, so that the UI shows
# each collection's apart; Dagster marks partitioned checks a preview.
warnings.filterwarnings(
    "ignore",
    message=r"Specifying a partitions_def on an AssetCheckSpec",
    category=dg.PreviewWarning,
)

from litpipe.instance import pool_wait  # noqa: E402  (after the filters: it imports Dagster's executors)

# Steps waiting for an `llm` slot sleep between polls and give up after `llm.slot_wait_seconds`.
pool_wait.install()
