"""The latest result of each check of a collection's assets (its syntheses', and whether its
optional steps ran), for `report.json` and the command line: what the Dagster UI shows on the
assets' Checks tab, without opening it.

A check that could not run (coherence without a model; the checks of an optional text whose
model failed) is not reported by its step: Dagster then shows it as not run (skipped), never as
passed, and the asset's materialization names it under `SKIPPED_CHECKS`, with why. Such an
asset is built by `ModelStep.asset(..., checks_may_skip=True)` (a plain asset must report every
check it declares)."""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import dagster as dg

from litpipe.defs.partitions import collections
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.evaluation.checks import CheckOutcome, CheckSkipped
from litpipe.schemas import OPTIONAL_STEP_NAMES, CheckReport, OptionalStep, StepNotRun

# Check executions of other collections can come between two runs of one collection.
_HISTORY_SCANNED = 50
# How a check that could not run was reported before such a check went unreported: passed,
# its description this and why.
_LEGACY_SKIPPED = "skipped: "
_SEVERITIES: dict[dg.AssetCheckSeverity, Literal["error", "warn"]] = {
    dg.AssetCheckSeverity.ERROR: "error",
    dg.AssetCheckSeverity.WARN: "warn",
}


def latest_check_results(
    instance: dg.DagsterInstance, defs: dg.Definitions, collection: str
) -> list[CheckReport]:
    """Per check of the collection assets, its latest evaluation for `collection`: its run's
    partition tag says which collection it graded (a result carries its partition since the
    checks are partitioned, but those a home recorded before do not). A check its step could
    not run is reported skipped (`passed` None), with why."""
    graph = defs.resolve_asset_graph()
    partition_of: dict[str, str | None] = {}
    skipped_in: dict[str, dict[dg.AssetKey, dict[str, str]]] = {}
    found: list[CheckReport] = []
    for key in sorted(graph.asset_check_keys, key=str):
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
                # Planned, never evaluated: skipped when its asset was materialized saying so;
                # else its asset failed, and an older result is stale.
                if record.run_id not in skipped_in:
                    skipped_in[record.run_id] = _skipped_checks(instance, record.run_id)
                why = skipped_in[record.run_id].get(key.asset_key, {}).get(key.name)
                if why is not None:
                    blocking = graph.get(key).blocking
                    found.append(_skipped_report(key, why, "error" if blocking else "warn"))
                break
            found.append(_report(key, evaluation))
            break
    return found


def _report(key: dg.AssetCheckKey, evaluation: dg.AssetCheckEvaluation) -> CheckReport:
    description = evaluation.description or ""
    severity = _SEVERITIES[evaluation.severity]
    if evaluation.passed and description.startswith(_LEGACY_SKIPPED):
        return _skipped_report(key, description.removeprefix(_LEGACY_SKIPPED), severity)
    return CheckReport(
        asset=key.asset_key.to_user_string(),
        check=key.name,
        passed=evaluation.passed,
        severity=severity,
        description=description,
    )


def _skipped_report(
    key: dg.AssetCheckKey, why: str, severity: Literal["error", "warn"]
) -> CheckReport:
    return CheckReport(
        asset=key.asset_key.to_user_string(),
        check=key.name,
        passed=None,
        severity=severity,
        description=why,
    )


def _skipped_checks(instance: dg.DagsterInstance, run_id: str) -> dict[dg.AssetKey, dict[str, str]]:
    """The checks each asset materialized in the run names as not run, each with why."""
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
    ).records
    skipped: dict[dg.AssetKey, dict[str, str]] = {}
    for record in records:
        materialization = record.asset_materialization
        if materialization is None:
            continue
        value = materialization.metadata.get(SKIPPED_CHECKS)
        if isinstance(value, dg.JsonMetadataValue) and isinstance(value.data, dict):
            skipped.setdefault(materialization.asset_key, {}).update(
                {str(name): str(why) for name, why in value.data.items()}
            )
    return skipped


# The materialization metadata of an asset whose step could not run some of its checks: each
# such check's name and why. Dagster shows those checks as not run (skipped).
SKIPPED_CHECKS = "skipped_checks"


@dataclass(frozen=True)
class Checked:
    """The checks of an output: the results of those that ran, and those that could not."""

    results: list[dg.AssetCheckResult]
    skipped: dict[str, str]

    def metadata(self) -> dict[str, dg.MetadataValue]:
        """For the output's metadata: the checks not run, each with why (none: nothing)."""
        return {SKIPPED_CHECKS: dg.MetadataValue.json(self.skipped)} if self.skipped else {}


def checked(
    asset: str,
    outcomes: Mapping[str, CheckOutcome | CheckSkipped],
    blocking: Callable[[str], bool],
) -> Checked:
    """The outcomes of an asset's checks as its step reports them: a result for each that ran
    (`check_result`, blocking as `blocking(name)` says), and none for those skipped, which its
    output's metadata names (`Checked.metadata`) and Dagster shows as not run."""
    return Checked(
        results=[
            check_result(asset, name, outcome, blocking(name))
            for name, outcome in outcomes.items()
            if isinstance(outcome, CheckOutcome)
        ],
        skipped={
            name: outcome.reason
            for name, outcome in outcomes.items()
            if isinstance(outcome, CheckSkipped)
        },
    )


def grading_check_specs(
    asset: str,
    partitions_def: dg.PartitionsDefinition,
    descriptions: Mapping[str, str],
    blocking: bool,
) -> list[dg.AssetCheckSpec]:
    """The specs of an output's grading checks, each with what it checks
    (`grading.check_descriptions`): they warn, or block when `blocking` (`grading.blocking`)."""
    return [
        dg.AssetCheckSpec(
            name,
            asset=asset,
            partitions_def=partitions_def,
            blocking=blocking,
            description=description,
        )
        for name, description in descriptions.items()
    ]


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
