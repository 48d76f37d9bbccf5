"""Many run workers under the real Dagster daemon, on PostgreSQL, with one worker killed: the
scenario of `daemon_soak` (issue 33, point 3), asserted.

`dagster-daemon run` serves litpipe's graph; the new-papers sensor finds a table of abstracts in
the inbox and asks for one backfill of its papers, run in batches of `operations.batch_size`
(the per-paper assets' `BackfillPolicy`), at most three runs at once (the queued run
coordinator), their model-calling steps within the `llm` pool's two slots. One run's worker is
killed with SIGKILL while it holds a slot. The collection's stages are the daemon's too: its
automation requests them once the papers are built. Without PostgreSQL's binaries this skips,
saying why (`LITPIPE_REQUIRE_POSTGRES=1` makes it fail instead).

The issue's 200 papers take this machine (two cores) about ten minutes, most of it each run's
process importing the graph and the embedder; the test drops `LITPIPE_SOAK_PAPERS` abstracts
(default 30, three batches of 10), and `benchmarks/daemon_soak.py` runs the 200.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pytest

from litpipe_tests.daemon_soak import PAPER_ASSETS, run_soak
from litpipe_tests.postgres_server import postgres_for_a_test

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_daemon_soak")]

PAPERS = int(os.environ.get("LITPIPE_SOAK_PAPERS", "30"))
BATCH_SIZE = max(1, PAPERS // 3)
POOL_LIMIT = 2


def test_the_daemon_builds_every_paper_once_within_the_pool_despite_a_killed_worker(
    tmp_path: Path, tiny_model: Path
) -> None:
    with postgres_for_a_test() as postgres:
        soak = run_soak(
            tmp_path,
            postgres,
            tiny_model,
            papers=PAPERS,
            batch_size=BATCH_SIZE,
            max_runs=3,
            pool_limit=POOL_LIMIT,
            timeout_s=900,
        )
    print(soak.figures())
    log = f"daemon log's end:\n{soak.daemon_log}"

    # The sensor asked for one backfill, run as batches, not one run per paper.
    assert soak.backfills == 1, log
    assert len(soak.paper_ids) == PAPERS
    batches = -(-PAPERS // BATCH_SIZE)
    assert len(soak.runs) == batches + len(soak.retries_of_killed), log

    # Every paper of every per-paper stage materialized exactly once: the killed run's retry
    # built only what its worker had not.
    assert set(soak.materializations) == set(PAPER_ASSETS)
    assert soak.missing == {}, log
    assert soak.duplicates == {}, log

    # The killed run: failed, retried (once, successfully), and the slot it held freed.
    assert soak.killed_run is not None and soak.killed_slots >= 1, log
    killed = next(run for run in soak.runs if run.run_id == soak.killed_run)
    assert killed.status == dg.DagsterRunStatus.FAILURE
    assert [run.status for run in soak.retries_of_killed] == [dg.DagsterRunStatus.SUCCESS], log
    assert soak.killed_slots_at_end == 0
    assert soak.slots_held_at_end == 0
    others = [run for run in soak.runs if run.run_id != soak.killed_run]
    assert all(run.status == dg.DagsterRunStatus.SUCCESS for run in others), log

    # The pool was used and never beyond its limit, by the claims sampled and by the steps' own
    # start and end events (the killed run's step counted until its run ended).
    assert 1 <= soak.peak_slots_sampled <= POOL_LIMIT
    assert 1 <= soak.peak_pooled_steps <= POOL_LIMIT
    assert soak.model_calls > 0

    # The collection's synthesis, written by the daemon's runs from the papers it built, cites
    # every one. Its stages follow any paper's update: built once with the backfill, and once
    # more where the killed batch's retry lands after them (the LLM cache answers the calls).
    assert soak.collection_succeeded, soak.collection_failure or log
    assert set(soak.collection_materializations.values()) <= {1, 2}, (
        soak.collection_materializations
    )
    assert soak.uncited == []
