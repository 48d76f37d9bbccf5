"""What writing a batch's asset events together saves: one run over a range of N partitions of
A partitioned assets (each adds per-partition metadata, as litpipe's per-paper assets do), into
a fresh SQLite instance with Dagster's own event log storage, then with litpipe's
`BatchingSqliteEventLogStorage` (and `DAGSTER_EVENT_BATCH_SIZE`, which litpipe sets), the two
alternating over `--repeat` rounds in one process. Prints each side's median wall seconds and
milliseconds per materialization, and the ratio.

Usage: python benchmarks/event_storage.py [--partitions 200] [--assets 4] [--repeat 3]
Prints readable lines, then one JSON object as the last line.
"""

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import dagster as dg

from litpipe.instance.sqlite_storage import EVENT_BATCH_SIZE
from litpipe.runtime.execution import RANGE_END_TAG, RANGE_START_TAG
from litpipe.runtime.instance import managed_config
from litpipe.settings import Settings

PARTITIONS = dg.DynamicPartitionsDefinition(name="papers")


def definitions(assets: int, partitions: int) -> dg.Definitions:
    def build(number: int) -> dg.AssetsDefinition:
        @dg.asset(
            name=f"stage{number}",
            partitions_def=PARTITIONS,
            deps=[f"stage{number - 1}"] if number else [],
            backfill_policy=dg.BackfillPolicy.multi_run(partitions),
        )
        def stage(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
            for key in context.partition_keys:
                context.add_asset_metadata({"chunks": len(key)}, partition_key=key)
            return dg.MaterializeResult()

        return stage

    job = dg.define_asset_job("papers", selection=dg.AssetSelection.all())
    return dg.Definitions(assets=[build(n) for n in range(assets)], jobs=[job])


def one_run(batched: bool, assets: int, partitions: int) -> float:
    """Seconds of one range run over every partition, into a fresh instance."""
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        quiet = "telemetry:\n  enabled: false\n"
        settings = Settings(dagster_home=home)
        config = managed_config(settings.llm, settings.paths) if batched else quiet
        (home / "dagster.yaml").write_text(config)
        if batched:
            os.environ["DAGSTER_EVENT_BATCH_SIZE"] = EVENT_BATCH_SIZE
        else:
            os.environ.pop("DAGSTER_EVENT_BATCH_SIZE", None)
        instance = dg.DagsterInstance.from_config(str(home))
        keys = [f"paper{number:05d}" for number in range(partitions)]
        instance.add_dynamic_partitions(PARTITIONS.name or "", keys)
        job = definitions(assets, partitions).resolve_job_def("papers")
        started = time.perf_counter()
        result = job.execute_in_process(
            instance=instance, tags={RANGE_START_TAG: keys[0], RANGE_END_TAG: keys[-1]}
        )
        seconds = time.perf_counter() - started
        assert result.success
        return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--assets", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"dagster": [], "litpipe": []}
    for round_number in range(args.repeat):
        order = ["dagster", "litpipe"] if round_number % 2 == 0 else ["litpipe", "dagster"]
        for side in order:
            times[side].append(one_run(side == "litpipe", args.assets, args.partitions))
    materializations = args.assets * args.partitions
    figures = {
        side: {
            "seconds": round(statistics.median(values), 2),
            "ms_per_materialization": round(statistics.median(values) / materializations * 1e3, 2),
        }
        for side, values in times.items()
    }
    ratio = figures["dagster"]["seconds"] / figures["litpipe"]["seconds"]
    for side, values in figures.items():
        print(
            f"{side:8} {values['seconds']:7.2f} s for {materializations} materializations "
            f"({values['ms_per_materialization']} ms each)"
        )
    print(f"litpipe's storage is {ratio:.1f}x as fast")
    print(
        json.dumps(
            {
                "partitions": args.partitions,
                "assets": args.assets,
                "repeat": args.repeat,
                **figures,
                "speedup": round(ratio, 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
