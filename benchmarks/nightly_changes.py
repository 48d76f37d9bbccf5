"""What a night's "what changed" costs next to the night itself (issue 34, last acceptance point).

Two nights of a collection of SciFact abstracts (a BEIR folder: corpus.jsonl), run the
way a user runs them, each in its own process, packaged MiniLM and offline defaults:

1. night 1: `litpipe run` on a table of the first `--papers` abstracts (1,000), in a fresh home;
2. night 2: the same table with the next `--added` abstracts (50) appended, `litpipe run` again:
   the night's run time, the figure the others are measured against;
3. `litpipe diff COLLECTION`: what night 2 changed in the synthesis (the latest kept version
   against the one kept before it), as a user prints it;
4. the night's digest: the `nightly_digest` partition of night 2's day, materialized through
   `nightly_digest_job` as the 02:00 schedule does, in a process of its own.

Dates: a digest covers one finished UTC day, and the history and the catalog are read by day.
So that the two nights fall on two days, the benchmark moves each night's records back once it
has run: the catalog's registration times and the kept history's times (file names and
`recorded_at`), night 1 by two days, night 2 by one; the digest is then built for yesterday.
Nothing else is touched.

Bytecode: litpipe's modules are compiled once before the first step, as an installed copy's
are after its first run. An environment that sets PYTHONDONTWRITEBYTECODE (this machine's does)
would otherwise have every process compile litpipe's ~220 modules from source, about 0.5 s a
process that no user's installed litpipe pays.

Printed: each step's wall seconds (process start to exit, imports included: what a user waits
for), the in-process seconds of the diff's computation and of the digest's run, and the ratio
`(diff + digest) / night 2`, both with the processes' walls and with the in-process work alone.

Usage:
  python benchmarks/nightly_changes.py [--corpus ../shared/data/scifact]
      [--papers 1000] [--added 50]
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from concurrency import read_abstracts, write_table
from pydantic import BaseModel

from litpipe.settings import Settings
from litpipe.workflows import synthesis_history

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "scifact"  # ../shared beside the repo
COLLECTION = "scifact"
LITPIPE = "import sys; from litpipe.cli import main; sys.exit(main())"
# The night's digest as the schedule runs it, timed inside the process too (the last line).
DIGEST = """
import json, sys, time
from litpipe.defs.definitions import build_definitions
from litpipe.runtime.runner import open_instance
from litpipe.settings import Settings

settings = Settings(home=sys.argv[1])
instance = open_instance(settings.llm, settings.paths)
job = build_definitions(**settings_groups(settings)).resolve_job_def("nightly_digest_job")
started = time.perf_counter()
result = job.execute_in_process(partition_key=sys.argv[2], instance=instance)
digest = result.output_for_node("nightly_digest")
print(json.dumps({
    "success": result.success,
    "seconds": time.perf_counter() - started,
    "papers": len(digest.papers),
    "relationships": sum(len(c.relationships) for c in digest.collections),
    "changes": [change.changed for change in digest.changes],
    "contradicted": sum(len(change.contradicted) for change in digest.changes),
}))
"""
# `litpipe diff`'s computation alone, in a process of its own.
DIFF_WORK = """
import json, sys, time
from pathlib import Path
from litpipe.workflows import synthesis_history as history
from litpipe.settings.groups import settings_groups

home, collection = Path(sys.argv[1]), sys.argv[2]
started = time.perf_counter()
new = history.read(history.entries(home, collection, "synthesis")[-1])
diff = history.diff_between(home, collection, history.version_before(home, new), new)
print(json.dumps({"seconds": time.perf_counter() - started}))
"""


class Step(BaseModel):
    wall_s: float
    exit_code: int


class Figures(BaseModel):
    papers: int
    added: int
    night_1: Step
    night_2: Step
    diff: Step
    diff_compute_s: float
    diff_counts: dict[str, object]
    digest: Step
    digest_run_s: float
    digest_papers: int
    digest_relationships: int
    diff_and_digest_share_of_night: float
    diff_and_digest_work_share_of_night: float
    under_ten_percent: bool
    machine: str


def timed(args: list[str]) -> tuple[Step, str]:
    """A command in its own process: its wall time, exit code and standard output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    process = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if process.returncode != 0:
        print(process.stderr[-3000:], file=sys.stderr)
    return Step(wall_s=round(wall, 2), exit_code=process.returncode), process.stdout


def litpipe(*args: str) -> tuple[Step, str]:
    return timed([sys.executable, "-c", LITPIPE, *args])


def move_back(home: Path, since: datetime, days: int) -> int:
    """The records made at or after `since` (papers registered, versions kept) moved `days`
    back, as if they had been made then; the number moved."""
    settings = Settings(home=home)
    moved = 0
    with sqlite3.connect(settings.paths.catalog_path) as catalog:
        rows = catalog.execute("SELECT paper_id, registered_at FROM papers").fetchall()
        for paper_id, stamp in rows:
            when = datetime.fromisoformat(stamp)
            if when >= since:
                earlier = (when - timedelta(days=days)).isoformat(timespec="microseconds")
                catalog.execute(
                    "UPDATE papers SET registered_at = ? WHERE paper_id = ?", (earlier, paper_id)
                )
                moved += 1
    for asset in ("relationship_analysis", "synthesis"):
        for path in synthesis_history.entries(home, COLLECTION, asset):
            entry = synthesis_history.read(path)
            when = datetime.fromisoformat(entry.recorded_at)
            if when < since:
                continue
            earlier = when - timedelta(days=days)
            kept = entry.model_copy(
                update={"recorded_at": earlier.isoformat(timespec="microseconds")}
            )
            target = path.with_name(synthesis_history.file_name(earlier, entry.data_version))
            target.write_text(kept.model_dump_json(), encoding="utf-8")
            path.unlink()
            moved += 1
    return moved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--papers", type=int, default=1000)
    parser.add_argument("--added", type=int, default=50)
    parser.add_argument(
        "--keep", type=Path, help="work in this new folder and keep it (default: a temporary one)"
    )
    args = parser.parse_args()
    rows = read_abstracts(args.corpus)
    if len(rows) < args.papers + args.added:
        print(f"{args.corpus}: {len(rows)} abstracts, fewer than asked", file=sys.stderr)
        return 2
    if args.keep is not None:
        args.keep.mkdir(parents=True)
    compileall.compile_dir(ROOT / "litpipe", quiet=1)
    with tempfile.TemporaryDirectory(prefix="litpipe-nightly-") as scratch:
        folder = args.keep or Path(scratch)
        home = folder / "home"
        table = folder / f"{COLLECTION}.csv"
        write_table(table, rows[: args.papers])
        started = datetime.now(UTC)
        night_1, _ = litpipe("run", str(table), "--home", str(home))
        print(f"night 1: {args.papers} abstracts in {night_1.wall_s:.1f} s", file=sys.stderr)
        move_back(home, started, days=2)

        write_table(table, rows[: args.papers + args.added])
        started = datetime.now(UTC)
        night_2, _ = litpipe("run", str(table), "--home", str(home))
        print(f"night 2: {args.added} added, run in {night_2.wall_s:.1f} s", file=sys.stderr)
        move_back(home, started, days=1)

        diff, printed = litpipe("diff", COLLECTION, "--home", str(home))
        counts = json.loads(printed.strip().splitlines()[-1]) if diff.exit_code == 0 else {}
        _, work = timed([sys.executable, "-c", DIFF_WORK, str(home), COLLECTION])
        diff_compute = json.loads(work.strip().splitlines()[-1])["seconds"]
        print(
            f"litpipe diff: {diff.wall_s:.1f} s ({diff_compute:.2f} s computing)", file=sys.stderr
        )

        day = (date.today() - timedelta(days=1)).isoformat()
        digest, printed = timed([sys.executable, "-c", DIGEST, str(home), day])
        made = json.loads(printed.strip().splitlines()[-1]) if digest.exit_code == 0 else {}
        print(
            f"digest of {day}: {digest.wall_s:.1f} s ({made.get('seconds', 0):.2f} s running)",
            file=sys.stderr,
        )
    share = (diff.wall_s + digest.wall_s) / night_2.wall_s
    work_share = (diff_compute + made.get("seconds", 0.0)) / night_2.wall_s
    figures = Figures(
        papers=args.papers,
        added=args.added,
        night_1=night_1,
        night_2=night_2,
        diff=diff,
        diff_compute_s=round(diff_compute, 3),
        diff_counts=counts,
        digest=digest,
        digest_run_s=round(made.get("seconds", 0.0), 2),
        digest_papers=made.get("papers", 0),
        digest_relationships=made.get("relationships", 0),
        diff_and_digest_share_of_night=round(share, 4),
        diff_and_digest_work_share_of_night=round(work_share, 4),
        under_ten_percent=share < 0.10,
        machine=f"{platform.machine()}, {os.cpu_count()} cores",
    )
    print(
        f"night 2 ran {night_2.wall_s:.1f} s; diff {diff.wall_s:.1f} s + digest "
        f"{digest.wall_s:.1f} s = {share:.1%} of it ({work_share:.1%} counting only their work)"
    )
    print(figures.model_dump_json())
    ok = all(step.exit_code == 0 for step in (night_1, night_2, diff, digest))
    return 0 if ok and made.get("success") else 1


if __name__ == "__main__":
    sys.exit(main())
