"""Runs whose process is gone: marked failed, their `llm` pool slots freed.

`litpipe run` (and backfill, eval, ask) executes its runs in its own process. Killed there
(`kill -9`, the OOM killer), a run stays STARTED and keeps the pool slot its step claimed, and
every later model-calling step waits for that slot for ever: Dagster records no process for an
in-process run, and its run monitoring only watches runs a run launcher started. So litpipe tags
its runs with their process and host, and whoever opens the instance releases the runs of this
host whose process no longer exists.
"""

import os
import socket

import dagster as dg

PID_TAG = "litpipe/pid"
HOST_TAG = "litpipe/host"


def process_tags() -> dict[str, str]:
    """The tags saying which process executes a run (litpipe's in-process runs)."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: checks that the process exists, sends nothing
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def release_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Fails the unfinished runs of this host whose process is gone and frees the pool slots
    they hold; returns their run ids."""
    host = socket.gethostname()
    storage = instance.event_log_storage
    holding = (
        storage.get_concurrency_run_ids() if storage.supports_global_concurrency_limits else set()
    )
    unfinished = instance.get_runs(
        filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED],
            tags={HOST_TAG: host},
        )
    )
    held = instance.get_runs(filters=dg.RunsFilter(run_ids=list(holding))) if holding else []
    released = []
    for run in {run.run_id: run for run in [*unfinished, *held]}.values():
        pid = run.tags.get(PID_TAG)
        if run.tags.get(HOST_TAG) != host or pid is None or _process_exists(int(pid)):
            continue
        if not run.is_finished:
            instance.report_run_failed(
                run, f"The process running it (pid {pid} on {host}) is gone; marked failed."
            )
        if run.run_id in holding:
            storage.free_concurrency_slots_for_run(run.run_id)
        released.append(run.run_id)
    return released
