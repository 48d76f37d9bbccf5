"""A step waiting for a slot of a pool (`llm`): asleep between polls, and not for ever.

Dagster's executors ask their run's `InstanceConcurrencyContext` whether a step blocked on a
pool may start yet. Between two polls of the instance the context answers "no" at once, and in
Dagster 1.13 its `interval_to_next_pending_claim_check` is `min(0, ...)`, never above 0: the
in-process executor (`litpipe run`, backfill, eval, ask) never sleeps and spun at about 70% of a
core. It also waited for ever, and as no step runs meanwhile, the SIGINT/SIGTERM Dagster captures
for its steps was never acted on.

`PatientConcurrencyContext` sleeps until the next poll (a second at most, so that a signal is
acted on within one) and gives up after `llm.slot_wait_seconds` with a message naming the pool,
the wait, the runs holding its slots and what to do; in the in-process executor it also stops
the run on a captured signal. Dagster has no hook to choose an executor's concurrency context,
and `execute_in_process` always uses its own executor, so `install` puts litpipe's in the place
of Dagster's in the executor modules that create one. (The multiprocess executor of launched
runs never sleeps between polls, whatever the context says: it still spins while all of its
runnable steps wait, as docs/how-to/scale-out.md says.)
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import dagster as dg

# Private to Dagster (checked on dagster 1.13.27). Missing public API: a hook to choose an
# executor's concurrency context (`InstanceConcurrencyContext`, whose poll interval is never
# above 0 and whose wait has no bound: it is a name in each executor's module, which `install`
# replaces). Instance config has pool limits and granularity, not a wait's interval or bound.
from dagster._core.execution.plan import instance_concurrency_context as dagster_context
from dagster._core.executor import in_process, multiprocess, step_delegating

from litpipe.instance.run_liveness import HOST_TAG, PID_TAG
from litpipe.settings import code_location_settings

# The longest sleep of a waiting executor: how late a signal or the deadline may be acted on.
MOST_SECONDS_ASLEEP = 1.0
# Holders named in the message, at most.
NAMED_HOLDERS = 3


class SlotWaitExpired(Exception):
    """A step waited `llm.slot_wait_seconds` for a pool slot and the run gave up."""


class PatientConcurrencyContext(dagster_context.InstanceConcurrencyContext):
    """Dagster's context, sleeping between polls and waiting `llm.slot_wait_seconds` at most."""

    def __init__(self, instance: dg.DagsterInstance, dagster_run: dg.DagsterRun) -> None:
        super().__init__(instance, dagster_run)
        self._waiting_since: dict[str, float] = {}
        self._most_seconds_waiting: float | None = None  # read from the settings when needed

    def claim(self, concurrency_key: str, step_key: str, step_priority: int = 0) -> bool:
        if super().claim(concurrency_key, step_key, step_priority):
            self._waiting_since.pop(step_key, None)
            return True
        since = self._waiting_since.setdefault(step_key, time.monotonic())
        if self._most_seconds_waiting is None:
            self._most_seconds_waiting = code_location_settings().llm.slot_wait_seconds
        waited = time.monotonic() - since
        if waited >= self._most_seconds_waiting:
            raise SlotWaitExpired(self._gave_up(concurrency_key, step_key, waited))
        return False

    def interval_to_next_pending_claim_check(self) -> float:
        if not self.has_pending_claims():
            return 0.0
        next_poll = min(self._pending_timeouts.values(), default=time.time()) - time.time()
        return min(max(next_poll, 0.0), MOST_SECONDS_ASLEEP)

    def _gave_up(self, pool: str, step_key: str, waited: float) -> str:
        info = self._instance.event_log_storage.get_concurrency_info(pool)
        holders = sorted({slot.run_id for slot in info.claimed_slots})
        named = []
        for run_id in holders[:NAMED_HOLDERS]:
            run = self._instance.get_run_by_id(run_id)
            tags = run.tags if run is not None else {}
            where = f" (pid {tags[PID_TAG]} on {tags[HOST_TAG]})" if PID_TAG in tags else ""
            named.append(f"{run_id}{where}")
        if len(holders) > NAMED_HOLDERS:
            named.append(f"{len(holders) - NAMED_HOLDERS} more")
        held = f", held by run {', '.join(named)}" if named else ""
        return (
            f"{step_key}: waited {waited:.0f} s for a slot of the `{pool}` pool "
            f"(limit {info.slot_count}{held}) and gave up (llm.slot_wait_seconds). Let those "
            "runs finish, free the slots of one that is gone (Dagster UI: Deployment > "
            f"Concurrency; `dagster instance concurrency get {pool}` shows them) or raise "
            "llm.pool_limit."
        )


class InProcessConcurrencyContext(PatientConcurrencyContext):
    """Also stops the run on a signal Dagster captured while a step waits: the in-process
    executor acts on one only in a running step (the multiprocess and step-delegating ones check
    between polls themselves, and stop their running steps first)."""

    def claim(self, concurrency_key: str, step_key: str, step_priority: int = 0) -> bool:
        if super().claim(concurrency_key, step_key, step_priority):
            return True
        try:
            # Raises at once for a signal captured while the step waited (Dagster's public
            # way to act on one), then gives the handler back.
            with dg.raise_execution_interrupts():
                pass
        except dg.DagsterExecutionInterruptedError as stopped:
            raise dg.DagsterExecutionInterruptedError(
                f"Stopped while {step_key} waited for a slot of the `{concurrency_key}` pool."
            ) from stopped
        return False


# What a run waiting for a slot raises, outside any step: it gave up, or a signal stopped it.
_WAITING_ERRORS = {SlotWaitExpired.__name__, dg.DagsterExecutionInterruptedError.__name__}


def waiting_failure(events: Iterable[dg.DagsterEvent]) -> str | None:
    """Why the run failed while a step waited for a slot (its error's message, after the
    exception's class), if it did."""
    for event in events:
        error = event.job_failure_data.error if event.is_run_failure else None
        if error is not None and error.cls_name in _WAITING_ERRORS:
            return error.message.partition(": ")[2].strip() or error.message.strip()
    return None


def install() -> None:
    """Makes Dagster's executors create litpipe's concurrency contexts for their runs."""
    # Replacing the class each executor module names is the point: mypy forbids assigning to a
    # class, hence the ignores.
    in_process.InstanceConcurrencyContext = InProcessConcurrencyContext  # type: ignore[misc]
    multiprocess.InstanceConcurrencyContext = PatientConcurrencyContext  # type: ignore[misc]
    step_delegating.step_delegating_executor.InstanceConcurrencyContext = (  # type: ignore[misc]
        PatientConcurrencyContext
    )
