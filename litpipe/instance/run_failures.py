"""Why a run failed, in one line a user reads: from an in-process run's events, or from the log
of a partition's latest stored run (a paper whose own run failed, which its collection then
leaves out: `defs.assets.relationship_analysis`). A run that failed because the file system
refused a write (a full disk, a read-only home) says that, whichever step it hit
(`refused_write_in_events`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

import dagster as dg

from litpipe.files import RefusedWrite, refused_write_in_text
from litpipe.instance.pool_wait import waiting_failure


class StoredError(Protocol):
    """A stored error, as a failure event holds it (Dagster's `SerializableErrorInfo`, which it
    does not export): what is read of it here."""

    @property
    def cls_name(self) -> str | None: ...
    @property
    def message(self) -> str: ...
    @property
    def cause(self) -> StoredError | None: ...
    @property
    def context(self) -> StoredError | None: ...


# Dagster fails a step whose blocking check failed with this error, naming only the checks.
_BLOCKED = "DagsterAssetCheckFailedError"
_REASONS = {
    dg.DagsterEventType.STEP_FAILURE,
    dg.DagsterEventType.ASSET_CHECK_EVALUATION,
    dg.DagsterEventType.RUN_FAILURE,
}


def failure_reason(events: Iterable[dg.DagsterEvent]) -> str:
    """The first failed step's reason: its `dg.Failure` description, the user code's own
    exception, or, where a blocking check failed, each such check's own description."""
    events = list(events)
    refused = refused_write_in_events(events)
    if refused is not None:
        return refused.line()
    for event in events:
        if not event.is_step_failure:
            continue
        failure = event.step_failure_data
        if failure.user_failure_data is not None and failure.user_failure_data.description:
            return failure.user_failure_data.description
        error = failure.error
        if error is not None and error.cls_name == _BLOCKED:
            checks = _failed_blocking_checks(events, event.step_key)
            if checks:
                return "; ".join(checks)
        if error is not None:
            while error.cause is not None:  # the user code's own exception, not Dagster's wrapper
                error = error.cause
            return f"{event.step_key}: {error.message.strip().splitlines()[-1]}"
    return (
        waiting_failure(events)
        or "the run failed before any step ran (see the run in the Dagster UI)"
    )


def refused_write_in_events(events: Iterable[dg.DagsterEvent]) -> RefusedWrite | None:
    """The refused write that failed a step or the run, from its stored error (every exception
    in its chain): what the whole run stops for, not one paper's fault."""
    for event in events:
        if event.is_step_failure:
            error = event.step_failure_data.error
        elif event.is_run_failure:
            error = event.job_failure_data.error
        else:
            continue
        for link in _chain(error):
            refused = refused_write_in_text(link.cls_name, link.message)
            if refused is not None:
                return refused
    return None


def _chain(error: StoredError | None) -> Iterator[StoredError]:
    """A stored error and those it was raised from or while handling."""
    while error is not None:
        yield error
        error = error.cause or error.context


def _failed_blocking_checks(events: list[dg.DagsterEvent], step_key: str | None) -> list[str]:
    return [
        f"{evaluation.asset_key.to_user_string()} check {evaluation.check_name} failed: "
        f"{evaluation.description}"
        for event in events
        if event.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
        and event.step_key == step_key
        and (evaluation := event.asset_check_evaluation_data).blocking
        and not evaluation.passed
        and evaluation.severity == dg.AssetCheckSeverity.ERROR
    ]


def latest_run_failure(instance: dg.DagsterInstance, partition: str) -> str | None:
    """Why the latest run of `partition` failed, if it did."""
    runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": partition}), limit=1)
    if not runs or runs[0].status != dg.DagsterRunStatus.FAILURE:
        return None
    logged = instance.all_logs(runs[0].run_id, of_type=_REASONS)
    return failure_reason(
        entry.dagster_event for entry in logged if entry.dagster_event is not None
    )
