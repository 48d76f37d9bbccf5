"""The latest result of each check of a collection's assets (its syntheses', and whether its
optional steps ran), for `report.json` and the command line: what the Dagster UI shows on the
assets' Checks tab, without opening it."""

from collections.abc import Sequence
from typing import Literal

import dagster as dg

from litpipe.defs.partitions import collections
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.evaluation.checks import CheckOutcome
from litpipe.schemas import OPTIONAL_STEP_NAMES, CheckReport, OptionalStep, StepNotRun

# Check executions of other collections can come between two runs of one collection.
_HISTORY_SCANNED = 50
_SEVERITIES: dict[dg.AssetCheckSeverity, Literal["error", "warn"]] = {
    dg.AssetCheckSeverity.ERROR: "error",
    dg.AssetCheckSeverity.WARN: "warn",
}


def latest_check_results(
    instance: dg.DagsterInstance, defs: dg.Definitions, collection: str
) -> list[CheckReport]:
    """Per check of the collection assets, its latest evaluation for `collection`: its run's
    partition tag says which collection it graded (a result carries its partition since the
    checks are partitioned, but those a home recorded before do not)."""
    partition_of: dict[str, str | None] = {}
    found: list[CheckReport] = []
    for key in sorted(defs.resolve_asset_graph().asset_check_keys, key=str):
        history = instance.event_log_storage.get_asset_check_execution_history(
            key, limit=_HISTORY_SCANNED
        )
        for record in history:
            if record.run_id not in partition_of:
                run = instance.get_run_by_id(record.run_id)
                partition_of[record.run_id] = run.tags.get("dagster/partition") if run else None
            if partition_of[record.run_id] != collection or record.event is None:
                continue
            if record.event.dagster_event is None:
                continue
            evaluation = record.event.dagster_event.event_specific_data
            if not isinstance(evaluation, dg.AssetCheckEvaluation):
                break  # planned, never evaluated: its asset failed, and an older result is stale
            found.append(
                CheckReport(
                    asset=key.asset_key.to_user_string(),
                    check=key.name,
                    passed=evaluation.passed,
                    severity=_SEVERITIES[evaluation.severity],
                    description=evaluation.description or "",
                )
            )
            break
    return found


def check_result(
    asset: str, name: str, outcome: CheckOutcome, blocking: bool
) -> dg.AssetCheckResult:
    """A check's outcome as the step reports it: ERROR when the check blocks (as its
    spec says) and the outcome is not `warn_only`, else WARN (a blocking check failing with WARN
    blocks nothing); lists and mappings as JSON metadata, each Markdown entry rendered."""
    error = blocking and not outcome.warn_only
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=name,
        passed=outcome.passed,
        severity=dg.AssetCheckSeverity.ERROR if error else dg.AssetCheckSeverity.WARN,
        description=outcome.description,
        metadata={
            **{
                key: dg.MetadataValue.json(value) if isinstance(value, dict | list) else value
                for key, value in outcome.metadata.items()
            },
            **{key: markdown_metadata(text) for key, text in outcome.markdown.items()},
        },
    )


# The check of an optional collection step (`litpipe.workflows.optional_steps`): it warns when
# the step did not run, naming why, so that the UI, `report.json` and the command say so; it
# never blocks, since the synthesis is written without the step.
OPTIONAL_STEP_CHECK = "optional_step"


def optional_step_spec(asset: str, step: OptionalStep) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        OPTIONAL_STEP_CHECK,
        asset=asset,
        partitions_def=collections,
        blocking=False,
        description=f"Whether {OPTIONAL_STEP_NAMES[step]} ran. The step is optional: when its "
        "model work fails (a model error), it is recorded as not run, with why, and the "
        "synthesis is written without it; the check then warns with that reason.",
    )


def optional_step_result(
    asset: str, step: OptionalStep, not_run: Sequence[StepNotRun]
) -> dg.AssetCheckResult:
    """Passed when `step` ran in full; else a warning naming each part that did not, and why."""
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=OPTIONAL_STEP_CHECK,
        passed=not not_run,
        severity=dg.AssetCheckSeverity.WARN,
        description="; ".join(record.line() for record in not_run)
        or f"{OPTIONAL_STEP_NAMES[step]} ran",
    )
