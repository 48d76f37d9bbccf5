"""Many run workers under the real Dagster daemon on one machine: the scenario of
`litpipe_tests/daemon_soak.py` (and of `litpipe_tests/test_daemon_soak.py`), measured.

A throwaway PostgreSQL (Debian's `postgresql` binaries) holds the instance; `dagster-daemon run`
serves litpipe's graph with every model call going to the stub server; a table of abstracts
from the bundled ICLR corpus is dropped into the inbox, the new-papers sensor asks for one
backfill of its papers, run in batches of `--batch-size` papers, `--max-runs` at once, within an
`llm` pool of `--pool-limit` slots; one run's worker is killed with SIGKILL while it holds a
slot. Prints the runs, papers per minute (from the daemon's start to the last paper run's end),
the pool's peak use and the duplicates.

    .venv/bin/python benchmarks/daemon_soak.py                       # the issue's 200 papers
    .venv/bin/python benchmarks/daemon_soak.py --papers 30 --batch-size 10

Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from litpipe_tests.daemon_soak import run_soak
from litpipe_tests.postgres_server import running_postgres, unavailable_reason
from litpipe_tests.tiny_model import build_tiny_model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--max-runs", type=int, default=3)
    parser.add_argument("--pool-limit", type=int, default=2)
    parser.add_argument(
        "--executor",
        choices=["in_process", "multiprocess"],
        default="in_process",
        help="how a run executes its steps: in its worker's process, or a process per step "
        "(litpipe's default executor)",
    )
    parser.add_argument("--no-kill", action="store_true", help="kill no run worker")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args()
    reason = unavailable_reason()
    if reason is not None:
        print(f"no PostgreSQL: {reason}", file=sys.stderr)
        return 2
    # Offline (no hub look-up, no price list) as importing litpipe has set for this process.
    with tempfile.TemporaryDirectory(prefix="litpipe-soak-") as folder:
        work = Path(folder)
        model = build_tiny_model(work / "tiny-model")
        with running_postgres() as postgres:
            soak = run_soak(
                work / "soak",
                postgres,
                model,
                papers=args.papers,
                batch_size=args.batch_size,
                max_runs=args.max_runs,
                pool_limit=args.pool_limit,
                executor=args.executor,
                kill=not args.no_kill,
                timeout_s=args.timeout,
            )
    figures = {
        **soak.figures(),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 1),
        "python": platform.python_version(),
    }
    print(
        f"{soak.papers} papers in {soak.seconds:.0f} s ({soak.papers_per_minute} a minute): "
        f"{len(soak.runs)} runs of at most {soak.batch_size} papers from {soak.backfills} "
        f"backfill(s), {args.max_runs} at once ({soak.executor} steps)"
    )
    print(
        f"llm pool of {soak.pool_limit}: at most {soak.peak_slots_sampled} slots claimed "
        f"(sampled), {soak.peak_pooled_steps} model-calling steps at once (events), "
        f"{soak.slots_held_at_end} held at the end; {soak.model_calls} model calls"
    )
    print(
        f"killed run {soak.killed_run} after {soak.killed_steps_done} steps, holding "
        f"{soak.killed_slots} slot(s): retries {figures['killed_run_retries']}, "
        f"{soak.killed_slots_at_end} slot(s) still held at the end"
    )
    print(
        f"duplicates: {figures['duplicates']}, missing: {figures['missing']}, "
        f"papers the synthesis does not cite: {len(soak.uncited)}"
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
