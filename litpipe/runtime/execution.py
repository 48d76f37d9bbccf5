"""The one way litpipe's commands run a job of the graph in-process: into the instance the UI
serves, with Dagster's console log quiet, tagged with the launching process (so that a killed
one's runs are failed and their pool slots freed: `instance.run_liveness`), and never raising on a
failure, which the caller reports in its own words (`run_failure`), but a refused write (a full
disk, a read-only home), which ends the command."""

from __future__ import annotations

from typing import Any

import dagster as dg

from litpipe.defs.llm_steps import INTERRUPTED
from litpipe.defs.paper_batches import failed_papers
from litpipe.instance.run_failures import failure_reason, refused_write_in_events
from litpipe.instance.run_liveness import process_tags

# The progress lines say what happened, and a failed paper's reason is in them and in the
# report; Dagster's console log would repeat it with a traceback per paper. The run's full log
# is still in the instance, for the UI.
QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
LAUNCHED_BY_CLI = {"litpipe/launched_by": "cli"}
# The tags Dagster's backfill daemon gives a run over a range of partitions.
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def execute(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    job: str,
    *,
    partition_key: str | None = None,
    partition_range: tuple[str, str] | None = None,
    asset_selection: list[dg.AssetKey] | None = None,
    run_config: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
) -> dg.ExecuteInProcessResult:
    """One in-process run of `job` (of `asset_selection`, for `partition_key` or the
    partitions from the first to the last of `partition_range`, as a backfill's run is)."""
    ranged = (
        {RANGE_START_TAG: partition_range[0], RANGE_END_TAG: partition_range[1]}
        if partition_range
        else {}
    )
    result = defs.resolve_job_def(job).execute_in_process(
        partition_key=partition_key,
        asset_selection=asset_selection,
        instance=instance,
        raise_on_error=False,
        run_config={**QUIET_RUN_CONFIG, **(run_config or {})},
        tags={**LAUNCHED_BY_CLI, **process_tags(), **(tags or {}), **ranged},
    )
    refused = None if result.success else refused_write_in_events(result.all_events)
    if refused is not None:
        # A full disk or a read-only home fails every later run alike: the command stops here,
        # and says why in one line (`litpipe.commands.terminal`).
        raise refused.error()
    return result


def interrupted(result: dg.ExecuteInProcessResult) -> bool:
    """Whether a signal interrupted the run's step (Dagster raises this error in it; a
    model-calling step fails flagged `INTERRUPTED`) or its wait for a pool slot (`pool_wait`
    fails the run with that error): the run was stopped on request, it did not fail."""
    for event in result.all_events:
        if event.is_step_failure:
            error = event.step_failure_data.error
            data = event.step_failure_data.user_failure_data
            if data is not None and INTERRUPTED in (data.metadata or {}):
                return True
        elif event.is_run_failure:
            error = event.job_failure_data.error
        else:
            continue
        if error is not None and error.cls_name == "DagsterExecutionInterruptedError":
            return True
    return False


def run_failure(result: dg.ExecuteInProcessResult) -> str:
    """Why the run failed, in one line (the failed step and its reason)."""
    return failure_reason(result.all_events)


def papers_failed(result: dg.ExecuteInProcessResult) -> dict[str, str]:
    """The papers a failed run over a batch names as failed, each with its reason
    (`paper_batches`); empty when a step failed as a whole."""
    failed: dict[str, str] = {}
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data.user_failure_data is not None:
            failed.update(failed_papers(event.step_failure_data.user_failure_data.metadata))
    return failed
